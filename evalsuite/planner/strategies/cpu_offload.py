"""accelerate's offload: what does not fit on the GPU stays in CPU RAM (or on disk under --offload-dir) and is
copied in layer by layer at every step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import TransformersStrategy, accelerate_placement
from evalsuite.planner.strategies.sizing import NoFit, Sizing, cpu_room


@dataclass(frozen=True)
class CpuOffload(TransformersStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        cap, shape = sizing.cap, sizing.shape
        position = cap.gpus.index(max(cap.gpus))
        gpu_room, index = sizing.room(cap.gpus[position]), cap.gpu_id(position)
        ram = cpu_room(cap)
        if gpu_room < 2 * shape.block_params * 2:
            raise NoFit(f"{format_bytes(max(gpu_room, 0))} left on the GPU after the budget; offloading needs room for "
                        f"at least two blocks ({format_bytes(4 * shape.block_params)})")
        max_memory: dict[Any, int] = {index: gpu_room, "cpu": ram}
        disk_room = int(cap.disk * 0.95) if cap.disk else 0
        if cap.offload_dir:
            max_memory["disk"] = disk_room
        # The GPU part, capped by room; the rest CPU, then disk: the same greedy order accelerate uses.
        on_gpu = min(sizing.gpu_bytes, gpu_room - shape.block_params * 2)
        rest = sizing.gpu_bytes - on_gpu
        on_cpu = min(rest, ram)
        on_disk = rest - on_cpu
        if on_disk > disk_room:
            where = (f"disk {format_bytes(disk_room)} free at {cap.offload_dir}" if cap.offload_dir
                     else "no --offload-dir for disk offload")
            raise NoFit(f"{format_bytes(sizing.gpu_bytes)} of weights > GPU {format_bytes(on_gpu)} + CPU RAM "
                        f"{format_bytes(ram)} + {where}")
        device_map, summary = sizing.device_map(max_memory)
        if device_map is not None:
            sizes = sizing.placed_bytes(device_map)
            on_cpu, on_disk = sizes.get("cpu", 0), sizes.get("disk", 0)
        summary = summary or {f"cuda:{index}": format_bytes(on_gpu), "cpu": format_bytes(on_cpu),
                              **({"disk": format_bytes(on_disk)} if on_disk else {})}
        speed = sizing.speed
        step = sizing.gpu_step + on_cpu / speed.accelerate_cpu_bytes_per_s + on_disk / speed.disk_bytes_per_s
        dtype = sizing.request.gpu_dtype
        if on_cpu == 0 and on_disk == 0:
            return sizing.plan(self, dtype, sizing.gpu_bytes, summary, step, device_map=device_map,
                               offload_to=None, notes=["everything fits on the GPU: nothing is offloaded"])
        return sizing.plan(self, dtype, sizing.gpu_bytes, summary, step, device_map=device_map,
                           offload_to="disk" if on_disk else "cpu")

    def placement(self, plan: Plan, request: PlanRequest) -> dict[str, Any]:
        return accelerate_placement(plan, with_cpu=True)


STRATEGY = CpuOffload("cpu-offload", "accelerate: what does not fit on the GPU stays in CPU RAM (or on disk) and is "
                      "copied in layer by layer", "half", needs_gpu=True, ladder_rank=50, offloads=True)
