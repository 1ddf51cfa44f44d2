"""The finishing path of a run, shared by ``run`` and ``evaluate``: score -> summary.json -> record.json ->
report.html -> the leaderboard entry.

Why one path: ``evaluate`` scores completions someone else generated, ``run`` its own; both must label a
partial problem set, link the page back to the leaderboard, and build the leaderboard entry the same way,
or the two commands' rows of one model would disagree. What differs is said in :class:`RunFacts` (what the
views say about the run) and in the summary fields each command adds; ``run`` also completes its
:class:`~evalsuite.runs.record.RunRecord`, which ``evaluate`` does not have.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.jsonl import atomic_write_json
from evalsuite.records import SampleResult, SamplingParams
from evalsuite.reporting.entries import RunSummary
from evalsuite.reporting.model import ProblemSubset
from evalsuite.reporting.views import write_run_views
from evalsuite.reporting.views.contract import RunHeader, sample_views
from evalsuite.runs.record import RECORD_FILE, RunRecord
from evalsuite.scoring import Score, ScoreSummary, score
from evalsuite.scoring.summary import SUMMARY_FILE, scoring_digest
from evalsuite.tasks.task import Problem, Task


@dataclass(frozen=True)
class RunFacts:
    """What the run page and the leaderboard entry say about one scored run, whichever command scored it."""

    run_id: str
    model: str  # the display name
    model_id: str  # as the page shows it
    task: str
    dataset_sha256: str
    prompt_template: str
    sampling: SamplingParams
    seed: int | None  # the sampling seed; None where it is not known (evaluate's samples file)
    problem_set: ProblemSubset | None  # evalsuite.runs.identity.problem_set
    badges: tuple[str, ...] = ()
    details: Mapping[str, str] = field(default_factory=dict)
    hardware: str | None = None  # hardware_summary(); None: this machine's, read when the entry is built
    weights: str | None = None
    prompt_style: str | None = None
    strip_prompt: bool = False
    protocol: str | None = None  # a preset's asking beyond style and stripping (Asking.protocol)
    date: str | None = None  # None: when the entry is built
    board_model_id: str | None = None  # the leaderboard's model id where it differs from the page's
    other_data: bool = False  # the task's data is not its own (Task.runs_on_other_data)

    @classmethod
    def from_record(cls, record: RunRecord) -> RunFacts:
        """A generated run's facts, all read from its record."""
        from evalsuite.environment import hardware_summary

        sampling, hardware = record.sampling, hardware_summary(record.environment["hardware"])
        details = {
            "finished": str(record.finished_at or ""), "model id": str(record.model.id),
            "sampling": sampling.describe(),
            "prompt style": f"{record.prompt['style']} ({record.prompt['reason']})",
            "hardware": hardware,
            "sandbox": str((record.execution or {}).get("mode", "")),
            "timings": ", ".join(f"{k} {v:g} s" for k, v in (record.timings_s or {}).items()),
            "evalsuite": str(record.environment["evalsuite"]),
            "files": "record.json, completions.jsonl, results.jsonl, summary.json",
        }
        return cls(run_id=record.run_id, model=record.model.shown_name, model_id=str(record.model.id),
                   task=record.task.name, dataset_sha256=record.task.dataset_sha256,
                   prompt_template=record.task.prompt_template, sampling=sampling, seed=sampling.seed,
                   problem_set=record.task.problem_set, badges=record.badges(), details=details,
                   hardware=hardware, weights=record.weights, prompt_style=record.prompt["style"],
                   strip_prompt=record.prompt["strip_prompt"], protocol=record.prompt.get("protocol"),
                   date=record.finished_at,
                   other_data=record.task.other_data)

    def leaderboard_summary(self, scored: ScoreSummary, page: Path) -> RunSummary:
        """What :func:`evalsuite.reporting.entries.entry_from_run` builds the run's leaderboard entry from (with
        ``scored``'s digest as summary.json holds it: the entry tells a page scored again since by it)."""
        from evalsuite.environment import hardware, hardware_summary

        return RunSummary(
            model=self.model, model_id=self.board_model_id or self.model_id, task=self.task,
            dataset_sha256=self.dataset_sha256, prompt_template=self.prompt_template, sampling=self.sampling,
            seed=self.seed,
            score=scored, run_id=self.run_id, problem_set=self.problem_set,
            hardware=self.hardware if self.hardware is not None else hardware_summary(hardware()),
            run_page=str(page.resolve()), weights=self.weights or None, prompt_style=self.prompt_style or None,
            strip_prompt=bool(self.strip_prompt), protocol=self.protocol or None, date=self.date or None,
            other_data=self.other_data, scoring_sha256=scoring_digest(scored.to_json()))


