"""Turn a :class:`~evalsuite.planner.plan.Plan` into a loaded model.

Each strategy loads itself (:mod:`evalsuite.planner.strategies`); bitsandbytes and DeepSpeed are imported
only when their strategy runs, so this module imports on a CPU machine without them. The GPU cap is enforced
before loading; when a load still runs out of memory the planner steps one rung down and says so in the plan's
notes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from evalsuite.devices import free_accelerator_memory, is_out_of_memory, pinned_gpu
from evalsuite.errors import EvalsuiteError
from evalsuite.models.options import LoadingOptions
from evalsuite.models.registry import ModelSpec
from evalsuite.planner.capacity import Capacity, detect_capacity, enforce_gpu_cap
from evalsuite.planner.ladder import step_down
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.planning import (
    DEFAULT_BATCH,
    DEFAULT_NEW_TOKENS,
    DEFAULT_PROMPT_LEN,
    build_request,
    plan_request,
)
from evalsuite.planner.source import resolve_source
from evalsuite.planner.strategies import strategy_named


def gpu_dtype(loading: LoadingOptions, spec: ModelSpec | None = None) -> str:
    """What the GPU strategies load the weights in: the user's --dtype (float32 too: asked for, it is what
    runs), the registry's, then bf16 where the GPU has it (float16 where it would be emulated)."""
    import torch

    wanted = loading.dtype or (spec.dtype if spec is not None else None)
    old_gpu = torch.cuda.is_available() and not torch.cuda.is_bf16_supported()  # V100 and older
    if wanted in ("float16", "float32"):
        return wanted
    return "float16" if old_gpu else "bfloat16"


def load_planned(model_path_or_id: str, spec: ModelSpec | None, loading: LoadingOptions, *,
                 batch_size: int | None = None, max_new_tokens: int | None = None, seq_len: int | None = None,
                 prompt_len: int = DEFAULT_PROMPT_LEN, capacity: Capacity | None = None) -> tuple[Any, Plan]:
    """Plan and load ``model_path_or_id``; returns ``(model, plan)`` with the plan ready for the run record.

    ``loading`` gives the user's placement, device, dtype and trust; ``max_new_tokens`` sizes the KV cache
    budget past the prompt (default 512) and ``batch_size`` the batch (default 8).
    """
    import torch

    cpu_only = loading.device == "cpu" or not torch.cuda.is_available()
    if capacity is None:
        capacity = detect_capacity(loading.gpu_memory, loading.cpu_memory, loading.offload_dir,
                                   only_gpu=None if cpu_only else pinned_gpu(loading.device))
        if cpu_only:
            capacity = Capacity(cpu=capacity.cpu, disk=capacity.disk, offload_dir=capacity.offload_dir)
    source = resolve_source(model_path_or_id, spec)
    if loading.trust_remote_code:
        source = dataclasses.replace(source, trust_remote_code=True)
    new_tokens = max_new_tokens or DEFAULT_NEW_TOKENS
    request = build_request(source, capacity, batch_size or DEFAULT_BATCH,
                            seq_len or prompt_len + new_tokens, prompt_len, gpu_dtype(loading, spec))
    plan = plan_request(request, loading.strategy)
    cap = None if cpu_only else enforce_gpu_cap(capacity.gpu_cap, list(capacity.gpu_ids) or None)
    if cap is not None:
        plan.notes.extend(cap.notes)
    try:
        model, plan = _load_stepping_down(source, plan, request)
    except BaseException:
        if cap is not None:
            cap.release()  # the next model of the command must not inherit this one's cap
        raise  # what the failed load left is freed once its traceback is gone (the run's model loop)
    plan.gpu_cap = cap  # released with the model (LoadedModel.release)
    return model, plan


def _load_stepping_down(source: Any, plan: Plan, request: PlanRequest) -> tuple[Any, Plan]:
    """Load ``plan``; on out of memory, step one rung down and load again (a forced strategy stops instead)."""
    while True:
        try:
            return _load(source.model_id, plan, request, source.trust_remote_code, source.revision), plan
        except Exception as exc:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
            if not is_out_of_memory(exc):
                raise
            why = f"ran out of GPU memory while loading ({str(exc).splitlines()[0][:160]})"
        # outside the handler: its traceback (and the half-loaded weights its frames hold) is gone now
        free_accelerator_memory()
        if plan.forced:
            raise EvalsuiteError(f"{plan.model}: forced strategy {plan.strategy} {why}; "
                                 f"drop --strategy to let the planner step down")
        plan = step_down(plan, request, why)


def _load(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
          revision: str | None = None) -> Any:
    import torch

    strategy = strategy_named(plan.strategy)
    # what a strategy allocates on "cuda" (DeepSpeed's engine, bitsandbytes' buffers) lands on the plan's GPU
    on_gpu = torch.cuda.device(plan.main_gpu) if strategy.needs_gpu and torch.cuda.is_available() \
        else contextlib.nullcontext()
    with on_gpu:  # --revision reaches every strategy's from_pretrained (they all take transformers' hub arguments)
        model = strategy.load(model_id, plan, request, trust_remote_code,
                              **({"revision": revision} if revision else {}))
    model.eval()
    return model


__all__ = ["gpu_dtype", "load_planned"]
