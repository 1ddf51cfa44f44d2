"""CPU only: float32 when it fits in RAM, else bfloat16, spilling to disk under --offload-dir."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import TransformersStrategy, offload_folder
from evalsuite.planner.strategies.sizing import NoFit, Sizing, cpu_room


@dataclass(frozen=True)
class CpuOnly(TransformersStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        shape, cap, budget, speed = sizing.shape, sizing.cap, sizing.budget, sizing.speed
        ram = cpu_room(cap) - budget.kv_cache * 2  # fp32 KV cache on CPU
        fp32 = shape.weight_bytes("float32")
        half = shape.weight_bytes("bfloat16")
        dtype, weight_bytes = ("float32", fp32) if fp32 <= ram else ("bfloat16", half)
        cores = cap.cpu_cores or speed.cpu_default_cores
        step = speed.cpu_step(weight_bytes, shape.num_params, shape.num_layers, budget.batch_size, cores)
        if weight_bytes <= ram:
            return sizing.plan(self, dtype, weight_bytes, {"cpu": format_bytes(weight_bytes)}, step,
                               device_map={"": "cpu"})
        disk_room = int((cap.disk or 0) * 0.95)
        if not cap.offload_dir or weight_bytes > ram + disk_room:
            where = f" + disk {format_bytes(disk_room)} free at {cap.offload_dir}" if cap.offload_dir else ""
            raise NoFit(f"{format_bytes(weight_bytes)} of bf16 weights > {format_bytes(max(ram, 0))} of usable "
                        f"CPU RAM (of {format_bytes(cap.cpu)}){where}")
        # Spill to disk: accelerate keeps the first blocks in RAM and memory-maps the rest from offload_dir.
        device_map, summary = sizing.device_map({"cpu": max(ram, 0), "disk": disk_room}, dtype_name=dtype)
        on_disk = sizing.placed_bytes(device_map, dtype).get("disk", 0) if device_map else weight_bytes - ram
        summary = summary or {"cpu": format_bytes(weight_bytes - on_disk), "disk": format_bytes(on_disk)}
        step += on_disk / speed.disk_bytes_per_s
        return sizing.plan(self, dtype, weight_bytes, summary, step, device_map=device_map, offload_to="disk")

    def placement(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"device_map": plan.device_map or {"": "cpu"}}
        if "disk" in kwargs["device_map"].values():
            kwargs["offload_folder"] = offload_folder(plan)
        return kwargs


STRATEGY = CpuOnly("cpu", "CPU only", "cpu", needs_gpu=False, ladder_rank=70)
