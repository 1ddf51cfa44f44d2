"""Building a leaderboard entry from one finished (model, task) run, checked against the file's format at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, ClassVar

from evalsuite.errors import EvalsuiteError
from evalsuite.records import SamplingParams
from evalsuite.reporting.model import LeaderboardEntry, Metric, ProblemSubset, settings_for, utc_now_iso
from evalsuite.reporting.store import document, validate_document
from evalsuite.scoring import Score, ScoreSummary
from evalsuite.scoring.passk import PassAtK
from evalsuite.version import __version__


def to_utc_iso(text: str) -> str:
    """Any ISO 8601 timestamp (``...Z``, ``...+02:00``; naive means UTC) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise EvalsuiteError(f"date {text!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class RunSummary:
    """One finished (model, task) run, as its leaderboard entry is built from it (see :func:`entry_from_run`)."""

    model: str  # display name
    model_id: str  # resolved hub id or local path
    task: str
    dataset_sha256: str  # hex; "" if unknown
    prompt_template: str
    sampling: SamplingParams
    score: ScoreSummary
    run_id: str
    hardware: str  # e.g. "1x NVIDIA H100 80GB HBM3" or "cpu"
    date: str | None = None  # ISO 8601 with a UTC offset, stored as UTC ``...Z``; None: now
    evalsuite_version: str | None = None  # None: this version
    weights: str | None = None  # the precision the model ran in
    prompt_style: str | None = None  # "base" / "instruct"
    strip_prompt: bool = False
    protocol: str | None = None  # a preset's asking beyond style and stripping (EvalPlus's direct completion)
    problem_set: ProblemSubset | None = None  # a --limit run's subset
    run_page: str | None = None  # the run's report.html; made relative to the leaderboard folder when added
    seed: int | None = None  # the sampling seed; None where it is not known
    other_data: bool = False  # the task's data is not its own: labelled in every view
    scoring_sha256: str | None = None  # scoring_digest of the summary.json written with it (the entry keeps it)

    REQUIRED: ClassVar[tuple[str, ...]] = ("model", "model_id", "task", "dataset_sha256", "prompt_template",
                                           "sampling", "score", "run_id", "hardware")

    @classmethod
    def from_mapping(cls, run_summary: Mapping[str, Any]) -> RunSummary:
        """The documented dict form (:func:`entry_from_run`); ``score`` a :class:`~evalsuite.scoring.Score`, a
        :class:`~evalsuite.scoring.ScoreSummary` or summary.json's content."""
        missing = [name for name in cls.REQUIRED if name not in run_summary]
        if missing:
            raise EvalsuiteError(f"cannot build a leaderboard entry: run summary lacks {', '.join(missing)}")
        sampling, seed = _sampling(run_summary["sampling"])
        return cls(model=run_summary["model"], model_id=run_summary["model_id"], task=run_summary["task"],
                   dataset_sha256=run_summary["dataset_sha256"], prompt_template=run_summary["prompt_template"],
                   sampling=sampling, seed=seed, score=score_summary(run_summary["score"]),
                   run_id=run_summary["run_id"], hardware=run_summary["hardware"],
                   date=run_summary.get("date") or None,
                   evalsuite_version=run_summary.get("evalsuite_version") or None,
                   weights=run_summary.get("weights"), prompt_style=run_summary.get("prompt_style"),
                   strip_prompt=bool(run_summary.get("strip_prompt")), protocol=run_summary.get("protocol") or None,
                   problem_set=ProblemSubset.from_json(run_summary.get("problem_set")),
                   run_page=run_summary.get("run_page") or None,
                   scoring_sha256=run_summary.get("scoring_sha256") or None)


def _sampling(given: SamplingParams | Mapping[str, Any]) -> tuple[SamplingParams, int | None]:
    """The sampling and its seed, from a ``SamplingParams`` or its ``to_dict()`` (whose seed may be unknown: None);
    a dict lacking a setting that keys the entry is refused rather than filled with a default."""
    if isinstance(given, SamplingParams):
        return given, given.seed
    lacking = [name for name in ("n", "temperature", "top_p", "top_k", "max_new_tokens") if name not in given]
    if lacking:
        raise EvalsuiteError(f"sampling settings lack {', '.join(lacking)}")
    return SamplingParams.from_dict(given), given.get("seed")


def score_summary(score: Score | ScoreSummary | Mapping[str, Any]) -> ScoreSummary:
    """A score in any of its forms, typed."""
    if isinstance(score, ScoreSummary):
        return score
    if isinstance(score, Score):
        return score.summary()
    return ScoreSummary.from_json(score)


def _metrics(score: ScoreSummary) -> tuple[dict[str, Metric], dict[str, str], dict[str, Metric]]:
    """pass@k with its interval, what was not computable and why, and (EvalPlus-style runs) the base figures."""
    def named(pass_at: Mapping[int, PassAtK]) -> dict[str, Metric]:
        return {f"pass@{k}": Metric(float(p.value), float(p.ci_low), float(p.ci_high), p.ci_method)
                for k, p in pass_at.items()}

    not_computable = {f"pass@{k}": reason for k, reason in score.not_computable.items()}
    base = score.sets.get("base")
    return named(score.pass_at), not_computable, named(base.pass_at) if base else {}


def entry_from_run(run_summary: RunSummary | Mapping[str, Any]) -> LeaderboardEntry:
    """Build the leaderboard entry for one finished (model, task) run: a :class:`RunSummary`, or its dict form
    with the same keys (``score``: a ``Score``, a ``ScoreSummary`` or summary.json's content)."""
    run = run_summary if isinstance(run_summary, RunSummary) else RunSummary.from_mapping(run_summary)
    settings = settings_for(run.sampling, run.prompt_template, run.dataset_sha256, run.weights, run.prompt_style,
                            run.strip_prompt, run.problem_set, run.other_data, run.protocol)
    metrics, not_computable, base_metrics = _metrics(run.score)
    if not metrics:
        raise EvalsuiteError(f"{run.model} on {run.task}: no pass@k could be computed "
                             f"({'; '.join(not_computable.values()) or 'empty score'})")
    entry = LeaderboardEntry(
        model=str(run.model), model_id=str(run.model_id), task=str(run.task),
        dataset_sha256=settings.dataset_sha256, settings=settings, metrics=metrics, n_problems=run.score.n_problems,
        date=to_utc_iso(run.date) if run.date else utc_now_iso(),
        run_id=str(run.run_id),
        hardware=str(run.hardware),
        evalsuite_version=str(run.evalsuite_version or __version__),
        not_computable=not_computable, seed=None if run.seed is None else int(run.seed),
        run_page=str(run.run_page) if run.run_page else None,
        base_metrics=base_metrics,
        scoring_sha256=run.scoring_sha256,
    )
    validate_document(document([entry]), "<new entry>")  # fail at the source, not at the next read
    return entry
