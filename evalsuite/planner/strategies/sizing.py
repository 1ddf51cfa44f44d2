"""What every strategy sizes itself with: the runtime budget at one batch, the room left on each device, and
accelerate's device map on the meta model. A strategy's ``fit`` returns a :class:`Plan` or raises
:class:`NoFit`."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalsuite.planner.capacity import Capacity, format_bytes
from evalsuite.planner.memory import runtime_budget
from evalsuite.planner.plan import Plan, PlanRequest

if TYPE_CHECKING:
    from evalsuite.planner.strategies.base import LoadingStrategy


class NoFit(Exception):
    """The strategy does not fit at this batch (a smaller batch may fit)."""


class Unavailable(NoFit):
    """The strategy cannot run here at any batch: no GPU, too few GPUs, a package missing."""


def installed_packages() -> dict[str, bool]:
    """Which optional loaders can run here (found without importing them: planning stays fast)."""
    return {name: importlib.util.find_spec(name) is not None for name in ("bitsandbytes", "deepspeed")}


def cpu_room(capacity: Capacity) -> int:
    """RAM the weights may use: the rest is the Python process, tokenizer, sandbox workers."""
    return int(capacity.cpu * 0.85)


def device_name(device: Any) -> str:
    return f"cuda:{device}" if isinstance(device, int) else str(device)


class Sizing:
    """One request at one batch: the budget, and the helpers the strategies' ``fit`` share."""

    def __init__(self, request: PlanRequest, batch_size: int | None = None):
        self.request = request
        self.shape = request.shape
        self.cap = request.capacity
        self.speed = request.speed
        self.budget = runtime_budget(request.shape, batch_size or request.batch_size, request.seq_len,
                                     request.prompt_len)
        self.installed = request.installed if request.installed is not None else installed_packages()
        self.gpu_bytes = self.shape.weight_bytes(request.gpu_dtype)  # the weights in the GPU rungs' dtype
        self.gpu_step = request.speed.gpu_step(self.shape, self.gpu_bytes)

    def plan(self, strategy: LoadingStrategy, dtype: str, weight_bytes: int, device_summary: dict[str, str],
             step: float, **extra: Any) -> Plan:
        r = self.request
        return Plan(model=r.model, model_id=r.model_id, strategy=strategy.name, forced=False, fits=True,
                    dtype=dtype, weight_bytes=weight_bytes, shape=self.shape, budget=self.budget,
                    capacity=self.cap, device_map_summary=device_summary, est_step_s=step,
                    gpu_step_s=self.gpu_step, config_origin=r.config_origin,
                    no_split_module_classes=r.no_split_module_classes, strategy_summary=strategy.summary,
                    **extra)

    def room(self, gpu_bytes: int, share: float = 1.0) -> int:
        """Bytes left for weights on a GPU after its share of the KV cache, activations and margin."""
        return gpu_bytes - int(self.budget.kv_cache * share) - self.budget.activations - self.budget.margin

    def require(self, strategy: LoadingStrategy) -> None:
        """Refuse, at any batch, a strategy that needs a GPU or a package this machine lacks."""
        if strategy.needs_gpu and not self.cap.gpus:
            raise Unavailable("no GPU")
        if strategy.package and not self.installed.get(strategy.package, False):
            raise Unavailable(f"{strategy.package} is not installed (pip install 'evalsuite[{strategy.extra}]')")

    def single_gpu(self, strategy: LoadingStrategy, dtype: str, weight_bytes: int, step: float,
                   engine_workspace: Callable[[], int] | None = None) -> Plan:
        """Every weight on the largest GPU; ``engine_workspace`` gives the sampling engine's workspace where it
        would decode this plan (0, or None: plain transformers generate decodes), asked only once the weights fit
        (it imports the engine, and so torch)."""
        room = self.room(max(self.cap.gpus))
        if weight_bytes > room:
            raise NoFit(f"{format_bytes(weight_bytes)} of {dtype} weights > {format_bytes(max(room, 0))} free on one "
                        f"GPU ({format_bytes(max(self.cap.gpus))} - {format_bytes(self.budget.total)} budget)")
        plan = self.plan(strategy, dtype, weight_bytes, {}, step)
        engine_bytes = engine_workspace() if engine_workspace is not None else 0
        if engine_bytes and weight_bytes > room - engine_bytes:
            plan.engine_room = False
            plan.notes.append(f"no room for the sampling engine's workspace ({format_bytes(engine_bytes)} at batch "
                              f"{self.budget.batch_size}, {format_bytes(room - weight_bytes)} left): plain "
                              "transformers generate decodes")
        elif engine_bytes:
            plan.sampling_engine = True
            plan.notes.append(f"the budget leaves room for the sampling engine's workspace "
                              f"({format_bytes(engine_bytes)} at batch {self.budget.batch_size})")
        index = plan.main_gpu
        plan.device_map_summary = {f"cuda:{index}": f"all {self.shape.num_blocks} blocks, {format_bytes(weight_bytes)}"}
        plan.device_map = {"": index}
        return plan

    # -- accelerate's device map on the meta model ----------------------------------------------------
    def device_map(self, max_memory: dict[Any, int], balanced: bool = False, dtype_name: str | None = None
                   ) -> tuple[dict[str, Any] | None, dict[str, str]]:
        """accelerate's device map within ``max_memory``; ``balanced`` spreads the blocks evenly over the
        GPUs (as ``device_map="balanced"``) instead of filling the first one before the next."""
        r = self.request
        if r.meta_model is None:
            return None, {}
        import torch
        from accelerate.utils import get_balanced_memory, infer_auto_device_map

        dtype = getattr(torch, dtype_name or r.gpu_dtype)
        quiet = logging.getLogger("accelerate.utils.modeling")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # planning for GPUs this machine lacks is the point, not a mistake
        try:
            if balanced:
                max_memory = get_balanced_memory(r.meta_model, max_memory=dict(max_memory), dtype=dtype,
                                                 no_split_module_classes=list(r.no_split_module_classes))
            device_map = infer_auto_device_map(r.meta_model, max_memory=dict(max_memory),
                                               no_split_module_classes=list(r.no_split_module_classes),
                                               dtype=dtype)
        finally:
            quiet.setLevel(level)
        sizes = self.placed_bytes(device_map, dtype_name)
        counts: dict[str, int] = {}
        for device in device_map.values():
            counts[device_name(device)] = counts.get(device_name(device), 0) + 1
        summary = {name: f"{counts[name]} modules, {format_bytes(sizes.get(name, 0))}" for name in counts}
        return {k: v for k, v in device_map.items()}, summary

    def placed_bytes(self, device_map: dict[str, Any], dtype_name: str | None = None) -> dict[str, int]:
        import torch
        from accelerate.utils import compute_module_sizes

        dtype = getattr(torch, dtype_name or self.request.gpu_dtype)
        module_sizes = compute_module_sizes(self.request.meta_model, dtype=dtype)
        placed: dict[str, int] = {}
        for name, device in device_map.items():
            placed[device_name(device)] = placed.get(device_name(device), 0) + module_sizes.get(name, 0)
        return placed
