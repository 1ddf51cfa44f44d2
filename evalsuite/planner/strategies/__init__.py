"""The loading strategies, one module each, registered in one place.

A strategy is everything about one way of loading a model: its summary, how it is sized (``fit``) and how it
loads (``load``). The ladder (:mod:`evalsuite.planner.ladder`) tries the registered strategies in the order of
their ``ladder_rank``; an installed package adds one through the ``evalsuite.strategies`` entry point group
(``[project.entry-points."evalsuite.strategies"] tensor-parallel = "my_pkg.tp:STRATEGY"``).
"""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.strategies import (
    bitsandbytes,
    cpu,
    cpu_offload,
    ds_inference,
    multi_gpu,
    whole_gpu,
    zero_inference,
)
from evalsuite.planner.strategies.base import LoadingStrategy
from evalsuite.planner.strategies.sizing import NoFit, Sizing, Unavailable
from evalsuite.registry import Registry

STRATEGIES: Registry[LoadingStrategy] = Registry("strategies", "loading strategy")
STRATEGIES.register("gpu", whole_gpu.STRATEGY)
STRATEGIES.register("multi-gpu", multi_gpu.STRATEGY)
STRATEGIES.register("int8", bitsandbytes.INT8)
STRATEGIES.register("nf4", bitsandbytes.NF4)
STRATEGIES.register("cpu-offload", cpu_offload.STRATEGY)
STRATEGIES.register("zero-inference", zero_inference.STRATEGY)
STRATEGIES.register("cpu", cpu.STRATEGY)
STRATEGIES.register("ds-inference", ds_inference.STRATEGY)


def strategy_named(name: str) -> LoadingStrategy:
    """The strategy ``--strategy name`` (or a plan) names; one line naming the known ones otherwise."""
    if name not in STRATEGIES:
        raise EvalsuiteError(f"--strategy {name!r} is not one of: {', '.join(strategy_names())}")
    strategy = STRATEGIES.get(name)
    if strategy.name != name:
        raise EvalsuiteError(f"the loading strategy registered as {name!r} calls itself {strategy.name!r}")
    return strategy


def strategy_names() -> list[str]:
    return [name for name, _ in STRATEGIES]


def ladder() -> list[LoadingStrategy]:
    """The strategies the planner may choose by itself, in the order it tries them."""
    automatic = [strategy_named(name) for name, entry in STRATEGIES if entry.ladder_rank is not None]
    return sorted(automatic, key=lambda s: s.ladder_rank or 0)


__all__ = ["STRATEGIES", "LoadingStrategy", "NoFit", "Sizing", "Unavailable", "ladder", "strategy_named",
           "strategy_names"]
