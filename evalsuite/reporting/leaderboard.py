"""The leaderboard: one entry per (model, task, settings key), kept in ``leaderboard/leaderboard.json``.

The file is validated against ``evalsuite/reporting/leaderboard.schema.json`` (:mod:`.schema`) on every
read and every write, so a hand-broken file is reported (file + JSON path) instead of silently rendered or gated on.

Which runs replace each other is decided by :func:`settings_key`: two runs of the same model on the same
task share an entry exactly when the settings that change the number are equal:

* ``n`` (samples per problem: which pass@k exist and how noisy they are), ``temperature``, ``top_p``,
  ``top_k`` and ``max_new_tokens`` (what is sampled), the task's ``prompt_template`` (what the model
  sees) and the ``dataset_sha256`` (which problems are scored).
* Under greedy decoding (temperature 0) ``top_p`` and ``top_k`` are unused, so they are normalised to
  their neutral values (1.0, 0) and do not split entries.
* The ``seed`` is left out on purpose: another seed is another measurement of the same configuration,
  so a rerun replaces the entry rather than piling up near-duplicates (it is still recorded).
* Hardware, batch size, dtype, backend and the evalsuite version are recorded but not keyed: they should
  not change the number, and when they do that is a finding to compare against, not a separate row.
* Quantized weights are the exception (schema 1.1): an int8 or nf4 load is a lossy copy of the model,
  and the memory planner may choose one on a small GPU. Such runs carry ``settings.weights`` ("int8" or
  "nf4"), which is keyed and always shown (``gpt-j-6b (nf4)``), so a quantized number never stands in
  for the model's own. Half-precision runs have no ``weights`` field and keep their 1.0 keys.
* Schema 1.2 keys how the model was asked and on which problems, again only where it differs from the
  1.0 protocol, so older keys stay valid: ``prompt_style: "instruct"`` (chat template and code extraction),
  ``strip_prompt: true`` (bigcode's stripped prompts), and ``problem_set`` for a ``--limit`` run (which
  problems of how many). A partial run therefore never replaces the full entry, and every view labels it
  ``(partial 5/164)``.
* Schema 1.3 adds two unkeyed, optional fields: each metric's ``ci_method`` ("bootstrap", or "wilson" where
  every problem scored the same and the bootstrap would collapse to a point), and the entry's ``run_page``
  (the per-run report, relative to the leaderboard folder) that the page links to.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from evalsuite import __version__
from evalsuite.errors import EvalsuiteError, ThresholdNotMet
from evalsuite.jsonl import atomic_write_json
from evalsuite.reporting.schema import SCHEMA_VERSION, check_schema

LEADERBOARD_FILE = "leaderboard.json"
HTML_FILE = "index.html"
KEY_FIELDS = ("n", "temperature", "top_p", "top_k", "max_new_tokens", "prompt_template", "dataset_sha256")
# keyed where present (see the module docstring): quantized weights; instruct prompting; stripped prompts; a
# --limit run's problem subset
OPTIONAL_KEY_FIELDS = ("weights", "prompt_style", "strip_prompt", "problem_set")
QUANTIZED_WEIGHTS = ("int8", "nf4")
_METRIC_NAME = re.compile(r"^pass@([1-9][0-9]*)$")


# -- model -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """One metric's point estimate with its 95% interval over problems, and how the interval was made
    (``"bootstrap"``, ``"wilson"``; None in entries written before schema 1.3)."""

    value: float
    ci_low: float
    ci_high: float
    ci_method: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "ci95": [self.ci_low, self.ci_high]}
        if self.ci_method:
            out["ci_method"] = self.ci_method
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Metric":
        low, high = data["ci95"]
        return cls(value=float(data["value"]), ci_low=float(low), ci_high=float(high),
                   ci_method=data.get("ci_method"))

    @property
    def method_label(self) -> str:
        """What every view prints next to the interval: "" for the bootstrap, "Wilson" where it replaced it."""
        return "Wilson" if self.ci_method == "wilson" else ""


@dataclass(frozen=True)
class LeaderboardEntry:
    model: str  # display name: what people call the model
    model_id: str  # resolved hub id or local path: what was actually loaded
    task: str
    dataset_sha256: str
    settings: dict[str, Any]  # KEY_FIELDS (+ OPTIONAL_KEY_FIELDS where present), normalised (see settings_for)
    metrics: dict[str, Metric]  # "pass@1" -> Metric
    n: int  # samples per problem
    n_problems: int
    temperature: float
    date: str  # ISO 8601 UTC, e.g. 2025-01-31T12:00:00Z
    run_id: str
    hardware: str
    evalsuite_version: str = __version__
    not_computable: dict[str, str] = field(default_factory=dict)  # "pass@100" -> reason
    seed: int | None = None
    run_page: str | None = None  # the run's report.html, relative to the leaderboard folder (schema 1.3)

    @property
    def settings_key(self) -> str:
        return settings_key(self.settings)

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two entries the same row: a new run with an equal key replaces the old one."""
        return (self.model, self.task, self.settings_key)

    def ks(self) -> list[int]:
        return sorted(int(_METRIC_NAME.match(name).group(1)) for name in self.metrics)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "model_id": self.model_id, "task": self.task,
            "dataset_sha256": self.dataset_sha256, "settings": dict(self.settings),
            "settings_key": self.settings_key,
            "metrics": {name: metric.to_json() for name, metric in _sorted_metrics(self.metrics)},
            "n": self.n, "n_problems": self.n_problems, "temperature": self.temperature,
            "date": self.date, "run_id": self.run_id, "hardware": self.hardware,
            "evalsuite_version": self.evalsuite_version,
        }
        if self.not_computable:
            out["not_computable"] = dict(self.not_computable)
        if self.seed is not None:
            out["seed"] = self.seed
        if self.run_page:
            out["run_page"] = self.run_page
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LeaderboardEntry":
        """Build from a schema-valid entry (validation happens in :func:`load_leaderboard`)."""
        return cls(
            model=data["model"], model_id=data["model_id"], task=data["task"],
            dataset_sha256=data["dataset_sha256"], settings=dict(data["settings"]),
            metrics={name: Metric.from_json(value) for name, value in data["metrics"].items()},
            n=data["n"], n_problems=data["n_problems"], temperature=float(data["temperature"]),
            date=data["date"], run_id=data["run_id"], hardware=data["hardware"],
            evalsuite_version=data["evalsuite_version"], not_computable=dict(data.get("not_computable", {})),
            seed=data.get("seed"), run_page=data.get("run_page"),
        )


