"""How much memory the planner may use: GPUs, CPU RAM and offload disk, detected or given by the user.

Sizes are parsed from strings such as ``16GiB`` (binary) or ``16GB`` (decimal) because users copy them
from ``nvidia-smi`` and marketing sheets alike; the planner works in bytes throughout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.devices import usable_cores
from evalsuite.errors import EvalsuiteError
from evalsuite.sizes import GiB, format_bytes, parse_size  # noqa: F401 - the planner's names for them

HELD_BY_OTHERS = 2 * GiB  # a GPU with more than this in use when the plan is made: held by other processes (a
# CUDA context alone is ~0.5 GiB)


@dataclass(frozen=True)
class Capacity:
    """Memory the planner may place a model in. ``gpus`` holds the usable bytes of each GPU; ``gpu_ids`` the
    CUDA index of each entry where they are not 0, 1, ... (a process pinned to one GPU, such as a data-parallel
    rank, plans with its own GPU alone)."""

    gpus: tuple[int, ...] = ()
    gpu_ids: tuple[int, ...] = ()
    cpu: int = 0
    disk: int | None = None  # free bytes under offload_dir; None when no offload dir was given
    offload_dir: str | None = None
    gpu_cap: int | None = None  # the user's --gpu-memory, enforced at load time
    gpu_names: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    cpu_cores: int = 0  # cores torch may use here (0: unknown); CPU-only speed scales with them
    # bytes of each GPU that something else holds (another run, a notebook): a slow plan's warning names them
    gpus_held: tuple[int, ...] = ()

    def gpu_id(self, position: int) -> int:
        """The CUDA index of ``gpus[position]``."""
        return self.gpu_ids[position] if self.gpu_ids else position

    def describe(self) -> str:
        if self.gpus:
            gpus = ", ".join(f"{format_bytes(g)}" for g in self.gpus)
            gpu_part = f"{len(self.gpus)} GPU ({gpus}{' capped' if self.gpu_cap else ''})"
        else:
            gpu_part = "no GPU"
        disk = f", offload disk {format_bytes(self.disk)} free at {self.offload_dir}" if self.offload_dir else ""
        return f"{gpu_part}, CPU RAM {format_bytes(self.cpu)}{disk}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["gpus"] = list(self.gpus)
        data["gpu_ids"] = [self.gpu_id(i) for i in range(len(self.gpus))]
        data["gpu_names"] = list(self.gpu_names)
        data["notes"] = list(self.notes)
        return data


def _available_ram() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return 0


def _detect_gpus(only: int | None = None) -> tuple[list[int], list[int], list[str]]:
    """(free bytes, total bytes, names) of each visible CUDA GPU, or of GPU ``only`` alone (reading a GPU's
    free memory starts a CUDA context on it, ~0.5 GiB that a rank pinned elsewhere must not take); empty
    without torch or CUDA."""
    try:
        import torch
    except ImportError:
        return [], [], []
    if not torch.cuda.is_available():
        return [], [], []
    free, total, names = [], [], []
    for index in range(torch.cuda.device_count()) if only is None else (only,):
        f, t = torch.cuda.mem_get_info(index)
        free.append(int(f))
        total.append(int(t))
        names.append(torch.cuda.get_device_name(index))
    return free, total, names


def _reserved_here(index: int) -> int:
    """Bytes torch's allocator in this process keeps on GPU ``index``."""
    try:
        import torch

        return int(torch.cuda.memory_reserved(index)) if torch.cuda.is_initialized() else 0
    except Exception:  # noqa: BLE001 - no torch, no CUDA: nothing held here
        return 0


