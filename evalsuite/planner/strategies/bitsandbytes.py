"""bitsandbytes' 8-bit and 4-bit (nf4) weights on one GPU: a quarter to an eighth of float32's memory, slower
and with other numerics (a quantized run is keyed and labelled apart on the leaderboard)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.plan import Plan, PlanRequest
from evalsuite.planner.strategies.base import LoadingStrategy, torch_dtype
from evalsuite.planner.strategies.sizing import Sizing


@dataclass(frozen=True)
class Quantized(LoadingStrategy):
    def fit(self, sizing: Sizing) -> Plan:
        sizing.require(self)
        pair = sizing.speed.int8_factor if self.precision == "int8" else sizing.speed.nf4_factor
        step = sizing.gpu_step * sizing.speed.batch_factor(pair, sizing.budget.batch_size)
        return sizing.single_gpu(self, self.precision, sizing.shape.weight_bytes(self.precision), step)

    def load(self, model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool, **hub: Any) -> Any:
        if importlib.util.find_spec("bitsandbytes") is None:
            raise EvalsuiteError(f"strategy {plan.strategy} needs bitsandbytes: pip install 'evalsuite[quant]'")
        from transformers import BitsAndBytesConfig

        from evalsuite.models.weights import load_causal_lm

        compute = torch_dtype(request.gpu_dtype)
        if self.precision == "int8":
            quantization = BitsAndBytesConfig(load_in_8bit=True)
        else:
            quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                              bnb_4bit_compute_dtype=compute)
        return load_causal_lm(model_id, quantization_config=quantization, dtype=compute,
                              device_map={"": plan.main_gpu}, trust_remote_code=trust_remote_code, **hub)


INT8 = Quantized("int8", "bitsandbytes 8-bit weights on GPU", "int8", needs_gpu=True, ladder_rank=30,
                 package="bitsandbytes", extra="quant", keeps_weights_on_gpu=True)
NF4 = Quantized("nf4", "bitsandbytes 4-bit nf4 weights on GPU", "nf4", needs_gpu=True, ladder_rank=40,
                package="bitsandbytes", extra="quant", keeps_weights_on_gpu=True)
