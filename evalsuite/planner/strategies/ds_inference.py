"""DeepSpeed-Inference's fused kernels on one GPU per process: never chosen by the ladder, a fast path the user
selects with --strategy ds-inference (fp16 only, batches of at most 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import LoadingStrategy
from evalsuite.planner.strategies.deepspeed_setup import import_deepspeed
from evalsuite.planner.strategies.sizing import NoFit, Sizing

# Families DeepSpeed-Inference's kernel injection refuses with the transformers this project needs (>= 5):
# seen on the reference GPU with DeepSpeed 0.19.8, before any kernel was built.
REFUSED_FAMILIES = {
    "bloom": "DeepSpeed refuses BLOOM kernel injection after transformers 4.43.4 ('BLOOM inference with "
             "DeepSpeed is no longer supported'); use gpu, multi-gpu or zero-inference",
}
MAX_BATCH = 4  # kernel injection failed at batch 8 (CUBLAS_STATUS_EXECUTION_FAILED) on the reference GPU


@dataclass(frozen=True)
class DsInference(LoadingStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        refusal = REFUSED_FAMILIES.get(sizing.shape.model_type)
        if refusal:
            raise NoFit(refusal)
        # One GPU per process: tensor parallelism over several would need one process per GPU, and
        # evalsuite's processes are data-parallel replicas (torchrun), each with its own GPU.
        speed = sizing.speed
        step = sizing.gpu_step * speed.batch_factor(speed.ds_inference_factor, sizing.budget.batch_size)
        return sizing.single_gpu(self, "float16", sizing.shape.weight_bytes("float16"), step)

    def unfit_dtype(self, gpu_dtype: str) -> str:
        return "float16"  # its kernels are fp16-only

    def load(self, model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool, **hub: Any) -> Any:
        deepspeed = import_deepspeed(plan)
        import torch

        from evalsuite.models.weights import load_causal_lm

        plan.batch_limit = MAX_BATCH
        plan.notes.append(f"DeepSpeed-Inference: batches above {MAX_BATCH} crashed its kernels on the reference GPU "
                          f"(CUBLAS_STATUS_EXECUTION_FAILED, then illegal memory access); generating in batches of "
                          f"at most {MAX_BATCH}")
        # Loaded in host RAM: kernel injection builds fused copies of every layer's weights while the originals
        # still exist, which on the GPU needs twice the model (it ran out of memory under a 16 GiB cap on an
        # reference GPU); from the host, DeepSpeed moves the injected model onto the GPU once.
        model = load_causal_lm(model_id, dtype=torch.float16, trust_remote_code=trust_remote_code, **hub)
        engine = deepspeed.init_inference(model, tensor_parallel={"tp_size": 1},  # one GPU per process
                                          dtype=torch.float16, replace_with_kernel_inject=True,
                                          max_out_tokens=plan.budget.seq_len)
        return engine.module


STRATEGY = DsInference("ds-inference", "DeepSpeed-Inference: fused kernels on one GPU per process, batches of at most "
                       "4", "half", needs_gpu=True, package="deepspeed", extra="deepspeed")