def detect_capacity(gpu_memory: str | int | None = None, cpu_memory: str | int | None = None,
                    offload_dir: str | None = None, num_gpus: int | None = None, only_gpu: int | None = None
                    ) -> Capacity:
    """The machine's capacity, each GPU capped at ``gpu_memory`` and RAM at ``cpu_memory``; with ``only_gpu``
    (``--device cuda:N``, a torchrun rank's own GPU) that GPU alone, so two ranks that start together never
    plan onto the same GPU for having seen it the freest.

    ``num_gpus`` plans for a machine other than this one: that many GPUs of ``gpu_memory`` each, so
    ``evalsuite plan --gpus 1 --gpu-memory 16GiB`` answers for a V100 from a laptop.
    """
    cap = parse_size(gpu_memory, "--gpu-memory")
    notes: list[str] = []
    held: list[int] = []  # per detected GPU: bytes other processes hold (0 below HELD_BY_OTHERS)
    if num_gpus is not None:
        if num_gpus < 0:
            raise EvalsuiteError(f"--gpus must be >= 0, got {num_gpus}")
        if num_gpus and cap is None:
            raise EvalsuiteError("--gpus N plans for another machine and needs --gpu-memory for each GPU's size")
        gpus, names = [int(cap or 0)] * num_gpus, ["planned"] * num_gpus
        notes.append(f"planned for {num_gpus} GPU(s) of {format_bytes(cap)} (not detected)")
    else:
        free, total, names = _detect_gpus(only_gpu)
        if only_gpu is not None and free:
            notes.append(f"GPU {only_gpu} alone (--device cuda:{only_gpu}): the others are left to other processes")
        if cap and not free:
            raise EvalsuiteError("--gpu-memory caps this machine's GPUs and it has none; to plan for another "
                                 "machine, add --gpus N (N GPUs of that size)")
        gpus = [min(f, cap) if cap else f for f in free]
        for position, (f, t) in enumerate(zip(free, total)):
            index = only_gpu if only_gpu is not None else position
            taken = t - f - _reserved_here(index)  # what this process holds (an earlier model's cache) is not theirs
            held.append(taken if taken >= HELD_BY_OTHERS else 0)
            if held[-1]:
                notes.append(f"GPU {index}: {format_bytes(taken)} of its {format_bytes(t)} held by other processes")
        if cap:
            for position, f in enumerate(free):
                index = only_gpu if only_gpu is not None else position
                if cap > f:
                    notes.append(f"GPU {index}: --gpu-memory {format_bytes(cap)} exceeds its free "
                                 f"{format_bytes(f)}; planning with the free memory")
    ram = _available_ram()
    cpu = parse_size(cpu_memory, "--cpu-memory") or ram
    if cpu_memory and ram and cpu > ram:
        notes.append(f"--cpu-memory {format_bytes(cpu)} exceeds available RAM {format_bytes(ram)}")
    disk = None
    if offload_dir:
        probe = offload_dir
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe.rstrip("/")) or "/"
        disk = shutil.disk_usage(probe or tempfile.gettempdir()).free
    gpu_ids = (only_gpu,) if only_gpu is not None and gpus else ()
    return Capacity(gpus=tuple(gpus), gpu_ids=gpu_ids, cpu=cpu, disk=disk, offload_dir=offload_dir, gpu_cap=cap,
                    gpu_names=tuple(names), notes=tuple(notes), cpu_cores=cpu_cores(),
                    gpus_held=tuple(held) if any(held) else ())


def cpu_cores() -> int:
    """Cores this process may run on, capped by ``OMP_NUM_THREADS`` when set (torch's thread count)."""
    cores = usable_cores()
    threads = os.environ.get("OMP_NUM_THREADS", "")
    return min(cores, int(threads)) if threads.isdigit() and int(threads) > 0 else cores


@dataclass(frozen=True)
class GpuCap:
    """``--gpu-memory`` made binding for one model's lifetime. PyTorch's allocator cap is per process, so the
    handle remembers what each GPU's fraction was before and :meth:`release` puts it back when the model is
    closed (or its load failed): the next model of a command plans and loads as if it were alone. Whoever
    sizes a workspace reads the cap from here (``cap_bytes``), never back from PyTorch."""

    cap_bytes: int
    previous: tuple[tuple[int, float], ...]  # (CUDA index, allocator fraction before this cap) of each capped GPU
    notes: tuple[str, ...] = ()

    def release(self) -> None:
        import torch

        if not torch.cuda.is_initialized():  # a forked child, or CUDA never started: nothing to undo
            return
        for index, fraction in self.previous:
            torch.cuda.set_per_process_memory_fraction(fraction, index)


def enforce_gpu_cap(cap_bytes: int | None, indices: Sequence[int] | None = None) -> GpuCap | None:
    """Make ``--gpu-memory`` binding: PyTorch's allocator refuses to grow past it on each GPU of ``indices``
    (default every GPU; a process pinned to one GPU caps that one, since capping a GPU starts a CUDA context
    on it), until the returned handle is released.

    This is how a 16 GB V100 is emulated on an 80 GB card; the CUDA context itself (a few hundred MiB)
    is outside the allocator and not counted, as on the real card.
    """
    if not cap_bytes:
        return None
    import torch

    notes, previous = [], []
    for index in range(torch.cuda.device_count()) if indices is None else indices:
        total = torch.cuda.get_device_properties(index).total_memory
        fraction = min(1.0, cap_bytes / total)
        previous.append((index, torch.cuda.get_per_process_memory_fraction(index)))
        torch.cuda.set_per_process_memory_fraction(fraction, index)
        notes.append(f"GPU {index}: allocator capped at {format_bytes(cap_bytes)} "
                     f"({fraction:.3f} of {format_bytes(total)})")
    return GpuCap(cap_bytes, tuple(previous), tuple(notes))
