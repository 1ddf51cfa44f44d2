"""How fast each way of loading decodes: the estimates the ladder ranks its rungs by.

The constants were measured on the reference GPU (docs/benchmarks.md, "Loading strategies"); they rank strategies
and give honest orders of magnitude, not promises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalsuite.planner.memory import ModelShape


@dataclass(frozen=True)
class SpeedModel:
    """Seconds per decoding step (one new token for every sequence of the batch), by strategy.

    Whole-GPU decoding of a 6-7B model in transformers is launch-bound, about 2 ms per layer per step on
    the reference GPU at any batch up to 32 (GPT-J-6B: 59 ms/step at batch 1, 49 ms at batch 32); large models turn
    bandwidth-bound. Offloaded strategies add the bytes streamed over PCIe (or read from disk) per step.
    """

    # Measured on the reference GPU (docs/benchmarks.md, "Loading strategies"; GPT-J-6B and BLOOM-7B1 shapes,
    # transformers 5.17, bitsandbytes 0.50.2, DeepSpeed 0.19.8) unless marked assumed.
    layer_step_s: float = 0.0014  # whole-GPU decode: 0.8-1.7 ms per layer per step, launch-bound
    hbm_bytes_per_s: float = 2.0e12  # assumed: where large models turn bandwidth-bound
    # multiplier on the whole-GPU step, at batch 1 and batch 32 (interpolated in log batch)
    int8_factor: tuple[float, float] = (3.3, 3.5)
    nf4_factor: tuple[float, float] = (1.5, 1.65)
    accelerate_cpu_bytes_per_s: float = 6.6e9  # accelerate's per-step host->device copies (6.1-7.2 GB/s)
    zero_cpu_bytes_per_s: float = 37.0e9  # ZeRO-3 pinned, prefetched parameter streaming (37-37.5 GB/s)
    disk_bytes_per_s: float = 2.0e9  # assumed: NVMe read
    # CPU-only decode, per core (it scales with the cores torch uses): measured on 16 cores of the reference GPU's host,
    # BLOOM-7B1 fp32 at batch 1, 28 GB in 0.41 s (69 GB/s), and at batch 32, 2 x params x batch in 4.8 s per step
    # (0.094 TFLOP/s); checked on the project's 2-core VM with SmolLM2-135M (33 tokens/s measured
    # where the 16-core constants said ~350). Rough: other jobs, thread counts and kernels move it ~2x.
    cpu_bytes_per_s_per_core: float = 69.0e9 / 16
    cpu_flops_per_core: float = 0.094e12 / 16
    # transformers' per-layer overhead per decoding step on CPU (Python, kernel launches), which bounds small
    # models: SmolLM2-135M's 30 layers at batch 1 on 2 cores (see docs/benchmarks.md)
    cpu_layer_step_s: float = 0.0012
    cpu_default_cores: int = 16  # when the cores are unknown (planning for another machine)
    # DeepSpeed-Inference kernels, GPT-J fp16: 12.9 ms/token at batch 1 vs ~43 for whole-GPU bf16, 2.99 at
    # batch 32 (generated in chunks of 4, its kernels fail at 8) vs ~1.4
    ds_inference_factor: tuple[float, float] = (0.3, 2.1)

    def cpu_step(self, weight_bytes: int, num_params: int, num_layers: int, batch: int, cores: int) -> float:
        """Seconds per decoding step on ``cores`` CPU cores: weight streaming, arithmetic or per-layer overhead,
        whichever bounds it (also the yardstick of the slow-run warning, evalsuite.progress)."""
        bytes_s = weight_bytes / (self.cpu_bytes_per_s_per_core * cores)
        compute_s = 2 * num_params * batch / (self.cpu_flops_per_core * cores)
        return max(bytes_s, compute_s, num_layers * self.cpu_layer_step_s)

    def gpu_step(self, shape: ModelShape, weight_bytes: int) -> float:
        return max(shape.num_layers * self.layer_step_s, weight_bytes / self.hbm_bytes_per_s)

    @staticmethod
    def batch_factor(pair: tuple[float, float], batch: int) -> float:
        t = min(1.0, max(0.0, math.log(max(batch, 1)) / math.log(32)))
        return pair[0] + (pair[1] - pair[0]) * t


SPEED = SpeedModel()
