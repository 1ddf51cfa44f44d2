"""A run's history across resumes: every invocation that worked on a run directory, and the totals.

Why: a run interrupted and resumed is one run made by several invocations. The record must keep the truth
of all of them: a resume with nothing left to generate used to rewrite ``record.json`` with
``generate: 0.0`` and ``tokens_per_s: None``, losing the real generation time. Each invocation
is listed with what it generated and how long it took; an invocation that was killed before it could write
(SIGKILL, power loss) is marked ``interrupted`` by the next one, and every stopped one's completions are counted
from the rows that carry its ``invocation_id`` (under data parallelism, in every rank's file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalsuite.runs.record import RunRecord


@dataclass
class Invocation:
    invocation_id: str
    started_at: str
    status: str = "running"  # running, complete, interrupted, failed
    finished_at: str | None = None
    completions_generated: int = 0
    tokens_generated: int = 0
    generate_s: float | None = 0.0  # None: unknown (the invocation was killed before it could say)
    load_s: float | None = None
    warning: str | None = None  # e.g. decoding far below the expected rate (evalsuite.progress)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def earlier_invocations(previous: RunRecord | None,
                        saved_rows: Callable[[], Iterable[Mapping[str, Any]]]) -> list[dict]:
    """The invocations an earlier record lists (records older than this list: one, rebuilt from its fields);
    any still ``running`` was cut off, and it and any stopped one (``interrupted``, ``failed``) are counted from
    the saved rows that carry its id (``saved_rows`` reads them, only then)."""
    if not previous:
        return []
    listed = [dict(entry) for entry in previous.invocations]
    if not listed and previous.invocation_id:
        stats, timings = previous.generation_stats or {}, previous.timings_s or {}
        complete = previous.status == "complete"
        listed = [Invocation(previous.invocation_id, previous.started_at,
                             "complete" if complete else "running", previous.finished_at,
                             int(stats.get("completions_generated_now", 0)),
                             int(stats.get("tokens_generated_now", 0)),
                             timings.get("generate") if complete else None, timings.get("load")).to_json()]
    # Cut off ("running": killed before it could write) or stopped ("interrupted", "failed": under data
    # parallelism rank 0 wrote what its own shard had kept, the other ranks still saving theirs): the rows that
    # carry its id, in every rank's file, say what it made.
    stopped = {entry["invocation_id"]: entry for entry in listed
               if entry.get("status") in ("running", "interrupted", "failed")}
    if stopped:
        made = made_by(saved_rows(), stopped)
        for invocation_id, entry in stopped.items():
            completions, tokens = made[invocation_id]
            entry.update(completions_generated=completions, tokens_generated=tokens)
            if entry.get("status") == "running":
                entry.update(status="interrupted", generate_s=entry.get("generate_s") or None)
    return listed


def made_by(rows: Iterable[Mapping[str, Any]], invocation_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
    """What each of ``invocation_ids`` made, read from the saved rows that carry its id: (completions, tokens)."""
    made = {invocation_id: [0, 0] for invocation_id in invocation_ids}
    for row in rows:
        counts = made.get(str(row.get("invocation_id")))
        if counts is not None:
            counts[0] += 1
            counts[1] += int(row.get("num_tokens") or 0)
    return {invocation_id: (completions, tokens) for invocation_id, (completions, tokens) in made.items()}


def totals(invocations: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Completions, tokens and generation seconds summed over every invocation; tokens/s over those whose
    time is known."""
    entries = list(invocations)
    timed = [e for e in entries if e.get("generate_s") is not None and e.get("tokens_generated")]
    seconds = sum(float(e["generate_s"]) for e in timed)
    timed_tokens = sum(int(e["tokens_generated"]) for e in timed)
    return {
        "invocations": len(entries),
        "completions_generated": sum(int(e.get("completions_generated") or 0) for e in entries),
        "tokens_generated": sum(int(e.get("tokens_generated") or 0) for e in entries),
        "generate_s": round(sum(float(e.get("generate_s") or 0.0) for e in entries), 3),
        "tokens_per_s": round(timed_tokens / seconds, 2) if seconds > 0 and timed_tokens else None,
    }
