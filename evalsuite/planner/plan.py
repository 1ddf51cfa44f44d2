"""The planner's records: what a plan is asked (:class:`PlanRequest`) and what it answers (:class:`Plan`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.planner.capacity import Capacity, GpuCap, format_bytes
from evalsuite.planner.memory import Budget, ModelShape
from evalsuite.planner.speed import SPEED, SpeedModel
from evalsuite.records import SamplingParams


@dataclass(frozen=True)
class Rejection:
    strategy: str
    reason: str


@dataclass
class Plan:
    """How one model will be loaded, and why; recorded in the run record via :meth:`to_json`."""

    model: str
    model_id: str
    strategy: str
    forced: bool
    fits: bool
    dtype: str  # weights as loaded: "bfloat16", "float16", "float32", "int8", "nf4"
    weight_bytes: int
    shape: ModelShape
    budget: Budget
    capacity: Capacity
    device_map_summary: dict[str, str]
    est_step_s: float
    gpu_step_s: float  # the same model whole on one GPU, for the speed class
    config_origin: str = ""
    no_split_module_classes: tuple[str, ...] = ()
    device_map: dict[str, Any] | None = None
    offload_to: str | None = None  # "cpu" or "disk"/"nvme" for offloading strategies
    batch_limit: int | None = None  # widest batch the loaded model may generate (a runtime's own limit)
    engine_room: bool = True  # whether the sampling engine's workspace fits beside weights and cache
    sampling_engine: bool = False  # whether the sampling engine decodes this plan (whole GPU, a family it covers)
    rejected: list[Rejection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu_cap: GpuCap | None = None  # the --gpu-memory cap in force for this model's load, released with it
    strategy_summary: str = ""  # the strategy's one line, for render

    @property
    def main_gpu(self) -> int:
        """The GPU (CUDA index) that receives the inputs and holds the embeddings: the largest one."""
        gpus = self.capacity.gpus
        return self.capacity.gpu_id(gpus.index(max(gpus))) if gpus else 0

    @property
    def relative_speed(self) -> float:
        return self.gpu_step_s / self.est_step_s if self.est_step_s else 0.0

    @property
    def speed_class(self) -> str:
        r = self.relative_speed
        if r >= 0.8:
            label = "whole-GPU speed" if r < 1.25 else "faster than whole-GPU"
        elif r >= 0.3:
            label = "moderately slower than whole-GPU"
        elif r >= 0.05:
            label = "offload-bound, an order of magnitude slower"
        else:
            label = "orders of magnitude slower"
        return f"{r:.2g}x of whole-GPU ({label})"

    @property
    def est_ms_per_token(self) -> float:
        return 1000 * self.est_step_s / max(self.budget.batch_size, 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "model_id": self.model_id, "strategy": self.strategy, "forced": self.forced,
            "fits": self.fits, "dtype": self.dtype, "weight_bytes": self.weight_bytes,
            "num_params": self.shape.num_params, "bytes_per_precision": self.shape.bytes_per_precision(),
            "shape": self.shape.to_json(), "budget": self.budget.to_json(), "capacity": self.capacity.to_json(),
            "device_map_summary": self.device_map_summary, "device_map": self.device_map,
            "offload_to": self.offload_to, "batch_limit": self.batch_limit, "engine_room": self.engine_room,
            "sampling_engine": self.sampling_engine, "est_step_s": _finite(self.est_step_s),
            "est_ms_per_token": _finite(self.est_ms_per_token), "relative_speed": _finite(self.relative_speed),
            "speed_class": self.speed_class if self.fits else None, "config_origin": self.config_origin,
            "no_split_module_classes": list(self.no_split_module_classes),
            "rejected": [asdict(r) for r in self.rejected], "notes": list(self.notes),
        }

    def render(self) -> str:
        """The human-readable plan `evalsuite plan` prints."""
        s, b = self.shape, self.budget
        per = ", ".join(f"{k} {format_bytes(v)}" for k, v in s.bytes_per_precision().items())
        lines = [
            f"{self.model}  ({self.model_id}; config: {self.config_origin})",
            f"  parameters      {s.num_params / 1e9:.2f} B ({s.model_type}, {s.num_blocks} x {s.block_class}, "
            f"checkpoint {s.checkpoint_dtype or '?'}" + (f", {format_bytes(s.checkpoint_bytes)} on disk)"
                                                        if s.checkpoint_bytes else ")"),
            f"  weights         {per}",
            f"  KV cache        {format_bytes(s.kv_bytes_per_token())}/token x batch {b.batch_size} x "
            f"{b.seq_len} tokens = {format_bytes(b.kv_cache)}",
            f"  activations     {format_bytes(b.activations)} (prefill of {b.prompt_len} tokens) + margin "
            f"{format_bytes(b.margin)}",
            f"  capacity        {self.capacity.describe()}",
        ]
        verdict = "forced" if self.forced else "chosen"
        if not self.fits:
            verdict += ", DOES NOT FIT"
        lines.append(f"  strategy        {self.strategy} ({verdict}): {self.strategy_summary}; "
                     f"weights {self.dtype}, {format_bytes(self.weight_bytes)}")
        lines.append("  device map      " + "; ".join(f"{k}: {v}" for k, v in self.device_map_summary.items()))
        if self.fits and not self.capacity.gpus:
            cores = self.capacity.cpu_cores or "?"
            lines.append(f"  expected speed  roughly {1000 / self.est_ms_per_token:.3g} tokens/s at batch "
                         f"{b.batch_size} "
                         f"on {cores} CPU cores (~{self.est_step_s:.3g} s per decoding step; a rough estimate, "
                         "within ~3x: other jobs and thread settings move it)")
        elif self.fits:
            lines.append(f"  expected speed  {self.speed_class}; ~{self.est_step_s:.3g} s per decoding step "
                         f"(~{self.est_ms_per_token:.3g} ms per generated token at batch {b.batch_size})")
            steps = math.ceil(HUMANEVAL_PROMPTS / b.batch_size) * HUMANEVAL_NEW_TOKENS
            lines.append(f"  one HumanEval   ~{_duration(steps * self.est_step_s)} for {HUMANEVAL_PROMPTS} prompts x "
                         f"{HUMANEVAL_NEW_TOKENS} new tokens at batch {b.batch_size} (upper bound: no early stop)")
        for rejection in self.rejected:
            lines.append(f"  not {rejection.strategy:<15} {rejection.reason}")
        for note in self.notes:
            lines.append(f"  note            {note}")
        return "\n".join(lines)


HUMANEVAL_PROMPTS, HUMANEVAL_NEW_TOKENS = 164, SamplingParams().max_new_tokens  # a default run's budget


def _finite(value: float) -> float | None:
    """JSON has no infinity: an unfit plan's speed is recorded as null."""
    return value if math.isfinite(value) else None


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


@dataclass(frozen=True)
class PlanRequest:
    """Everything the choice depends on; the loaders and `plan` build it the same way."""

    model: str
    model_id: str
    shape: ModelShape
    capacity: Capacity
    batch_size: int = 8  # the batch the user asked for; the plan may lower it so the KV cache fits
    seq_len: int = 1024  # prompt + new tokens per sequence
    prompt_len: int = 512
    # what the GPU rungs load the weights in: bfloat16, float16 on GPUs without bf16 (V100), or the user's
    # --dtype (float32 included: a float32 run is planned, and placed, at float32's size)
    gpu_dtype: str = "bfloat16"
    config_origin: str = ""
    no_split_module_classes: tuple[str, ...] = ()
    meta_model: Any = None  # the model on the meta device, for accelerate's device maps
    installed: Mapping[str, bool] | None = None
    speed: SpeedModel = SPEED

