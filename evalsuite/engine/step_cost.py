"""What a generate call's mean decode step moved and computed, and, given a device's memory bandwidth and peak
arithmetic, its floor: the weights read once plus the keys and values the step must read (memory bound), or the
matrix products at the peak (compute bound), whichever is longer. Every engine record carries the cost
(``model.engine.step_cost``), device-independent; the benchmarks hold the reference GPU's rates
(benchmarks/step_floor.py), so a record says how far its steps were from what the card allows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepFloor:
    achieved_ms: float
    memory_ms: float
    compute_ms: float

    @property
    def floor_ms(self) -> float:
        return max(self.memory_ms, self.compute_ms)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_ms >= self.compute_ms else "compute"

    @property
    def of_floor(self) -> float | None:
        """The floor as a share of the achieved step: 1.0 is the card's limit."""
        return self.floor_ms / self.achieved_ms if self.achieved_ms else None

    def note(self) -> str:
        share = f" ({self.of_floor:.0%})" if self.of_floor else ""
        return f"decode {self.achieved_ms:.3f} ms/step, floor {self.floor_ms:.3f}{share}"


@dataclass(frozen=True)
class StepCost:
    """The mean decode step of one generate call. Weights count every parameter once (a step reads each matrix;
    the input embedding, only gathered, is counted too, as every earlier floor did)."""

    steps: int
    decode_ms: float  # mean ms a decode step took (the loop's time less the prompts' forwards)
    weight_bytes: int
    kv_bytes: float  # mean keys and values a step read: its busy rows' generated ones, each of their prompts' once
    flops: float  # mean matrix-product arithmetic: 2 x parameters x the rows a step computed (idle ones included)

    def floor(self, bytes_per_s: float, flops_per_s: float) -> StepFloor:
        return StepFloor(achieved_ms=self.decode_ms, memory_ms=1000 * (self.weight_bytes + self.kv_bytes) / bytes_per_s,
                         compute_ms=1000 * self.flops / flops_per_s)
