"""How a model's weights are loaded and placed: the flags ``run``, ``plan`` and ``models`` share.

Why one dataclass: the hf loader and the memory planner read exactly these; ``plan`` and ``models`` must
mean by ``--dtype`` what ``run`` means, so the flags are generated from these fields
(:mod:`evalsuite.cli.option_groups`) and never written again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from evalsuite.devices import parse_device
from evalsuite.flags import flag
from evalsuite.models.registry import DTYPES
from evalsuite.sizes import ByteSize

PLACEMENT = ("strategy", "gpu_memory", "cpu_memory", "offload_dir")  # the planner's fields


@dataclass(frozen=True)
class LoadingOptions:
    device: str | None = flag(None, "cpu, cuda, cuda:1", convert=parse_device,
                              default_text="cuda when available")
    dtype: str | None = flag(None, "weights' dtype", choices=DTYPES, unset=("auto",),
                             default_text="auto: float32 on CPU; on GPU the registry's, else bfloat16 (float16 on "
                                          "GPUs without it); a GGUF file on GPU: the registry's, else its declared "
                                          "dtype, else bfloat16")
    trust_remote_code: bool = flag(False, "run the model repository's own Python code (needed by some hub models)")
    revision: str | None = flag(None, "hub models: the branch, tag or commit to load or plan for; recorded in the "
                                      "run's identity; refused for local folders, GGUF files and the reference model",
                                default_text="the default branch")
    strategy: str | None = flag(None, "force one loading strategy by name (gpu, multi-gpu, int8, nf4, cpu-offload, "
                                      "zero-inference, cpu...; a name it does not know lists them all; see "
                                      "`evalsuite plan`)",
                                default_text="the planner's choice")
    gpu_memory: ByteSize | None = flag(None, "cap per GPU, e.g. 16GiB (enforced when loading; emulates a smaller "
                                             "card)", default_text="the whole card")
    cpu_memory: ByteSize | None = flag(None, "CPU RAM the model may use, e.g. 100GiB", default_text="available RAM")
    offload_dir: str | None = flag(None, "folder for disk/NVMe offload (enables those rungs)")

    def __post_init__(self) -> None:
        """Sizes parsed here, once, whoever builds the options (flags or the Python API): a bad one is refused
        before anything loads, and the planner reads the bytes (:class:`~evalsuite.sizes.ByteSize`)."""
        for name in ("gpu_memory", "cpu_memory"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, ByteSize(value, "--" + name.replace("_", "-")))

    @property
    def planned(self) -> bool:
        """Whether the user asked for placement, so the memory planner loads the model."""
        return any(getattr(self, name) for name in PLACEMENT)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
