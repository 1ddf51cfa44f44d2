"""From a model name and the user's limits to a :class:`~evalsuite.planner.plan.Plan`, without weights."""

from __future__ import annotations

from typing import Any

from evalsuite.planner.capacity import Capacity
from evalsuite.planner.ladder import choose_plan
from evalsuite.planner.memory import empty_model, shape_from_model
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.source import ModelSource, resolve_source
from evalsuite.records import SamplingParams

DEFAULT_BATCH = 8
DEFAULT_PROMPT_LEN = 512
DEFAULT_NEW_TOKENS = SamplingParams().max_new_tokens  # a run's default budget: its one home is SamplingParams


def build_request(source: ModelSource, capacity: Capacity, batch_size: int = DEFAULT_BATCH,
                  seq_len: int | None = None, prompt_len: int = DEFAULT_PROMPT_LEN,
                  gpu_dtype: str = "bfloat16", installed: dict[str, bool] | None = None) -> PlanRequest:
    meta = empty_model(source.config, source.trust_remote_code)
    shape = shape_from_model(meta, source.config, source.no_split_module_classes, source.local_dir)
    seq_len = seq_len or prompt_len + DEFAULT_NEW_TOKENS
    if shape.max_positions:
        seq_len = min(seq_len, int(shape.max_positions))
    return PlanRequest(model=source.name, model_id=source.model_id, shape=shape, capacity=capacity,
                       batch_size=batch_size, seq_len=seq_len, prompt_len=min(prompt_len, seq_len),
                       gpu_dtype=gpu_dtype, config_origin=source.config_origin,
                       no_split_module_classes=source.no_split_module_classes or
                       ((shape.block_class,) if shape.block_class else ()),
                       meta_model=meta, installed=installed)


def plan_model(name: str, capacity: Capacity, *, spec: Any = None, strategy: str | None = None,
               batch_size: int = DEFAULT_BATCH, seq_len: int | None = None, prompt_len: int = DEFAULT_PROMPT_LEN,
               gpu_dtype: str = "bfloat16", installed: dict[str, bool] | None = None) -> tuple[Plan, PlanRequest]:
    """Plan ``name`` (alias, hub id or local directory) for ``capacity``; seconds, even for 176B models."""
    source = resolve_source(name, spec)
    request = build_request(source, capacity, batch_size, seq_len, prompt_len, gpu_dtype, installed)
    return plan_request(request, strategy), request


def plan_request(request: PlanRequest, strategy: str | None = None) -> Plan:
    """:func:`choose_plan` plus the notes every caller wants (capacity caveats, fp32 checkpoints)."""
    plan = choose_plan(request, strategy)
    if request.shape.checkpoint_dtype == "float32" and plan.dtype in ("bfloat16", "float16"):
        plan.notes.append(f"the checkpoint is float32; it is loaded in {plan.dtype} (half the memory)")
    plan.notes.extend(request.capacity.notes)
    return plan
