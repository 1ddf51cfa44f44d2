"""The loading ladder: strategies as data, and the choice among them.

Ladder order: one GPU in half precision -> several GPUs (accelerate device map, blocks never split) ->
bitsandbytes 8-bit -> 4-bit nf4 -> CPU offload (accelerate) / DeepSpeed ZeRO-Inference -> CPU only.
Every rung is sized at the largest batch whose KV cache fits next to its weights; of the rungs that fit,
the first in ladder order whose estimated time per generated token is within 20% of the fastest wins.
So the order decides between near-equals (numerics first), and measured speed decides the rest -- which
of the two offloaders, or nf4 over int8 (3.4x vs 1.6x slower than bf16 on the reference GPU).
DeepSpeed-Inference (kernel injection) is never chosen on its own: it is a fast path the user selects.

Speed estimates come from :class:`SpeedModel`, whose constants were measured on the reference GPU (see
docs/benchmarks.md, "Loading strategies"); they rank strategies and give honest orders of magnitude,
not promises.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.capacity import Capacity, GpuCap, format_bytes
from evalsuite.planner.memory import Budget, ModelShape, runtime_budget
from evalsuite.records import SamplingParams

GPU, MULTI_GPU, INT8, NF4 = "gpu", "multi-gpu", "int8", "nf4"
CPU_OFFLOAD, ZERO_INFERENCE, CPU, DS_INFERENCE = "cpu-offload", "zero-inference", "cpu", "ds-inference"


@dataclass(frozen=True)
class Strategy:
    name: str
    summary: str
    # "half": the GPU dtype (bf16/fp16, float32 when --dtype asks); "int8", "nf4"; "cpu": fp32 when it fits, else bf16
    precision: str
    needs_gpu: bool
    package: str | None = None  # import name of the optional dependency
    extra: str | None = None  # pip extra that installs it
    automatic: bool = True  # False: only when the user forces it


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy(GPU, "whole model on one GPU in half precision", "half", True),
    Strategy(MULTI_GPU, "layers spread over several GPUs (accelerate device map)", "half", True),
    Strategy(INT8, "bitsandbytes 8-bit weights on GPU", "int8", True, "bitsandbytes", "quant"),
    Strategy(NF4, "bitsandbytes 4-bit nf4 weights on GPU", "nf4", True, "bitsandbytes", "quant"),
    Strategy(CPU_OFFLOAD, "accelerate: what does not fit on the GPU stays in CPU RAM (or on disk) and is "
             "copied in layer by layer", "half", True),
    Strategy(ZERO_INFERENCE, "DeepSpeed ZeRO-Inference: all weights in pinned CPU RAM (or NVMe with "
             "--offload-dir), streamed to the GPU with prefetch", "half", True, "deepspeed", "deepspeed"),
    Strategy(CPU, "CPU only", "cpu", False),
    Strategy(DS_INFERENCE, "DeepSpeed-Inference: fused kernels on one GPU per process, batches of at most 4", "half",
             True, "deepspeed", "deepspeed", automatic=False),
)}
LADDER: tuple[str, ...] = (GPU, MULTI_GPU, INT8, NF4, CPU_OFFLOAD, ZERO_INFERENCE, CPU)
# Rungs that keep every weight on the GPU(s). When one fits, CPU-only is not a candidate: its estimate has
# no framework overhead per layer and the GPU rungs get the sampling engine, so on small models it would
# win on paper and lose in practice (a tiny model under a 1 GiB cap was planned onto the CPU).
ON_GPU: tuple[str, ...] = (GPU, MULTI_GPU, INT8, NF4)


@dataclass(frozen=True)
class SpeedModel:
    """Seconds per decoding step (one new token for every sequence of the batch), by strategy.

    Whole-GPU decoding of a 6-7B model in transformers is launch-bound, about 2 ms per layer per step on
    the reference GPU at any batch up to 32 (GPT-J-6B: 59 ms/step at batch 1, 49 ms at batch 32); large models turn
    bandwidth-bound. Offloaded strategies add the bytes streamed over PCIe (or read from disk) per step.
    """

    # Measured on the reference GPU (docs/benchmarks.md, "Loading strategies"; GPT-J-6B and BLOOM-7B1 shapes,
    # transformers 5.17, bitsandbytes 0.50.2, DeepSpeed 0.19.8) unless marked assumed.
    layer_step_s: float = 0.0014  # whole-GPU decode: 0.8-1.7 ms per layer per step, launch-bound
    hbm_bytes_per_s: float = 2.0e12  # assumed: where large models turn bandwidth-bound
    # multiplier on the whole-GPU step, at batch 1 and batch 32 (interpolated in log batch)
    int8_factor: tuple[float, float] = (3.3, 3.5)
    nf4_factor: tuple[float, float] = (1.5, 1.65)
    accelerate_cpu_bytes_per_s: float = 6.6e9  # accelerate's per-step host->device copies (6.1-7.2 GB/s)
    zero_cpu_bytes_per_s: float = 37.0e9  # ZeRO-3 pinned, prefetched parameter streaming (37-37.5 GB/s)
    disk_bytes_per_s: float = 2.0e9  # assumed: NVMe read
    # CPU-only decode, per core (it scales with the cores torch uses): measured on 16 cores of the reference GPU's host,
    # BLOOM-7B1 fp32 at batch 1, 28 GB in 0.41 s (69 GB/s), and at batch 32, 2 x params x batch in 4.8 s per step
    # (0.094 TFLOP/s); checked on the project's 2-core VM with SmolLM2-135M (33 tokens/s measured
    # where the 16-core constants said ~350). Rough: other jobs, thread counts and kernels move it ~2x.
    cpu_bytes_per_s_per_core: float = 69.0e9 / 16
    cpu_flops_per_core: float = 0.094e12 / 16
    # transformers' per-layer overhead per decoding step on CPU (Python, kernel launches), which bounds small
    # models: SmolLM2-135M's 30 layers at batch 1 on 2 cores (see docs/benchmarks.md)
    cpu_layer_step_s: float = 0.0012
    cpu_default_cores: int = 16  # when the cores are unknown (planning for another machine)
    # DeepSpeed-Inference kernels, GPT-J fp16: 12.9 ms/token at batch 1 vs ~43 for whole-GPU bf16, 2.99 at
    # batch 32 (generated in chunks of 4, its kernels fail at 8) vs ~1.4
    ds_inference_factor: tuple[float, float] = (0.3, 2.1)

    def cpu_step(self, weight_bytes: int, num_params: int, num_layers: int, batch: int, cores: int) -> float:
        """Seconds per decoding step on ``cores`` CPU cores: weight streaming, arithmetic or per-layer overhead,
        whichever bounds it (also the yardstick of the slow-run warning, evalsuite.progress)."""
        bytes_s = weight_bytes / (self.cpu_bytes_per_s_per_core * cores)
        compute_s = 2 * num_params * batch / (self.cpu_flops_per_core * cores)
        return max(bytes_s, compute_s, num_layers * self.cpu_layer_step_s)

    def gpu_step(self, shape: ModelShape, weight_bytes: int) -> float:
        return max(shape.num_layers * self.layer_step_s, weight_bytes / self.hbm_bytes_per_s)

    @staticmethod
    def batch_factor(pair: tuple[float, float], batch: int) -> float:
        t = min(1.0, max(0.0, math.log(max(batch, 1)) / math.log(32)))
        return pair[0] + (pair[1] - pair[0]) * t


SPEED = SpeedModel()

# Families DeepSpeed-Inference's kernel injection refuses with the transformers this project needs (>= 5):
# seen on the reference GPU with DeepSpeed 0.19.8, before any kernel was built.
DS_INFERENCE_REFUSED_FAMILIES = {
    "bloom": "DeepSpeed refuses BLOOM kernel injection after transformers 4.43.4 ('BLOOM inference with "
             "DeepSpeed is no longer supported'); use gpu, multi-gpu or zero-inference",
}


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

    @property
    def main_gpu(self) -> int:
        """The GPU that receives the inputs and holds the embeddings: the largest one."""
        gpus = self.capacity.gpus
        return gpus.index(max(gpus)) if gpus else 0

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
        lines.append(f"  strategy        {self.strategy} ({verdict}): {STRATEGIES[self.strategy].summary}; "
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


def installed_packages() -> dict[str, bool]:
    """Which optional loaders can run here (found without importing them: planning stays fast)."""
    return {name: importlib.util.find_spec(name) is not None for name in ("bitsandbytes", "deepspeed")}


def _cpu_room(capacity: Capacity) -> int:
    """RAM the weights may use: the rest is the Python process, tokenizer, sandbox workers."""
    return int(capacity.cpu * 0.85)


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


class _Ladder:
    """Evaluates one rung at a time; each method returns a Plan or raises _NoFit(reason)."""

    def __init__(self, request: PlanRequest, batch_size: int | None = None):
        self.r = request
        self.shape = request.shape
        self.cap = request.capacity
        self.budget = runtime_budget(request.shape, batch_size or request.batch_size, request.seq_len,
                                     request.prompt_len)
        self.installed = request.installed if request.installed is not None else installed_packages()
        self.gpu_bytes = self.shape.weight_bytes(request.gpu_dtype)
        self.gpu_step = request.speed.gpu_step(self.shape, self.gpu_bytes)

    # -- helpers -------------------------------------------------------------------------------------
    def _plan(self, strategy: str, dtype: str, weight_bytes: int, device_summary: dict[str, str], step: float,
              **extra: Any) -> Plan:
        return Plan(model=self.r.model, model_id=self.r.model_id, strategy=strategy, forced=False, fits=True,
                    dtype=dtype, weight_bytes=weight_bytes, shape=self.shape, budget=self.budget,
                    capacity=self.cap, device_map_summary=device_summary, est_step_s=step,
                    gpu_step_s=self.gpu_step, config_origin=self.r.config_origin,
                    no_split_module_classes=self.r.no_split_module_classes, **extra)

    def _room(self, gpu_bytes: int, share: float = 1.0) -> int:
        """Bytes left for weights on a GPU after its share of the KV cache, activations and margin."""
        return gpu_bytes - int(self.budget.kv_cache * share) - self.budget.activations - self.budget.margin

    def _require(self, strategy: Strategy) -> None:
        if strategy.needs_gpu and not self.cap.gpus:
            raise _NoFit("no GPU")
        if strategy.package and not self.installed.get(strategy.package, False):
            raise _NoFit(f"{strategy.package} is not installed (pip install 'evalsuite[{strategy.extra}]')")

    def _single_gpu(self, name: str, dtype: str, weight_bytes: int, step: float) -> Plan:
        room = self._room(max(self.cap.gpus))
        if weight_bytes > room:
            raise _NoFit(f"{format_bytes(weight_bytes)} of {dtype} weights > {format_bytes(room)} free on one GPU "
                         f"({format_bytes(max(self.cap.gpus))} - {format_bytes(self.budget.total)} budget)")
        plan = self._plan(name, dtype, weight_bytes, {}, step)
        engine = engine_workspace_bytes(self.shape, self.budget.batch_size, weight_bytes) if name == GPU else 0
        if engine and weight_bytes > room - engine:
            plan.engine_room = False
            plan.notes.append(f"no room for the sampling engine's workspace ({format_bytes(engine)} at batch "
                              f"{self.budget.batch_size}, {format_bytes(room - weight_bytes)} left): plain "
                              "transformers generate decodes")
        elif engine:
            plan.sampling_engine = True
            plan.notes.append(f"the budget leaves room for the sampling engine's workspace ({format_bytes(engine)} "
                              f"at batch {self.budget.batch_size})")
        index = plan.main_gpu
        plan.device_map_summary = {f"cuda:{index}": f"all {self.shape.num_blocks} blocks, {format_bytes(weight_bytes)}"}
        plan.device_map = {"": index}
        return plan

    # -- rungs ---------------------------------------------------------------------------------------
    def gpu(self) -> Plan:
        self._require(STRATEGIES[GPU])
        return self._single_gpu(GPU, self.r.gpu_dtype, self.gpu_bytes, self.gpu_step)

    def multi_gpu(self) -> Plan:
        self._require(STRATEGIES[MULTI_GPU])
        n = len(self.cap.gpus)
        if n < 2:
            raise _NoFit("only one GPU")
        rooms = [self._room(g, 1 / n) for g in self.cap.gpus]
        slack = (n - 1) * self.shape.block_params * 2  # a block never splits: up to one block lost per seam
        if self.gpu_bytes > sum(rooms) - slack:
            raise _NoFit(f"{format_bytes(self.gpu_bytes)} of weights > {format_bytes(sum(rooms) - slack)} free on "
                         f"{n} GPUs after the budget")
        device_map, summary = self._device_map({i: room for i, room in enumerate(rooms)}, balanced=True)
        if device_map is not None and any(d in ("cpu", "disk") for d in device_map.values()):
            raise _NoFit("accelerate's device map spills to CPU: the GPUs are too full once blocks stay whole")
        summary = summary or {f"cuda:{i}": f"~{format_bytes(self.gpu_bytes / n)}" for i in range(n)}
        return self._plan(MULTI_GPU, self.r.gpu_dtype, self.gpu_bytes, summary, self.gpu_step,
                          device_map=device_map)

    def _quantized(self, name: str, pair: tuple[float, float]) -> Plan:
        self._require(STRATEGIES[name])
        weight_bytes = self.shape.weight_bytes(name)
        step = self.gpu_step * self.r.speed.batch_factor(pair, self.budget.batch_size)
        return self._single_gpu(name, name, weight_bytes, step)

    def int8(self) -> Plan:
        return self._quantized(INT8, self.r.speed.int8_factor)

    def nf4(self) -> Plan:
        return self._quantized(NF4, self.r.speed.nf4_factor)

    def cpu_offload(self) -> Plan:
        self._require(STRATEGIES[CPU_OFFLOAD])
        index = self.cap.gpus.index(max(self.cap.gpus))
        gpu_room = self._room(self.cap.gpus[index])
        cpu_room = _cpu_room(self.cap)
        if gpu_room < 2 * self.shape.block_params * 2:
            raise _NoFit(f"{format_bytes(gpu_room)} left on the GPU after the budget; offloading needs room for "
                         f"at least two blocks ({format_bytes(4 * self.shape.block_params)})")
        max_memory: dict[Any, int] = {index: gpu_room, "cpu": cpu_room}
        disk_room = int(self.cap.disk * 0.95) if self.cap.disk else 0
        if self.cap.offload_dir:
            max_memory["disk"] = disk_room
        # The GPU part, capped by room; the rest CPU, then disk: the same greedy order accelerate uses.
        on_gpu = min(self.gpu_bytes, gpu_room - self.shape.block_params * 2)
        rest = self.gpu_bytes - on_gpu
        on_cpu = min(rest, cpu_room)
        on_disk = rest - on_cpu
        if on_disk > disk_room:
            where = (f"disk {format_bytes(disk_room)} free at {self.cap.offload_dir}" if self.cap.offload_dir
                     else "no --offload-dir for disk offload")
            raise _NoFit(f"{format_bytes(self.gpu_bytes)} of weights > GPU {format_bytes(on_gpu)} + CPU RAM "
                         f"{format_bytes(cpu_room)} + {where}")
        device_map, summary = self._device_map(max_memory)
        if device_map is not None:
            sizes = self._placed_bytes(device_map)
            on_cpu, on_disk = sizes.get("cpu", 0), sizes.get("disk", 0)
        summary = summary or {f"cuda:{index}": format_bytes(on_gpu), "cpu": format_bytes(on_cpu),
                              **({"disk": format_bytes(on_disk)} if on_disk else {})}
        speed = self.r.speed
        step = self.gpu_step + on_cpu / speed.accelerate_cpu_bytes_per_s + on_disk / speed.disk_bytes_per_s
        if on_cpu == 0 and on_disk == 0:
            return self._plan(CPU_OFFLOAD, self.r.gpu_dtype, self.gpu_bytes, summary, step,
                              device_map=device_map, offload_to=None,
                              notes=["everything fits on the GPU: nothing is offloaded"])
        return self._plan(CPU_OFFLOAD, self.r.gpu_dtype, self.gpu_bytes, summary, step, device_map=device_map,
                          offload_to="disk" if on_disk else "cpu")

    def zero_inference(self) -> Plan:
        self._require(STRATEGIES[ZERO_INFERENCE])
        gpu_room = self._room(max(self.cap.gpus))
        # ZeRO-3 gathers one submodule's parameters at a time (plus a prefetched one): the working set is the
        # larger of two blocks and the embeddings/head outside them with one block.
        working_set = 2 * max(2 * self.shape.block_params, self.shape.outside_blocks_params + self.shape.block_params)
        if gpu_room < working_set:
            raise _NoFit(f"the GPU's working set (two blocks or the embeddings, {format_bytes(working_set)}) > "
                         f"{format_bytes(gpu_room)} left after the budget")
        cpu_room = _cpu_room(self.cap)
        speed = self.r.speed
        if self.gpu_bytes <= cpu_room:
            where, rate = "cpu", speed.zero_cpu_bytes_per_s
        elif self.cap.offload_dir and self.gpu_bytes <= (self.cap.disk or 0) * 0.95:
            where, rate = "nvme", speed.disk_bytes_per_s
        else:
            disk = (f"{format_bytes(self.cap.disk)} free at {self.cap.offload_dir}" if self.cap.offload_dir
                    else "no --offload-dir for NVMe offload")
            raise _NoFit(f"{format_bytes(self.gpu_bytes)} of weights > CPU RAM {format_bytes(cpu_room)}; {disk}")
        step = self.gpu_step + self.gpu_bytes / rate
        summary = {"cuda:0": f"working set ~{format_bytes(working_set)} (parameters fetched block by block)",
                   where: f"all {format_bytes(self.gpu_bytes)} "
                          f"({'pinned RAM' if where == 'cpu' else self.cap.offload_dir})"}
        return self._plan(ZERO_INFERENCE, self.r.gpu_dtype, self.gpu_bytes, summary, step, offload_to=where)

    def cpu(self) -> Plan:
        cpu_room = _cpu_room(self.cap) - self.budget.kv_cache * 2  # fp32 KV cache on CPU
        fp32 = self.shape.weight_bytes("float32")
        half = self.shape.weight_bytes("bfloat16")
        dtype, weight_bytes = ("float32", fp32) if fp32 <= cpu_room else ("bfloat16", half)
        speed = self.r.speed
        cores = self.cap.cpu_cores or speed.cpu_default_cores
        if weight_bytes <= cpu_room:
            step = speed.cpu_step(weight_bytes, self.shape.num_params, self.shape.num_layers,
                                  self.budget.batch_size, cores)
            return self._plan(CPU, dtype, weight_bytes, {"cpu": format_bytes(weight_bytes)}, step,
                              device_map={"": "cpu"})
        disk_room = int((self.cap.disk or 0) * 0.95)
        if not self.cap.offload_dir or weight_bytes > cpu_room + disk_room:
            where = (f" + disk {format_bytes(disk_room)} free at {self.cap.offload_dir}" if self.cap.offload_dir
                     else "")
            raise _NoFit(f"{format_bytes(weight_bytes)} of bf16 weights > {format_bytes(max(cpu_room, 0))} of usable "
                         f"CPU RAM (of {format_bytes(self.cap.cpu)}){where}")
        # Spill to disk: accelerate keeps the first blocks in RAM and memory-maps the rest from offload_dir.
        device_map, summary = self._device_map({"cpu": max(cpu_room, 0), "disk": disk_room}, dtype_name=dtype)
        on_disk = (self._placed_bytes(device_map, dtype).get("disk", 0) if device_map
                   else weight_bytes - cpu_room)
        summary = summary or {"cpu": format_bytes(weight_bytes - on_disk), "disk": format_bytes(on_disk)}
        step = speed.cpu_step(weight_bytes, self.shape.num_params, self.shape.num_layers, self.budget.batch_size,
                              cores) + on_disk / speed.disk_bytes_per_s
        return self._plan(CPU, dtype, weight_bytes, summary, step, device_map=device_map, offload_to="disk")

    def ds_inference(self) -> Plan:
        self._require(STRATEGIES[DS_INFERENCE])
        refusal = DS_INFERENCE_REFUSED_FAMILIES.get(self.shape.model_type)
        if refusal:
            raise _NoFit(refusal)
        # One GPU per process: tensor parallelism over several would need one process per GPU, and
        # evalsuite's processes are data-parallel replicas (torchrun), each with its own GPU.
        step = self.gpu_step * self.r.speed.batch_factor(self.r.speed.ds_inference_factor, self.budget.batch_size)
        return self._single_gpu(DS_INFERENCE, "float16", self.shape.weight_bytes("float16"), step)

    # -- accelerate's device map on the meta model ----------------------------------------------------
    def _device_map(self, max_memory: dict[Any, int], balanced: bool = False, dtype_name: str | None = None
                    ) -> tuple[dict[str, Any] | None, dict[str, str]]:
        """accelerate's device map within ``max_memory``; ``balanced`` spreads the blocks evenly over the
        GPUs (as ``device_map="balanced"``) instead of filling the first one before the next."""
        if self.r.meta_model is None:
            return None, {}
        import torch
        from accelerate.utils import get_balanced_memory, infer_auto_device_map

        dtype = getattr(torch, dtype_name or self.r.gpu_dtype)
        quiet = logging.getLogger("accelerate.utils.modeling")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # planning for GPUs this machine lacks is the point, not a mistake
        try:
            if balanced:
                max_memory = get_balanced_memory(self.r.meta_model, max_memory=dict(max_memory), dtype=dtype,
                                                 no_split_module_classes=list(self.r.no_split_module_classes))
            device_map = infer_auto_device_map(self.r.meta_model, max_memory=dict(max_memory),
                                               no_split_module_classes=list(self.r.no_split_module_classes),
                                               dtype=dtype)
        finally:
            quiet.setLevel(level)
        sizes = self._placed_bytes(device_map, dtype_name)
        counts: dict[str, int] = {}
        for device in device_map.values():
            counts[_device_name(device)] = counts.get(_device_name(device), 0) + 1
        summary = {name: f"{counts[name]} modules, {format_bytes(sizes.get(name, 0))}" for name in counts}
        return {k: v for k, v in device_map.items()}, summary

    def _placed_bytes(self, device_map: dict[str, Any], dtype_name: str | None = None) -> dict[str, int]:
        import torch
        from accelerate.utils import compute_module_sizes

        dtype = getattr(torch, dtype_name or self.r.gpu_dtype)
        module_sizes = compute_module_sizes(self.r.meta_model, dtype=dtype)
        placed: dict[str, int] = {}
        for name, device in device_map.items():
            placed[_device_name(device)] = placed.get(_device_name(device), 0) + module_sizes.get(name, 0)
        return placed


def _device_name(device: Any) -> str:
    return f"cuda:{device}" if isinstance(device, int) else str(device)


class _NoFit(Exception):
    pass


def engine_workspace_bytes(shape: ModelShape, batch: int, weight_bytes: int) -> int:
    """What the sampling engine needs beside weights and KV cache on a whole-GPU plan, for a family it covers
    (0 otherwise): per row the float32 logits and sampler scratch over the vocabulary, plus its margin
    (evalsuite/engine/engine.py ``Engine.workspace_bytes``). The prefill's activations are already in the
    runtime budget."""
    try:
        from evalsuite.engine.engine import workspace_margin_bytes
        from evalsuite.engine.models import layout_for_architecture
    except ImportError:  # no torch: nothing runs on a GPU anyway
        return 0
    if layout_for_architecture(shape.architecture) is None:
        return 0
    return batch * (shape.vocab_size * 48 + 64 * shape.hidden_size) + workspace_margin_bytes(weight_bytes)


def _attempt(ladder: _Ladder, name: str) -> Plan:
    return getattr(ladder, name.replace("-", "_"))()


def _batches(requested: int) -> list[int]:
    batches = [max(requested, 1)]
    while batches[-1] > 1:
        batches.append(batches[-1] // 2)
    return batches


TIE_MARGIN = 1.2  # a rung higher in the ladder (better numerics) wins unless a lower one is >20% faster
# How much faster the sampling engine decodes than transformers' generate at the batch the planner sizes, as
# the ladder ranks rungs (the estimates are plain generate's): its paged cache holds more rows than a padded
# batch, and its steps are CUDA graphs. The smallest measured on the reference GPU (docs/benchmarks.md): 2.3x
# (SmolLM2 float32 greedy; GPT-J under a 16 GiB cap 5.6x, realistic sampling 18-29x). Without it BLOOM-7B1
# under 16 GiB was planned nf4 (plain generate, 784 tok/s) over whole-GPU bf16 on the engine (1,172).
ENGINE_SPEEDUP = 2.0


def ranked_ms_per_token(plan: Plan) -> float:
    """The time per token the ladder compares rungs by: the estimate, less the engine's speed-up where it runs."""
    return plan.est_ms_per_token / (ENGINE_SPEEDUP if plan.sampling_engine else 1.0)


