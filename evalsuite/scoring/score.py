"""Turns per-sample verdicts into per-problem counts and pass@k with confidence intervals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsuite.records import SampleResult
from evalsuite.scoring.passk import PassAtK, computable_ks, estimate
from evalsuite.scoring.summary import ProblemTally, ScoreSummary, SetScore


@dataclass
class Score:
    pass_at: dict[int, PassAtK]
    not_computable: dict[int, str]  # k -> reason
    per_problem: dict[str, dict[str, int]]  # task_id -> {"n": .., "c": ..}
    n_samples: int
    flags: dict[str, int] = field(default_factory=dict)  # hack detections by kind
    # Verdicts by status: timeouts are counted apart from failures (a slow machine is not a wrong answer).
    statuses: dict[str, int] = field(default_factory=dict)  # "passed" / "failed" / "timed out" -> samples
    timed_out_per_problem: dict[str, int] = field(default_factory=dict)  # task_id -> samples timed out
    # EvalPlus-style tasks: "base" and "plus" scored apart (empty for tasks checked by test code)
    sets: dict[str, SetScore] = field(default_factory=dict)

    @property
    def n_passed(self) -> int:
        return self.statuses.get("passed", 0)

    @property
    def n_failed(self) -> int:
        return self.statuses.get("failed", 0)

    @property
    def n_timed_out(self) -> int:
        return self.statuses.get("timed out", 0)

    def summary(self, fields: Mapping[str, Any] | None = None) -> ScoreSummary:
        """The score as the later stages receive it; ``fields``: what the command adds to summary.json."""
        return ScoreSummary(
            pass_at=dict(self.pass_at), not_computable=dict(self.not_computable), n_samples=self.n_samples,
            n_problems=len(self.per_problem), n_passed=self.n_passed, n_failed=self.n_failed,
            n_timed_out=self.n_timed_out,
            per_problem={task_id: ProblemTally(passed=counts["c"], n=counts["n"])
                         for task_id, counts in self.per_problem.items()},
            timed_out_per_problem=dict(self.timed_out_per_problem), flags=dict(self.flags), sets=dict(self.sets),
            fields=dict(fields or {}))

    def summary_json(self) -> dict[str, Any]:
        """summary.json's score part (:meth:`ScoreSummary.to_json`)."""
        return self.summary().to_json()


def score(results: Iterable[SampleResult], ks: Sequence[int], bootstrap: int = 1000) -> Score:
    results = list(results)
    flags: Counter[str] = Counter()
    statuses: Counter[str] = Counter({"passed": 0, "failed": 0, "timed out": 0})
    timed_out: Counter[str] = Counter()
    for result in results:
        statuses[result.status] += 1
        if result.status == "timed out":
            timed_out[result.task_id] += 1
        flags.update(result.flags)
    as_tuples = problem_counts(results, lambda result: result.passed)
    ok, skipped = computable_ks(sorted(set(ks)), as_tuples)
    pass_at = {k: estimate(as_tuples, k, bootstrap=bootstrap) for k in ok}
    per_problem = {task_id: {"n": n, "c": c} for task_id, (n, c) in sorted(as_tuples.items())}
    plus = SetScore(dict(pass_at), sum(c for _, c in as_tuples.values()))
    return Score(pass_at=pass_at, not_computable=skipped, per_problem=per_problem, n_samples=len(results),
                 flags=dict(flags), statuses=dict(statuses), timed_out_per_problem=dict(sorted(timed_out.items())),
                 sets=set_scores(results, ok, bootstrap, plus))


def problem_counts(results: Sequence[SampleResult],
                   passed: Callable[[SampleResult], bool]) -> dict[str, tuple[int, int]]:
    """(samples, passes) per problem, in the order the problems first appear; ``passed`` says what a pass is."""
    counts: dict[str, tuple[int, int]] = {}
    for result in results:
        n, c = counts.get(result.task_id, (0, 0))
        counts[result.task_id] = (n + 1, c + int(passed(result)))
    return counts


def set_scores(results: Sequence[SampleResult], ks: Sequence[int], bootstrap: int, plus: SetScore
               ) -> dict[str, SetScore]:
    """EvalPlus's two figures: a sample passes ``base`` when its base inputs pass, ``plus`` when every set passes
    (``evalplus.evaluate``: ``base_status == plus_status == PASS``), which is the run's own pass: ``plus`` is the
    run's own score, given, not estimated again."""
    out: dict[str, SetScore] = {}
    if any("base" in r.sets for r in results):
        base = problem_counts(results, lambda r: r.sets["base"].passed if "base" in r.sets else r.passed)
        out["base"] = SetScore(pass_at={k: estimate(base, k, bootstrap=bootstrap) for k in ks},
                               n_passed=sum(c for _, c in base.values()))
    if any("plus" in r.sets for r in results):
        out["plus"] = plus
    return out
