"""Confidence intervals for a mean pass@k over problems.

The default is a 95% percentile bootstrap that resamples problems: how much the score would move on another
draw of problems of the same kind, which is the uncertainty that matters when comparing models. When every
problem has the same value (all solved, or none) the bootstrap collapses to a single point and would claim
certainty; there the interval is Wilson's score interval for the pooled rate over the problems, which stays
honest at 0 and 1 (with 10 problems and none solved: [0, 0.278]). The method used is recorded.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str  # "bootstrap" or "wilson"


def bootstrap_interval(values: Sequence[float], resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap of the mean of ``values``."""
    rng = random.Random(seed)
    size = len(values)
    means = sorted(sum(rng.choices(values, k=size)) / size for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[int(round(0.975 * (resamples - 1)))]


def wilson_interval(rate: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``rate`` observed over ``n`` trials."""
    if n <= 0:
        return 0.0, 1.0
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if rate <= 0 else low), (1.0 if rate >= 1 else high)  # exact at the edges, not 1 - 1e-16


SAME_RATE = 1e-9  # per-problem values closer than this are one value (float rounding, never a real difference)


def mean_interval(values: Sequence[float], resamples: int = 1000, seed: int = 0) -> Interval:
    """The interval for the mean of per-problem values (see the module docstring for the rule)."""
    mean = sum(values) / len(values)
    low, high = bootstrap_interval(values, resamples, seed)
    # equal rates reached through different (n, c) differ in their last bits (1 of 3: 0.33333333333333326, 3 of 9:
    # 0.33333333333333337): a bootstrap over them is a point in all but name, so they count as equal
    if high - low > SAME_RATE * max(1.0, abs(mean)):
        return Interval(low, high, "bootstrap")
    low, high = wilson_interval(mean, len(values))
    return Interval(low, high, "wilson")
