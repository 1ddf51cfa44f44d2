"""A scored run as the later stages receive it: :class:`ScoreSummary`, typed, and its file ``summary.json``.

The scoring stage makes it (:meth:`evalsuite.scoring.Score.summary`); the run's pages draw it, the leaderboard entry
is built from it, the leaderboard reads its problem tallies back from the file. :meth:`ScoreSummary.to_json` is the
file's content, key for key in the order it has always had; :meth:`ScoreSummary.from_json` reads it back, so that
``from_json(data).to_json() == data`` for every file this program wrote.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.scoring.passk import PassAtK

SUMMARY_FILE = "summary.json"  # in the run's folder, next to its report.html
PASS_AT = re.compile(r"^pass@([1-9][0-9]*)$")  # a pass@k name, here and on the leaderboard


def _k_of(name: str) -> int | None:
    found = PASS_AT.match(name)
    return int(found.group(1)) if found else None


def _pass_at_json(pass_at: Mapping[int, PassAtK]) -> dict[str, Any]:
    """``pass@k`` values in order of k, then their intervals under ``ci95``: how every score in the file starts."""
    ks = sorted(pass_at.items())
    out: dict[str, Any] = {f"pass@{k}": v.value for k, v in ks}
    out["ci95"] = {f"pass@{k}": [v.ci_low, v.ci_high] for k, v in ks}
    return out


@dataclass(frozen=True)
class ProblemTally:
    """One problem of one run: how many of its samples passed, of how many (``per_problem``'s ``c`` and ``n``)."""

    passed: int
    n: int

    def to_json(self) -> dict[str, int]:
        return {"n": self.n, "c": self.passed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProblemTally:
        return cls(passed=int(data["c"]), n=int(data["n"]))


def tallies_from_json(per_problem: Mapping[str, Any]) -> dict[str, ProblemTally]:
    """``per_problem`` of a summary.json: task_id -> its tally (raises KeyError, TypeError, ValueError or
    AttributeError on a malformed one)."""
    return {str(task_id): ProblemTally.from_json(counts) for task_id, counts in per_problem.items()}


@dataclass(frozen=True)
class SetScore:
    """pass@k over one of EvalPlus's input sets: ``base`` (the base inputs passed) and ``plus`` (base and plus
    inputs passed, EvalPlus's "+" figure, which is also the run's own pass@k)."""

    pass_at: Mapping[int, PassAtK]
    n_passed: int

    def to_json(self) -> dict[str, Any]:
        out = _pass_at_json(self.pass_at)
        out["n_passed"] = self.n_passed
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetScore:
        """The file holds no interval method for a set: read back, each pass@k's ``ci_method`` is None. A pass@k
        without its interval is left out."""
        ci95 = data.get("ci95") or {}
        pass_at = {k: PassAtK(k, value, ci95[name][0], ci95[name][1], None) for name, value in data.items()
                   if (k := _k_of(name)) is not None and name in ci95}
        return cls(pass_at=pass_at, n_passed=int(data.get("n_passed", 0)))


# summary.json's keys the score writes (with the pass@k ones); the others are the command's own fields.
SCORE_KEYS = ("ci95", "ci_method", "not_computable", "n_samples", "n_problems", "n_passed", "n_failed",
              "n_timed_out", "timed_out_per_problem", "flags", "sets", "per_problem")


def scoring_digest(summary: Mapping[str, Any]) -> str:
    """sha256 of every problem's tally in a summary.json (its content, or ``ScoreSummary.to_json()``): what decides
    its pass@k for every k. A leaderboard entry keeps it, so that a run page whose folder was scored again since
    (by a rerun for another leaderboard or none) is told apart even where its pass@k reads the same (other
    problems passed), and not where only the k asked for, an interval or a failure's kind changed."""
    return hashlib.sha256(json.dumps(summary.get("per_problem"), sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class ScoreSummary:
    """What scoring hands on: pass@k with its intervals, what could not be computed and why, the verdict counts,
    each problem's tally, and (EvalPlus-style tasks) the base and plus sets. ``fields`` are what the command adds
    to summary.json after the score (run_id, model, task, sandbox_mode...), written as given."""

    pass_at: Mapping[int, PassAtK]
    not_computable: Mapping[int, str]  # k -> the reason
    n_samples: int
    n_problems: int
    n_passed: int
    n_failed: int
    n_timed_out: int
    per_problem: Mapping[str, ProblemTally]
    timed_out_per_problem: Mapping[str, int] = field(default_factory=dict)  # task_id -> samples timed out
    flags: Mapping[str, int] = field(default_factory=dict)  # hack detections by kind
    sets: Mapping[str, SetScore] = field(default_factory=dict)  # EvalPlus-style tasks: "base" and "plus"
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self, per_problem: bool = True) -> dict[str, Any]:
        """summary.json's content (``per_problem=False``: without the per-problem tallies, as record.json keeps it)."""
        out = _pass_at_json(self.pass_at)
        out["ci_method"] = {f"pass@{k}": v.ci_method for k, v in sorted(self.pass_at.items())}
        out["not_computable"] = {f"pass@{k}": reason for k, reason in sorted(self.not_computable.items())}
        out["n_samples"] = self.n_samples
        out["n_problems"] = self.n_problems
        out["n_passed"], out["n_failed"], out["n_timed_out"] = self.n_passed, self.n_failed, self.n_timed_out
        out["timed_out_per_problem"] = dict(self.timed_out_per_problem)
        out["flags"] = dict(self.flags)
        if self.sets:
            out["sets"] = {name: set_score.to_json() for name, set_score in self.sets.items()}
        if per_problem:
            out["per_problem"] = {task_id: tally.to_json() for task_id, tally in self.per_problem.items()}
        out.update(self.fields)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoreSummary:
        """Read a summary.json back. Counts missing from an older file read as 0 (``n_problems``: the tallies');
        a pass@k without its interval is an error."""
        ci95, methods = data.get("ci95") or {}, data.get("ci_method") or {}
        pass_at = {}
        for name, value in data.items():
            k = _k_of(name)
            if k is None:
                continue
            if name not in ci95:
                raise EvalsuiteError(f"score summary has {name} but no ci95 for it")
            low, high = ci95[name]
            pass_at[k] = PassAtK(k, value, low, high, methods.get(name))
        not_computable = {k: str(reason) for name, reason in (data.get("not_computable") or {}).items()
                          if (k := _k_of(name)) is not None}
        per_problem = tallies_from_json(data.get("per_problem") or {})
        return cls(pass_at=pass_at, not_computable=not_computable, n_samples=int(data.get("n_samples", 0)),
                   n_problems=int(data.get("n_problems", len(per_problem))), n_passed=int(data.get("n_passed", 0)),
                   n_failed=int(data.get("n_failed", 0)), n_timed_out=int(data.get("n_timed_out", 0)),
                   per_problem=per_problem, timed_out_per_problem=dict(data.get("timed_out_per_problem") or {}),
                   flags=dict(data.get("flags") or {}),
                   sets={str(name): SetScore.from_json(s) for name, s in (data.get("sets") or {}).items()},
                   fields={key: value for key, value in data.items()
                           if key not in SCORE_KEYS and _k_of(key) is None})
