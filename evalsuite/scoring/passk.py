"""The unbiased pass@k estimator (Chen et al. 2021).

pass@k for one problem with n samples of which c passed is ``1 - C(n-c, k) / C(n, k)``: the chance
that k samples drawn without replacement from the n contain at least one pass. The product form
below avoids the huge binomials, as in the paper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    """One pass@k: the estimate and its 95% interval over problems. Also what the Python API and ``--json``
    return (evalsuite.runs.results)."""

    k: int
    value: float
    ci_low: float
    ci_high: float
    ci_method: str | None = "bootstrap"  # or "wilson", where every problem has the same value (intervals.py)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "ci95": [self.ci_low, self.ci_high]}
        if self.ci_method:
            out["ci_method"] = self.ci_method
        return out


def computable_ks(ks: Sequence[int], counts: Mapping[str, tuple[int, int]]) -> tuple[list[int], dict[int, str]]:
    """Split ks into those every problem has enough samples for, and the rest with the reason."""
    if not counts:
        return [], {k: "no problems were scored" for k in ks}
    min_n = min(n for n, _ in counts.values())
    ok = [k for k in ks if k <= min_n]
    skipped = {k: f"needs n >= {k} samples per problem; the smallest n is {min_n}" for k in ks if k > min_n}
    return ok, skipped


def estimate(counts: Mapping[str, tuple[int, int]], k: int, bootstrap: int = 1000, seed: int = 0) -> PassAtK:
    """Mean pass@k over problems (``counts``: task_id -> (n, c)), with its 95% interval. The problems are taken in
    task-id order, so that the bootstrap's interval is one function of the verdicts, whatever order the samples
    came in (a samples file's rows shuffled gave another interval: red-team round 19)."""
    from evalsuite.scoring.intervals import mean_interval

    per_problem = [pass_at_k(*counts[task_id], k) for task_id in sorted(counts)]
    if not per_problem:
        raise EvalsuiteError("no problems were scored")
    interval = mean_interval(per_problem, bootstrap, seed)
    return PassAtK(k=k, value=sum(per_problem) / len(per_problem), ci_low=interval.low, ci_high=interval.high,
                   ci_method=interval.method)