def _fit_largest_batch(request: PlanRequest, name: str) -> tuple[Plan | None, str]:
    """The rung at the largest batch <= the requested one that fits, or (None, why it fails at batch 1)."""
    first_reason = last_reason = ""
    for batch in _batches(request.batch_size):
        try:
            plan = _attempt(_Ladder(request, batch), name)
        except _NoFit as why:
            first_reason, last_reason = first_reason or str(why), str(why)
            if "not installed" in str(why) or str(why) in ("no GPU", "only one GPU"):
                return None, str(why)
            continue
        if name in (CPU_OFFLOAD, ZERO_INFERENCE) and plan.offload_to is None:
            return None, "nothing to offload: the weights fit on the GPU (force it with --strategy to compare)"
        if batch < request.batch_size:
            plan.notes.append(f"batch lowered from {request.batch_size} to {batch} so the KV cache fits "
                              f"(at batch {request.batch_size}: {first_reason})")
        return plan, ""
    return None, last_reason + " (even at batch 1)"


def choose_plan(request: PlanRequest, strategy: str | None = None) -> Plan:
    """The plan for ``request``: the forced ``strategy`` (marked ``fits=False`` if it does not fit), or the
    ladder's choice.

    Every rung is sized at the largest batch that fits (the KV cache shrinks with the batch). Among the
    rungs that fit, the first in ladder order whose estimated time per generated token is within 20% of
    the fastest wins: the ladder's order prefers numerics (bf16 over 8-bit over 4-bit, GPU over
    offload), the estimate keeps that preference from costing real speed. CPU-only competes only when
    every GPU rung would offload (see ``ON_GPU``). When nothing fits even at
    batch 1, EvalsuiteError gives every rung's numbers, before any download.
    """
    if strategy is not None:
        return _forced(request, strategy)
    candidates: list[Plan] = []
    rejected: list[Rejection] = []
    for name in LADDER:
        plan, why = _fit_largest_batch(request, name)
        if plan is None:
            rejected.append(Rejection(name, why))
        else:
            candidates.append(plan)
    if not candidates:
        half = request.shape.weight_bytes("bfloat16")
        detail = "; ".join(f"{r.strategy}: {r.reason}" for r in rejected)
        raise EvalsuiteError(
            f"{request.model} cannot run within {request.capacity.describe()} "
            f"({request.shape.num_params / 1e9:.1f}B parameters: {format_bytes(half)} in half precision, "
            f"{format_bytes(request.shape.weight_bytes('nf4'))} in nf4; runtime budget at batch 1 "
            f"{format_bytes(_Ladder(request, 1).budget.total)}): {detail}")
    if any(p.strategy in ON_GPU for p in candidates) and any(p.strategy == CPU for p in candidates):
        candidates = [p for p in candidates if p.strategy != CPU]
        rejected.append(Rejection(CPU, "the weights fit on the GPU: CPU-only decoding competes only with "
                                       "offloading (force it with --strategy cpu)"))
    fastest = min(ranked_ms_per_token(p) for p in candidates)
    chosen = next(p for p in candidates if ranked_ms_per_token(p) <= TIE_MARGIN * fastest)
    for plan in candidates:
        if plan is chosen:
            continue
        if ranked_ms_per_token(plan) > ranked_ms_per_token(chosen):
            verdict = "slower"
        elif LADDER.index(plan.strategy) < LADDER.index(chosen.strategy):
            verdict = f"more than 20% slower than {chosen.strategy}"
        else:
            verdict = f"not 20% faster, and the ladder prefers {chosen.strategy}"
        rejected.append(Rejection(plan.strategy, f"fits (batch {plan.budget.batch_size}, "
                                                 f"~{_ranked_text(plan)} ms/token vs "
                                                 f"~{_ranked_text(chosen)}): {verdict}"))
    chosen.rejected = sorted(rejected, key=lambda r: LADDER.index(r.strategy))
    return chosen


