"""The unbiased pass@k estimator (Chen et al. 2021) and confidence intervals over problems.

pass@k for one problem with n samples of which c passed is ``1 - C(n-c, k) / C(n, k)``: the chance
that k samples drawn without replacement from the n contain at least one pass. The product form
below avoids the huge binomials, as in the paper.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from evalsuite.errors import EvalsuiteError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased, numerically stable pass@k for one problem."""
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > n:
        raise EvalsuiteError(f"pass@{k} needs at least {k} samples per problem, but a problem has only {n}")
    if n - c < k:
        return 1.0
    prob_all_fail = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_fail *= 1.0 - k / i
    return 1.0 - prob_all_fail


@dataclass(frozen=True)
class PassAtK:
    k: int
    value: float
    ci_low: float
    ci_high: float

    def to_json(self) -> dict[str, float]:
        return {"value": self.value, "ci95": [self.ci_low, self.ci_high]}


def computable_ks(ks: Sequence[int], counts: Mapping[str, tuple[int, int]]) -> tuple[list[int], dict[int, str]]:
    """Split ks into those every problem has enough samples for, and the rest with the reason."""
    if not counts:
        return [], {k: "no problems were scored" for k in ks}
    min_n = min(n for n, _ in counts.values())
    ok = [k for k in ks if k <= min_n]
    skipped = {k: f"needs n >= {k} samples per problem; the smallest n is {min_n}" for k in ks if k > min_n}
    return ok, skipped


def estimate(counts: Mapping[str, tuple[int, int]], k: int, bootstrap: int = 1000, seed: int = 0) -> PassAtK:
    """Mean pass@k over problems, with a 95% percentile-bootstrap interval resampling problems.

    ``counts`` maps task_id -> (n, c). The interval reflects how much the score would move on another
    draw of problems of the same kind, which is the uncertainty that matters when comparing models.
    """
    per_problem = [pass_at_k(n, c, k) for n, c in counts.values()]
    if not per_problem:
        raise EvalsuiteError("no problems were scored")
    mean = sum(per_problem) / len(per_problem)
    rng = random.Random(seed)
    size = len(per_problem)
    means = sorted(sum(rng.choices(per_problem, k=size)) / size for _ in range(bootstrap))
    low = means[int(0.025 * (bootstrap - 1))]
    high = means[int(round(0.975 * (bootstrap - 1)))]
    return PassAtK(k=k, value=mean, ci_low=low, ci_high=high)