def interval_label(low: float, high: float, method: str | None) -> str:
    """``[0.120, 0.301]``, or ``[0.000, 0.278] Wilson`` where Wilson's interval replaced the bootstrap: the
    terminal tables' form (the pages say the same)."""
    return f"[{low:.3f}, {high:.3f}]" + (" Wilson" if method == "wilson" else "")


def _sorted_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return sorted(metrics.items(), key=lambda item: int(_METRIC_NAME.match(item[0]).group(1)))


# -- settings key ------------------------------------------------------------------------------------

def settings_for(sampling: Any, prompt_template: str, dataset_sha256: str,
                 weights: str | None = None, prompt_style: str | None = None, strip_prompt: bool = False,
                 problem_set: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The normalised settings that change the number (see the module docstring for the choice).

    ``sampling`` is a :class:`~evalsuite.records.SamplingParams` or its ``to_dict()``; ``weights`` the
    precision the model ran in (only int8/nf4 are kept); ``prompt_style`` "base" or "instruct";
    ``problem_set`` the subset a ``--limit`` run scored (None: all of the task's problems).
    """
    params = sampling.to_dict() if hasattr(sampling, "to_dict") else dict(sampling)
    missing = [name for name in ("n", "temperature", "top_p", "top_k", "max_new_tokens") if name not in params]
    if missing:
        raise EvalsuiteError(f"sampling settings lack {', '.join(missing)}")
    temperature = float(params["temperature"])
    greedy = temperature == 0.0
    settings: dict[str, Any] = {
        "n": int(params["n"]),
        "temperature": temperature,
        "top_p": 1.0 if greedy else float(params["top_p"]),
        "top_k": 0 if greedy else int(params["top_k"]),
        "max_new_tokens": int(params["max_new_tokens"]),
        "prompt_template": str(prompt_template),
        "dataset_sha256": str(dataset_sha256),
    }
    if weights in QUANTIZED_WEIGHTS:
        settings["weights"] = weights
    if prompt_style == "instruct":
        settings["prompt_style"] = "instruct"
    if strip_prompt:
        settings["strip_prompt"] = True
    if problem_set:
        settings["problem_set"] = {"n_problems": int(problem_set["n_problems"]), "of": int(problem_set["of"]),
                                   "ids_sha256": str(problem_set["ids_sha256"])}
    return settings


def settings_key(settings: Mapping[str, Any]) -> str:
    """A short stable key like ``n20-t0.8-3f9a0c1b2d``: readable prefix, digest of all KEY_FIELDS (and of
    the OPTIONAL_KEY_FIELDS an entry has)."""
    canonical = {name: settings[name] for name in KEY_FIELDS}
    canonical.update({name: settings[name] for name in OPTIONAL_KEY_FIELDS if name in settings})
    for name in ("temperature", "top_p"):  # 1 and 1.0 must give the same key
        canonical[name] = float(canonical[name])
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode("utf-8")).hexdigest()
    return f"n{int(settings['n'])}-t{float(settings['temperature']):g}-{digest[:10]}"


# -- building entries from a run ---------------------------------------------------------------------

def utc_now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        if _METRIC_NAME.match(name):
            if name not in ci95:
                raise EvalsuiteError(f"score summary has {name} but no ci95 for it")
            low, high = ci95[name]
            metrics[name] = Metric(float(value), float(low), float(high), methods.get(name))
    return metrics, dict(score.get("not_computable", {})), int(score["n_problems"])


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
    if not metrics:
        raise EvalsuiteError(f"{run_summary['model']} on {run_summary['task']}: no pass@k could be computed "
                             f"({'; '.join(not_computable.values()) or 'empty score'})")
    sampling = run_summary["sampling"]
    seed = sampling.seed if hasattr(sampling, "seed") else sampling.get("seed")
    entry = LeaderboardEntry(
        model=str(run_summary["model"]), model_id=str(run_summary["model_id"]), task=str(run_summary["task"]),
        dataset_sha256=settings["dataset_sha256"], settings=settings, metrics=metrics,
        n=settings["n"], n_problems=n_problems, temperature=settings["temperature"],
        date=to_utc_iso(run_summary["date"]) if run_summary.get("date") else utc_now_iso(), run_id=str(run_summary["run_id"]),
        hardware=str(run_summary["hardware"]),
        evalsuite_version=str(run_summary.get("evalsuite_version") or __version__),
        not_computable=not_computable, seed=None if seed is None else int(seed),
        run_page=str(run_summary["run_page"]) if run_summary.get("run_page") else None,
    )
    _validate_document(_document([entry]), "<new entry>")  # fail at the source, not at the next read
    return entry


# -- merge -------------------------------------------------------------------------------------------

def sort_entries(entries: Iterable[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Stable file order: by task, then model, then settings key (keeps diffs of the JSON small)."""
    return sorted(entries, key=lambda e: (e.task, e.model.casefold(), e.model, e.settings_key))


def merge(entries: Iterable[LeaderboardEntry], new_entries: Iterable[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Entries of ``new_entries`` replace those with the same key; all others are kept."""
    by_key = {entry.key: entry for entry in entries}
    for entry in new_entries:
        by_key[entry.key] = entry
    return sort_entries(by_key.values())


# -- reading, validating, writing --------------------------------------------------------------------

def _document(entries: Sequence[LeaderboardEntry]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "updated": utc_now_iso(),
            "entries": [entry.to_json() for entry in sort_entries(entries)]}


def _validate_document(document: Any, where: str) -> None:
    """Raise one clear line naming the file, the JSON path and the problem: the JSON Schema first
    (:func:`~evalsuite.reporting.schema.check_schema`), then what a schema cannot say."""
    check_schema(document, where)
    seen: dict[tuple[str, str, str], int] = {}
    for index, data in enumerate(document["entries"]):
        path = f"$.entries[{index}]"
        expected_key = settings_key(data["settings"])
        if data["settings_key"] != expected_key:
            raise EvalsuiteError(f"{where}: invalid leaderboard at {path}.settings_key: {data['settings_key']!r} "
                                 f"does not match its settings (expected {expected_key!r})")
        if data["dataset_sha256"] != data["settings"]["dataset_sha256"]:
            raise EvalsuiteError(f"{where}: invalid leaderboard at {path}.dataset_sha256: differs from "
                                 f"{path}.settings.dataset_sha256")
        for name, metric in data["metrics"].items():
            low, high = metric["ci95"]
            if low > high:
                raise EvalsuiteError(f"{where}: invalid leaderboard at {path}.metrics['{name}'].ci95: "
                                     f"low {low} > high {high}")
        key = (data["model"], data["task"], data["settings_key"])
        if key in seen:
            raise EvalsuiteError(f"{where}: invalid leaderboard at {path}: same model, task and settings_key as "
                                 f"$.entries[{seen[key]}] ({data['model']} on {data['task']})")
        seen[key] = index


def load_leaderboard(path: str | Path) -> list[LeaderboardEntry]:
    """Read and validate ``leaderboard.json``; a missing file is an empty leaderboard."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalsuiteError(f"{path}: cannot read: {exc}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvalsuiteError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg} (column {exc.colno})") from exc
    _validate_document(document, str(path))
    return [LeaderboardEntry.from_json(data) for data in document["entries"]]


def save_leaderboard(path: str | Path, entries: Sequence[LeaderboardEntry]) -> None:
    """Validate, then write atomically: readers see the old file or the new one, never half of one."""
    for entry in entries:
        if any(not math.isfinite(m.value) for m in entry.metrics.values()):
            raise EvalsuiteError(f"{entry.model} on {entry.task}: a metric is not a finite number")
    document = _document(entries)
    _validate_document(document, str(path))
    atomic_write_json(path, document)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Serialise read-merge-write across processes (two runs finishing at once must not drop an entry).

    The lock is taken on the directory itself, so no lock file is left next to the leaderboard.
    """
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: atomic replace still protects readers
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def update_leaderboard(directory: str | Path, new_entries: Sequence[LeaderboardEntry],
                       render_html: bool = True) -> list[LeaderboardEntry]:
    """Load, merge the new entries, save and (by default) re-render ``index.html``; returns all entries."""
    directory = Path(directory)
    path = directory / LEADERBOARD_FILE
    new_entries = [_relative_page(entry, directory) for entry in new_entries]
    with _locked(directory):
        old = load_leaderboard(path)
        _warn_other_checkpoint(old, new_entries)
        entries = merge(old, new_entries)
        save_leaderboard(path, entries)
    if render_html:
        from evalsuite.reporting.pages import write_html

        write_html(directory / HTML_FILE, entries)
    return entries


def _relative_page(entry: LeaderboardEntry, directory: Path) -> LeaderboardEntry:
    """The run page as the leaderboard folder's page links to it (relative, so both folders can move)."""
    if not entry.run_page or not Path(entry.run_page).is_absolute():
        return entry
    relative = os.path.relpath(entry.run_page, directory.resolve())
    return dataclasses.replace(entry, run_page=Path(relative).as_posix())


def _warn_other_checkpoint(old: Sequence[LeaderboardEntry], new: Sequence[LeaderboardEntry]) -> None:
    """A new entry replaces the one with its key; say so when that one came from other weights."""
    by_key = {entry.key: entry for entry in old}
    for entry in new:
        previous = by_key.get(entry.key)
        if previous is not None and previous.model_id != entry.model_id:
            print(f"warning: leaderboard entry {entry.model!r} on {entry.task} ({previous.model_id}) is replaced by "
                  f"{entry.model_id}; give one of them another --name to keep both", file=sys.stderr)


# -- --fail-under gates ------------------------------------------------------------------------------

def parse_fail_under(text: str) -> dict[str, float]:
    """``"pass@1=0.30,pass@10=0.5"`` -> ``{"pass@1": 0.3, "pass@10": 0.5}`` (``30%`` is accepted too)."""
    thresholds: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = (s.strip() for s in part.partition("="))
        if not sep or not _METRIC_NAME.match(name):
            raise EvalsuiteError(f"--fail-under expects METRIC=VALUE like pass@1=0.30, got {part!r}")
        try:
            value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            raise EvalsuiteError(f"--fail-under {name}: {raw!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise EvalsuiteError(f"--fail-under {name}: {raw!r} is outside [0, 1]")
        thresholds[name] = value
    if not thresholds:
        raise EvalsuiteError("--fail-under expects METRIC=VALUE like pass@1=0.30, got nothing")
    return thresholds


def _fmt_gap(value: float, threshold: float) -> tuple[str, str, str]:
    """Three decimals, more when three would make a real shortfall look like equality."""
    for digits in (3, 4, 5, 6, 8):
        if round(value, digits) < round(threshold, digits):
            break
    return f"{value:.{digits}f}", f"{threshold:.{digits}f}", f"{threshold - value:.{digits}f}"


def describe_settings(settings: Mapping[str, Any]) -> str:
    text = f"n={settings['n']}, T={settings['temperature']:g}"
    if settings["temperature"] > 0:
        text += f", top_p={settings['top_p']:g}" + (f", top_k={settings['top_k']}" if settings["top_k"] else "")
    return text + f", max_new_tokens={settings['max_new_tokens']}"


def _setting_text(name: str, value: Any) -> str:
    if name == "temperature":
        return f"T={value:g}"
    if name == "prompt_template":
        return f"template #{hashlib.sha256(str(value).encode('utf-8')).hexdigest()[:8]}"
    if name == "dataset_sha256":
        return f"data {str(value)[:8] or 'unhashed'}"
    return f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"


def always_shown(settings: Mapping[str, Any]) -> list[str]:
    """Settings every view names, whatever other rows exist: quantized weights, instruct prompting,
    stripped prompts, and a partial problem set (a smoke test must never read as the model's score)."""
    parts = [settings["weights"]] if "weights" in settings else []
    if settings.get("prompt_style") == "instruct":
        parts.append("instruct")
    if settings.get("strip_prompt"):
        parts.append("stripped prompt")
    if "problem_set" in settings:
        subset = settings["problem_set"]
        parts.append(f"partial {subset['n_problems']}/{subset['of']}")
    return parts


def is_partial(entry: LeaderboardEntry) -> bool:
    return "problem_set" in entry.settings


def display_labels(entries: Sequence[LeaderboardEntry]) -> dict[tuple[str, str, str], str]:
    """Entry key -> model name, plus the settings that tell it apart when a model has several rows
    in one task, e.g. ``gpt-j-6b (n=20, T=0.8)`` next to ``gpt-j-6b (n=1, T=0)``."""
    siblings: dict[tuple[str, str], list[LeaderboardEntry]] = {}
    for entry in entries:
        siblings.setdefault((entry.model, entry.task), []).append(entry)
    labels = {}
    for entry in entries:
        group = siblings[(entry.model, entry.task)]
        differing = [name for name in KEY_FIELDS if len({json.dumps(e.settings[name]) for e in group}) > 1]
        parts = always_shown(entry.settings)
        parts += [_setting_text(name, entry.settings[name]) for name in differing]
        labels[entry.key] = f"{entry.model} ({', '.join(parts)})" if parts else entry.model
    return labels


def check_fail_under(entries: Sequence[LeaderboardEntry], thresholds: Mapping[str, float],
                     models: Sequence[str] | None = None) -> list[str]:
    """One message per shortfall, e.g. ``gpt-j-6b on humaneval: pass@1 = 0.112 < 0.300 (short by 0.188)``.

    A metric the entry lacks (e.g. pass@10 of a greedy run) is a failure too: a gate that silently
    passes on missing data would hide a broken CI job. So is an empty selection.
    """
    selected = [e for e in entries if models is None or e.model in models or e.model_id in models]
    if not selected:
        which = f" for {', '.join(models)}" if models else ""
        return [f"no leaderboard entries{which} to check against --fail-under"]
    labels = display_labels(selected)
    messages = []
    for entry in sort_entries(selected):
        label = f"{labels[entry.key]} on {entry.task}"
        for name, threshold in _sorted_metrics(thresholds):
            metric = entry.metrics.get(name)
            if metric is None:
                reason = entry.not_computable.get(name, f"not computed in run {entry.run_id}")
                messages.append(f"{label}: {name} is missing ({reason})")
            elif metric.value < threshold:
                value, limit, gap = _fmt_gap(metric.value, threshold)
                messages.append(f"{label}: {name} = {value} < {limit} (short by {gap})")
    return messages


def enforce_fail_under(entries: Sequence[LeaderboardEntry], thresholds: Mapping[str, float] | None,
                       models: Sequence[str] | None = None) -> None:
    """Raise :class:`ThresholdNotMet` (exit 3) naming every shortfall; no-op without thresholds."""
    if thresholds:
        raise_shortfalls(check_fail_under(entries, thresholds, models))


def raise_shortfalls(messages: Sequence[str]) -> None:
    """Raise :class:`ThresholdNotMet` (exit 3) naming every shortfall :func:`check_fail_under` found; none: no-op."""
    if len(messages) == 1:
        raise ThresholdNotMet(f"--fail-under not met: {messages[0]}")
    if messages:
        raise ThresholdNotMet(f"--fail-under not met ({len(messages)} shortfalls): " + "; ".join(messages))
