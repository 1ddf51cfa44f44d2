"""Building a leaderboard entry from one finished (model, task) run, checked against the file's format at once."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.reporting.model import METRIC_NAME, LeaderboardEntry, Metric, settings_for, utc_now_iso
from evalsuite.reporting.store import document, validate_document
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


def _metrics_from_score(score: Any) -> tuple[dict[str, Metric], dict[str, str], int]:
    """Accept a :class:`~evalsuite.scoring.Score` or its ``summary_json()``."""
    if hasattr(score, "pass_at"):
        metrics = {f"pass@{k}": Metric(p.value, p.ci_low, p.ci_high, p.ci_method) for k, p in score.pass_at.items()}
        not_computable = {f"pass@{k}": reason for k, reason in score.not_computable.items()}
        return metrics, not_computable, len(score.per_problem)
    ci95 = score.get("ci95", {})
    methods = score.get("ci_method", {})
    metrics = {}
    for name, value in score.items():
        if METRIC_NAME.match(name):
            if name not in ci95:
                raise EvalsuiteError(f"score summary has {name} but no ci95 for it")
            low, high = ci95[name]
            metrics[name] = Metric(float(value), float(low), float(high), methods.get(name))
    return metrics, dict(score.get("not_computable", {})), int(score["n_problems"])


def _base_metrics(score: Any) -> dict[str, Metric]:
    """EvalPlus-style runs: the base figures (``Score.sets["base"]``, or ``sets.base`` of its summary_json())."""
    if hasattr(score, "sets"):
        base = score.sets.get("base")
        return {f"pass@{k}": Metric(p.value, p.ci_low, p.ci_high, p.ci_method)
                for k, p in (base.pass_at.items() if base else [])}
    base = (score.get("sets") or {}).get("base") or {}
    ci95 = base.get("ci95", {})
    return {name: Metric(float(value), float(ci95[name][0]), float(ci95[name][1]), None)
            for name, value in base.items() if METRIC_NAME.match(name) and name in ci95}


def entry_from_run(run_summary: Mapping[str, Any]) -> LeaderboardEntry:
    """Build the leaderboard entry for one finished (model, task) run.

    ``run_summary`` keys:

    * ``model`` (str): display name. ``model_id`` (str): resolved hub id or local path.
    * ``task`` (str), ``dataset_sha256`` (str, hex; "" if unknown), ``prompt_template`` (str).
    * ``sampling``: a ``SamplingParams`` or its ``to_dict()`` (n, temperature, top_p, top_k,
      max_new_tokens, seed).
    * ``score``: a ``Score`` or its ``summary_json()`` (needs pass@k values, ci95, n_problems).
    * ``run_id`` (str), ``hardware`` (str, e.g. "1x NVIDIA H100 80GB HBM3" or "cpu").
    * optional: ``date`` (ISO 8601 with a UTC offset, stored as UTC ``...Z``; default now),
      ``evalsuite_version`` (default this version), ``weights`` (the precision the model ran in),
      ``prompt_style`` ("base"/"instruct"), ``strip_prompt`` (bool), ``problem_set`` (a --limit run's subset:
      n_problems, of, ids_sha256), ``run_page`` (path of the run's report.html; made relative to the
      leaderboard folder when the entry is added).
    """
    required = ("model", "model_id", "task", "dataset_sha256", "prompt_template", "sampling", "score",
                "run_id", "hardware")
    missing = [name for name in required if name not in run_summary]
    if missing:
        raise EvalsuiteError(f"cannot build a leaderboard entry: run summary lacks {', '.join(missing)}")
    settings = settings_for(run_summary["sampling"], run_summary["prompt_template"],
                            run_summary["dataset_sha256"], run_summary.get("weights"),
                            run_summary.get("prompt_style"), bool(run_summary.get("strip_prompt")),
                            run_summary.get("problem_set"))
    metrics, not_computable, n_problems = _metrics_from_score(run_summary["score"])
    base_metrics = _base_metrics(run_summary["score"])
    if not metrics:
        raise EvalsuiteError(f"{run_summary['model']} on {run_summary['task']}: no pass@k could be computed "
                             f"({'; '.join(not_computable.values()) or 'empty score'})")
    sampling = run_summary["sampling"]
    seed = sampling.seed if hasattr(sampling, "seed") else sampling.get("seed")
    entry = LeaderboardEntry(
        model=str(run_summary["model"]), model_id=str(run_summary["model_id"]), task=str(run_summary["task"]),
        dataset_sha256=settings["dataset_sha256"], settings=settings, metrics=metrics,
        n=settings["n"], n_problems=n_problems, temperature=settings["temperature"],
        date=to_utc_iso(run_summary["date"]) if run_summary.get("date") else utc_now_iso(),
        run_id=str(run_summary["run_id"]),
        hardware=str(run_summary["hardware"]),
        evalsuite_version=str(run_summary.get("evalsuite_version") or __version__),
        not_computable=not_computable, seed=None if seed is None else int(seed),
        run_page=str(run_summary["run_page"]) if run_summary.get("run_page") else None,
        base_metrics=base_metrics,
    )
    validate_document(document([entry]), "<new entry>")  # fail at the source, not at the next read
    return entry

