"""The memory planner: decide how a model is loaded (one GPU, several, 8/4-bit, offload, CPU), explain the
decision and let the user override it. ``plan_model`` needs no weights; ``load_planned`` loads by the plan.
"""

from __future__ import annotations

from typing import Any

from evalsuite.planner.capacity import Capacity, detect_capacity, format_bytes, parse_size
from evalsuite.planner.ladder import choose_plan
from evalsuite.planner.plan import Plan
from evalsuite.planner.planning import plan_model
from evalsuite.planner.strategies import STRATEGIES

__all__ = ["Capacity", "STRATEGIES", "Plan", "choose_plan", "detect_capacity", "format_bytes",
           "load_planned", "parse_size", "plan_model"]


def load_planned(model_path_or_id: str, spec: Any, options: Any, **kwargs: Any):
    """Load a model as the planner decides: ``(model, Plan)``. See :mod:`evalsuite.planner.loaders`."""
    from evalsuite.planner.loaders import load_planned as _load

    return _load(model_path_or_id, spec, options, **kwargs)
