"""The reference GPU's rates, and a decode step's floor at them (``evalsuite.engine.step_cost``): bench_generate.py
and the GPU acceptance compute every floor here, from the engine's ``step_cost`` or a run record's dict of it.
"""

from __future__ import annotations

from evalsuite.engine.step_cost import StepCost, StepFloor

HBM_BYTES_PER_S = 3.0e12  # device-to-device copy measured on the lent H100 (KINDS.md): bs-1 decode floor
# dense matrix-product peaks of the H100 SXM (NVIDIA's datasheet, without sparsity): float32 without TF32 (what
# the float32 fidelity runs use) on the CUDA cores, bf16/fp16 on the tensor cores
PEAK_FLOPS = {"float32": 67e12, "bfloat16": 989e12, "float16": 989e12}


def step_floor(cost: StepCost | dict, dtype: str) -> StepFloor:
    """``dtype``: the weights' ("bfloat16", "float16", "float32"; a torch dtype's str too)."""
    cost = cost if isinstance(cost, StepCost) else StepCost(**cost)
    return cost.floor(HBM_BYTES_PER_S, PEAK_FLOPS[dtype.replace("torch.", "")])
