"""The first rung: the whole model on one GPU in half precision (or the user's --dtype), decoded by the
sampling engine where its family is covered and its workspace fits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.planner.memory import ModelShape
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import TransformersStrategy
from evalsuite.planner.strategies.sizing import Sizing


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


@dataclass(frozen=True)
class WholeGpu(TransformersStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        return sizing.single_gpu(self, sizing.request.gpu_dtype, sizing.gpu_bytes, sizing.gpu_step,
                                 lambda: engine_workspace_bytes(sizing.shape, sizing.budget.batch_size,
                                                                sizing.gpu_bytes))

    def placement(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        return {"device_map": {"": plan.main_gpu}}


STRATEGY = WholeGpu("gpu", "whole model on one GPU in half precision", "half", needs_gpu=True, ladder_rank=10,
                    keeps_weights_on_gpu=True)