@dataclass(frozen=True)
class ScoredRun:
    """A run whose samples have been executed: what the finishing path needs besides its facts."""

    folder: Path
    task: Task
    executed: Any  # builds each sample's program: the task, or evalsuite.protocol.asking.SolutionTask
    problems: Sequence[Problem]
    results: Sequence[SampleResult]
    samples: Iterable[Mapping[str, Any]]  # the completions as saved (rows with task_id, completion_id...)
    prompts: Mapping[str, str]  # task_id -> the prompt the page shows
    leaderboard_dir: Path | None  # where the page's link back points (None: no link)


@dataclass(frozen=True)
class Finished:
    score: Score
    summary: ScoreSummary  # summary.json's content, typed
    facts: RunFacts
    page: Path
    record: RunRecord | None = None

    def leaderboard_summary(self) -> RunSummary:
        return self.facts.leaderboard_summary(self.summary, self.page)


def finish(run: ScoredRun, ks: Sequence[int], summary_fields: Mapping[str, Any], facts: RunFacts | None = None,
           complete: Callable[[ScoreSummary, float], RunRecord] | None = None) -> Finished:
    """Score ``run``, write summary.json (the score then ``summary_fields``), then report.html, then (``run`` only)
    record.json as ``complete(summary, score_seconds)`` finishes it: written last, a record that says "complete"
    has every file beside it. The facts are ``facts``, or read from the completed record."""
    started = time.perf_counter()
    scored = score(run.results, ks)
    summary = scored.summary(summary_fields)
    atomic_write_json(run.folder / SUMMARY_FILE, summary.to_json())
    record = None
    if complete is not None:
        record = complete(summary, time.perf_counter() - started)
        facts = RunFacts.from_record(record)
    if facts is None:
        raise ValueError("finish() needs the run's facts or a record to read them from")
    page = write_page(run, facts, summary)
    if record is not None:
        atomic_write_json(run.folder / RECORD_FILE, record.to_json())
    return Finished(score=scored, summary=summary, facts=facts, page=page, record=record)


def write_page(run: ScoredRun, facts: RunFacts, summary: ScoreSummary) -> Path:
    """The run's pages (:mod:`evalsuite.reporting.views`: report.html and any other registered run view), next to
    its summary; returns report.html."""
    by_id = {p.task_id: p for p in run.problems}
    views = sample_views(run.samples, (r.to_json() for r in run.results),
                         lambda task_id, text: run.executed.build_program(by_id[task_id], text).candidate)
    header = RunHeader(model=facts.model, task=run.task.name, run_id=facts.run_id, model_id=facts.model_id,
                       badges=facts.badges, details=facts.details,
                       leaderboard_page=leaderboard_link(run.folder, run.leaderboard_dir))
    return write_run_views(run.folder, header, summary, views, run.prompts)


def leaderboard_link(folder: Path, leaderboard_dir: Path | None) -> str | None:
    """The leaderboard's index.html relative to a run's folder, for the page's link back."""
    if leaderboard_dir is None:
        return None
    return Path(os.path.relpath(Path(leaderboard_dir).resolve() / "index.html", Path(folder).resolve())).as_posix()


def add_to_leaderboard(directory: Path, summaries: Sequence[RunSummary]) -> list[Any]:
    """Add the runs' entries to the leaderboard in ``directory`` in one update; returns the new entries (the
    ``--fail-under`` gate reads today's entries, not older, better ones)."""
    from evalsuite.reporting.entries import entry_from_run
    from evalsuite.reporting.publish import update_leaderboard

    entries = [entry_from_run(summary) for summary in summaries]
    update_leaderboard(Path(directory), entries)
    return entries


def entries_saved(directory: Path, summaries: Sequence[RunSummary]) -> list[Any]:
    """The runs' entries as the leaderboard in ``directory`` holds them now. A stop that came during
    :func:`add_to_leaderboard` found the file saved or not: what a stopped command reports reads which."""
    from evalsuite.reporting.store import LEADERBOARD_FILE, load_leaderboard

    wanted = {(summary.model, summary.task, summary.run_id) for summary in summaries}
    try:
        held = load_leaderboard(Path(directory) / LEADERBOARD_FILE)
    except Exception:  # noqa: BLE001 - unreadable now: not shown as saved
        return []
    return [entry for entry in held if (entry.model, entry.task, entry.run_id) in wanted]
