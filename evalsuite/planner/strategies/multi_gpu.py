"""Several GPUs: accelerate's device map spreads whole blocks over them, for a model no single GPU holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import TransformersStrategy, accelerate_placement
from evalsuite.planner.strategies.sizing import NoFit, Sizing, Unavailable


@dataclass(frozen=True)
class MultiGpu(TransformersStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        gpus = sizing.cap.gpus
        n = len(gpus)
        if n < 2:
            raise Unavailable("only one GPU")
        rooms = [sizing.room(g, 1 / n) for g in gpus]
        slack = (n - 1) * sizing.shape.block_params * 2  # a block never splits: up to one block lost per seam
        if sizing.gpu_bytes > sum(rooms) - slack:
            free = max(sum(rooms) - slack, 0)
            raise NoFit(f"{format_bytes(sizing.gpu_bytes)} of weights > {format_bytes(free)} free on {n} GPUs "
                        "after the budget")
        device_map, summary = sizing.device_map({sizing.cap.gpu_id(i): room for i, room in enumerate(rooms)},
                                               balanced=True)
        if device_map is not None and any(d in ("cpu", "disk") for d in device_map.values()):
            raise NoFit("accelerate's device map spills to CPU: the GPUs are too full once blocks stay whole")
        share = format_bytes(sizing.gpu_bytes / n)
        summary = summary or {f"cuda:{sizing.cap.gpu_id(i)}": f"~{share}" for i in range(n)}
        return sizing.plan(self, sizing.request.gpu_dtype, sizing.gpu_bytes, summary, sizing.gpu_step,
                           device_map=device_map)

    def placement(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        return accelerate_placement(plan, with_cpu=False)


STRATEGY = MultiGpu("multi-gpu", "layers spread over several GPUs (accelerate device map)", "half", needs_gpu=True,
                    ladder_rank=20, keeps_weights_on_gpu=True)
