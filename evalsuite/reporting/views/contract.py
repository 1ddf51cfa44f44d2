"""What a report view is, and what it is drawn from: a new view is one module that defines a ``VIEW`` of one
of these kinds, registered in :mod:`evalsuite.reporting.views` (the one place).

Two kinds, by what they show: a :class:`LeaderboardView` draws every stored entry (a page in the leaderboard
folder), a :class:`RunView` draws one run (a page in the run's folder) from a :class:`RunReport`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsuite.reporting.model import LeaderboardEntry
from evalsuite.scoring.summary import ProblemTally, ScoreSummary


@dataclass(frozen=True)
class SampleView:
    """One sample as the page shows it: what the model wrote, what ran, and the verdict."""

    task_id: str
    completion_id: int
    status: str  # "passed", "failed", "timed out"
    result: str  # the trusted checker's verdict line
    duration_s: float
    flags: tuple[str, ...] = ()
    sample_error: str = ""  # the candidate's own exception text (untrusted)
    raw: str = ""  # the model's untruncated output
    program: str = ""  # what the sandbox ran
    finish_reason: str = ""
    num_tokens: int | None = None
    # The trusted checker's account of the first failure: statement, call, returned (see sandbox.pool.Outcome)
    failure_detail: Mapping[str, str] = field(default_factory=dict)


DETAIL_FIELDS = (("statement", "failed statement"), ("call", "call"), ("returned", "returned"))
MAX_DETAIL_CHARS = 400  # each field of a failure detail, as shown (the checker writes at most 200)


def count_of(value: Any) -> int | None:
    """A count from a samples or results file (``num_tokens``): a non-negative int, or nothing. A hand-written
    file may hold any JSON there; it is shown only when it is a number."""
    return value if type(value) is int and value >= 0 else None


def detail_of(value: Any) -> dict[str, str]:
    """A results file's ``failure_detail``: only the known fields, as text."""
    if not isinstance(value, Mapping):
        return {}
    return {key: str(value[key])[:MAX_DETAIL_CHARS] for key, _ in DETAIL_FIELDS if key in value and value[key] is not None}


@dataclass(frozen=True)
class RunHeader:
    """What the page's title block says about the run."""

    model: str
    task: str
    run_id: str
    model_id: str = ""
    badges: tuple[str, ...] = ()  # e.g. ("partial 10/164", "instruct")
    details: Mapping[str, str] = field(default_factory=dict)  # label -> value (date, hardware, sampling...)
    leaderboard_page: str | None = None  # relative link back


def sample_views(completions: Iterable[Mapping[str, Any]], results: Iterable[Mapping[str, Any]],
                 program_of: Callable[[str, str], str]) -> list[SampleView]:
    """Join completions and verdicts on (task_id, completion_id); ``program_of(task_id, completion)`` is the
    program the sandbox ran for that completion."""
    by_key = {(row["task_id"], row["completion_id"]): row for row in completions}
    views = []
    for result in results:
        row = by_key.get((result["task_id"], result["completion_id"]), {})
        completion = str(row.get("completion", ""))
        views.append(SampleView(
            task_id=str(result["task_id"]), completion_id=int(result["completion_id"]),
            status=str(result.get("status") or ("passed" if result.get("passed") else "failed")),
            result=str(result.get("result", "")), duration_s=float(result.get("duration_s", 0.0)),
            flags=tuple(result.get("flags", ())), sample_error=str(result.get("sample_error", "")),
            raw=str(row.get("raw_completion", completion)), program=program_of(result["task_id"], completion),
            finish_reason=str(row.get("finish_reason", "")), num_tokens=count_of(row.get("num_tokens")),
            failure_detail=detail_of(result.get("failure_detail"))))
    return views


@dataclass(frozen=True)
class RunReport:
    """Everything a run view may show: the title block, the run's score summary (summary.json's content, typed), its
    samples and the prompts."""

    header: RunHeader
    summary: ScoreSummary
    samples: Sequence[SampleView]
    prompts: Mapping[str, str]


@dataclass(frozen=True)
class RunView:
    """A page drawn from one run, written as ``file`` in the run's folder."""

    name: str
    file: str
    render: Callable[[RunReport], str]


# each entry's problem tallies, by LeaderboardEntry.key
Tallies = Mapping[tuple[str, str, str], Mapping[str, ProblemTally]]


@dataclass(frozen=True)
class LeaderboardData:
    """Everything a leaderboard view may show: the stored entries and, for each entry whose run's summary could
    be read, its problems' tallies (:class:`~evalsuite.scoring.ProblemTally`, by :attr:`LeaderboardEntry.key`). The
    tallies are read by storage (:func:`evalsuite.reporting.store.run_tallies`), so that a view draws values and
    never opens a file."""

    entries: Sequence[LeaderboardEntry]
    tallies: Tallies = field(default_factory=dict)


@dataclass(frozen=True)
class LeaderboardView:
    """A page drawn from all stored entries, written as ``file`` in the leaderboard folder."""

    name: str
    file: str
    render: Callable[[LeaderboardData], str]


__all__ = ["DETAIL_FIELDS", "LeaderboardData", "LeaderboardView", "ProblemTally", "RunHeader", "RunReport", "RunView",
           "SampleView", "ScoreSummary", "Tallies", "count_of", "detail_of", "sample_views"]
