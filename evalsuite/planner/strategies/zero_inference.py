"""DeepSpeed ZeRO-Inference: every weight in pinned CPU RAM (or on NVMe under --offload-dir), streamed to the GPU
block by block with prefetch; the GPU holds a working set of about two blocks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import LoadingStrategy, torch_dtype
from evalsuite.planner.strategies.deepspeed_setup import import_deepspeed
from evalsuite.planner.strategies.sizing import NoFit, Sizing, cpu_room


def zero_inference_config(plan: Plan, hidden_size: int) -> dict[str, Any]:
    """ZeRO stage 3 with parameter offload to pinned CPU RAM, or NVMe under --offload-dir."""
    if plan.offload_to == "nvme":
        offload = {"device": "nvme", "nvme_path": plan.capacity.offload_dir, "pin_memory": True,
                   "buffer_count": 5, "buffer_size": max(int(1e8), 2 * plan.shape.block_params)}
    else:
        offload = {"device": "cpu", "pin_memory": True}
    half = plan.dtype
    return {
        "fp16": {"enabled": half == "float16"},
        "bf16": {"enabled": half == "bfloat16"},
        "zero_optimization": {
            "stage": 3, "offload_param": offload, "overlap_comm": True,
            "stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
            "stage3_param_persistence_threshold": 10 * hidden_size,
            # DeepSpeed's "memory efficient" linear (on by default) replaces torch.nn.functional.linear for the
            # whole process, for good, with matmul-then-add: a training-memory trick that changes every linear's
            # rounding (float32 greedy tokens then differ from the same model whole on the GPU) and would reach
            # every later model of the command.
            "memory_efficient_linear": False,
        },
        "train_micro_batch_size_per_gpu": 1, "steps_per_print": 10**9, "wall_clock_breakdown": False,
    }


@dataclass(frozen=True)
class ZeroInference(LoadingStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        shape, cap, speed = sizing.shape, sizing.cap, sizing.speed
        gpu_room = sizing.room(max(cap.gpus))
        # ZeRO-3 gathers one submodule's parameters at a time (plus a prefetched one): the working set is the
        # larger of two blocks and the embeddings/head outside them with one block.
        working_set = 2 * max(2 * shape.block_params, shape.outside_blocks_params + shape.block_params)
        if gpu_room < working_set:
            raise NoFit(f"the GPU's working set (two blocks or the embeddings, {format_bytes(working_set)}) > "
                        f"{format_bytes(max(gpu_room, 0))} left after the budget")
        ram = cpu_room(cap)
        if sizing.gpu_bytes <= ram:
            where, rate = "cpu", speed.zero_cpu_bytes_per_s
        elif cap.offload_dir and sizing.gpu_bytes <= (cap.disk or 0) * 0.95:
            where, rate = "nvme", speed.disk_bytes_per_s
        else:
            disk = (f"{format_bytes(cap.disk)} free at {cap.offload_dir}" if cap.offload_dir
                    else "no --offload-dir for NVMe offload")
            raise NoFit(f"{format_bytes(sizing.gpu_bytes)} of weights > CPU RAM {format_bytes(ram)}; {disk}")
        step = sizing.gpu_step + sizing.gpu_bytes / rate
        summary = {"cuda:0": f"working set ~{format_bytes(working_set)} (parameters fetched block by block)",
                   where: f"all {format_bytes(sizing.gpu_bytes)} "
                          f"({'pinned RAM' if where == 'cpu' else cap.offload_dir})"}
        return sizing.plan(self, sizing.request.gpu_dtype, sizing.gpu_bytes, summary, step, offload_to=where)

    def load(self, model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool, **hub: Any) -> Any:
        deepspeed = import_deepspeed(plan)
        from transformers.integrations.deepspeed import HfDeepSpeedConfig

        from evalsuite.models.weights import load_causal_lm

        if plan.offload_to == "nvme":
            if not plan.capacity.offload_dir:
                raise EvalsuiteError("ZeRO-Inference to NVMe needs --offload-dir")
            Path(plan.capacity.offload_dir).mkdir(parents=True, exist_ok=True)
        import torch.nn.functional

        config = zero_inference_config(plan, plan.shape.hidden_size)
        linear = torch.nn.functional.linear
        keep_alive = HfDeepSpeedConfig(config)  # must exist while from_pretrained runs: it switches on zero.Init
        try:
            model = load_causal_lm(model_id, dtype=torch_dtype(plan.dtype), trust_remote_code=trust_remote_code,
                                   **hub)
            engine = deepspeed.initialize(model=model, config_params=config)[0]
        finally:  # whatever DeepSpeed's version does with the setting above, the process keeps torch's own linear
            torch.nn.functional.linear = linear
        engine.module.eval()
        engine.module._evalsuite_ds_config = keep_alive
        return engine.module


STRATEGY = ZeroInference("zero-inference", "DeepSpeed ZeRO-Inference: all weights in pinned CPU RAM (or NVMe with "
                         "--offload-dir), streamed to the GPU with prefetch", "half", needs_gpu=True, ladder_rank=60,
                         package="deepspeed", extra="deepspeed", offloads=True)
