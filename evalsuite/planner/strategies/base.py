"""The contract of a loading strategy: how it sizes a model (``fit``) and how it loads one (``load``).

A new strategy is one module defining an instance of a :class:`LoadingStrategy` subclass plus one registration
(:data:`evalsuite.planner.strategies.STRATEGIES`, or an ``evalsuite.strategies`` entry point of an installed
package). The ladder knows strategies only through the fields below; it names none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.sizing import Sizing


@dataclass(frozen=True)
class LoadingStrategy:
    name: str  # what --strategy, the plan and the run record call it
    summary: str  # one line for `evalsuite plan`
    # "half": the GPU dtype (bf16/fp16, float32 when --dtype asks); "int8", "nf4"; "cpu": fp32 when it fits, else bf16
    precision: str
    needs_gpu: bool
    # Place in the automatic ladder: lower is tried first and wins near-ties (better numerics first); None: only
    # when the user forces it with --strategy.
    ladder_rank: int | None = None
    package: str | None = None  # import name of the optional dependency
    extra: str | None = None  # pip extra that installs it
    keeps_weights_on_gpu: bool = False  # every weight stays on the GPU(s): CPU-only decoding does not compete
    offloads: bool = False  # a plan of it that offloads nothing is left to the rungs that do not offload

    def fit(self, sizing: Sizing) -> Plan:
        """The plan at ``sizing``'s batch, or raise :class:`~.sizing.NoFit` (or ``Unavailable``) with why."""
        raise NotImplementedError

    def load(self, model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool, **hub: Any) -> Any:
        """The loaded model (``hub``: transformers' hub arguments, such as ``revision``)."""
        raise NotImplementedError

    def unfit_dtype(self, gpu_dtype: str) -> str:
        """The weights' dtype an unfit forced plan reports (it is never loaded)."""
        return {"half": gpu_dtype, "cpu": "bfloat16"}.get(self.precision, self.precision)


def torch_dtype(name: str) -> Any:
    import torch

    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def offload_folder(plan: Plan) -> str:
    """The --offload-dir a plan that puts weights on disk needs, created."""
    if not plan.capacity.offload_dir:
        raise EvalsuiteError("the plan offloads to disk but no --offload-dir was given")
    Path(plan.capacity.offload_dir).mkdir(parents=True, exist_ok=True)
    return plan.capacity.offload_dir


@dataclass(frozen=True)
class TransformersStrategy(LoadingStrategy):
    """Loaded by transformers' ``from_pretrained`` with a device map (accelerate places and offloads)."""

    def placement(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        """``from_pretrained``'s placement arguments: device map, memory limits, offload folder."""
        raise NotImplementedError

    def from_pretrained_kwargs(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        dtype = plan.dtype if plan.dtype in ("bfloat16", "float16", "float32") else request.gpu_dtype
        return {"dtype": torch_dtype(dtype), **self.placement(plan, request)}

    def load(self, model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool, **hub: Any) -> Any:
        from evalsuite.models.weights import load_causal_lm

        return load_causal_lm(model_id, trust_remote_code=trust_remote_code,
                              **self.from_pretrained_kwargs(plan, request), **hub)


def accelerate_placement(plan: Plan, with_cpu: bool) -> dict[str, Any]:
    """The device map a multi-GPU or offloading plan computed, or (forced although it does not fit) accelerate's
    own "auto" within the capacity; the offload folder where weights may go to disk."""
    kwargs: dict[str, Any] = {}
    device_map: dict[str, Any] | str | None = plan.device_map
    if device_map is None:  # forced although it does not fit: let accelerate place what it can
        max_memory: dict[Any, Any] = {plan.capacity.gpu_id(i): g for i, g in enumerate(plan.capacity.gpus)}
        if with_cpu:
            max_memory["cpu"] = plan.capacity.cpu
        kwargs["max_memory"] = max_memory
        device_map = "auto"
    kwargs["device_map"] = device_map
    if isinstance(device_map, dict) and "disk" in device_map.values() or plan.capacity.offload_dir:
        kwargs["offload_folder"] = offload_folder(plan)
    return kwargs