def _ranked_text(plan: Plan) -> str:
    return f"{ranked_ms_per_token(plan):.3g}" + (" on the sampling engine" if plan.sampling_engine else "")


def check_strategy(strategy: str) -> None:
    """``--strategy`` names a rung of the ladder (checked by preflight before loading, and here)."""
    if strategy not in STRATEGIES:
        raise EvalsuiteError(f"--strategy {strategy!r} is not one of: {', '.join(STRATEGIES)}")


def _forced(request: PlanRequest, strategy: str) -> Plan:
    check_strategy(strategy)
    plan = None
    reason = ""
    for batch in _batches(request.batch_size):
        ladder = _Ladder(request, batch)
        try:
            plan = _attempt(ladder, strategy)
        except _NoFit as why:
            reason = reason or str(why)
            continue
        if batch < request.batch_size:
            plan.notes.append(f"batch lowered from {request.batch_size} to {batch} so that the KV cache fits")
        break
    if plan is None:
        plan = _unfit_plan(_Ladder(request), strategy, reason)
    plan.forced = True
    plan.notes.insert(0, f"strategy forced with --strategy {strategy}" +
                      ("" if plan.fits else f"; it does not fit: {reason}"))
    return plan


def _unfit_plan(ladder: _Ladder, strategy: str, reason: str) -> Plan:
    precision = STRATEGIES[strategy].precision
    dtype = {"half": ladder.r.gpu_dtype, "cpu": "bfloat16"}.get(precision, precision)
    if strategy == DS_INFERENCE:
        dtype = "float16"  # its kernels are fp16-only
    weight_bytes = ladder.shape.weight_bytes(dtype if precision in ("half", "cpu") else precision)
    plan = ladder._plan(strategy, dtype, weight_bytes, {"-": "does not fit"}, float("inf"))
    plan.fits = False
    plan.rejected = [Rejection(strategy, reason)]
    return plan


def step_down(plan: Plan, request: PlanRequest, why: str) -> Plan:
    """The next rung below ``plan.strategy`` that fits: used when loading runs out of memory anyway."""
    ladder = _Ladder(request, plan.budget.batch_size)
    start = LADDER.index(plan.strategy) + 1 if plan.strategy in LADDER else len(LADDER)
    rejected = list(plan.rejected) + [Rejection(plan.strategy, why)]
    for name in LADDER[start:]:
        try:
            new = _attempt(ladder, name)
        except _NoFit as reason:
            rejected.append(Rejection(name, str(reason)))
            continue
        new.rejected = rejected
        new.notes = list(plan.notes) + [f"stepped down from {plan.strategy}: {why}"]
        return new
    raise EvalsuiteError(f"{plan.model}: {plan.strategy} ran out of memory while loading ({why}) and no lower "
                         f"rung fits: " + "; ".join(f"{r.strategy}: {r.reason}" for r in rejected))
