"""What a leaderboard entry is: its metrics, its settings and the key that decides which runs replace each other.

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
* Schema 1.6 keys ``protocol`` where a preset asked the model otherwise than the task does, beyond style and
  stripping: EvalPlus's direct completion (its stop set, the program sanitized) or a preset's own stop sequences
  (named by their digest). Before it, ``--preset evalplus`` and a plain run of the same model shared an entry and
  each replaced the other's number.
* Schema 1.7 adds an unkeyed, optional ``scoring_sha256``: the digest of the per-problem tallies the run's
  summary.json held when the entry was made, so that a run page scored again since (a rerun into the same
  folder for another leaderboard or none) is told apart, and its link and tallies are not shown as the entry's.
* Schema 1.3 adds two unkeyed, optional fields: each metric's ``ci_method`` ("bootstrap", or "wilson" where
  every problem scored the same and the bootstrap would collapse to a point), and the entry's ``run_page``
  (the per-run report, relative to the leaderboard folder) that the page links to.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from evalsuite.records import SamplingParams
from evalsuite.scoring.summary import PASS_AT
from evalsuite.version import __version__

KEY_FIELDS = ("n", "temperature", "top_p", "top_k", "max_new_tokens", "prompt_template", "dataset_sha256")
# keyed where present (see the module docstring): quantized weights; instruct prompting; stripped prompts; a
# --limit run's problem subset; a prompt-plus-generation cap (--max-length); a preset's own asking
OPTIONAL_KEY_FIELDS = ("weights", "prompt_style", "strip_prompt", "problem_set", "max_length", "protocol")
QUANTIZED_WEIGHTS = ("int8", "nf4")
METRIC_NAME = PASS_AT  # one pattern for pass@k names: the score's (summary.json) and the leaderboard's


def metric_k(name: str) -> int:
    """The k of a ``pass@k`` metric name (names are checked against :data:`METRIC_NAME` when read)."""
    match = METRIC_NAME.match(name)
    if match is None:
        raise ValueError(f"not a pass@k metric name: {name!r}")
    return int(match.group(1))


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
    def from_json(cls, data: Mapping[str, Any]) -> Metric:
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
    settings: EntrySettings
    metrics: dict[str, Metric]  # "pass@1" -> Metric
    n_problems: int
    date: str  # ISO 8601 UTC, e.g. 2025-01-31T12:00:00Z
    run_id: str
    hardware: str
    evalsuite_version: str = __version__
    not_computable: dict[str, str] = field(default_factory=dict)  # "pass@100" -> reason
    seed: int | None = None
    run_page: str | None = None  # the run's report.html, relative to the leaderboard folder (schema 1.3)
    # EvalPlus-style tasks (schema 1.4): pass@k over the base inputs alone; ``metrics`` are the plus figures
    base_metrics: dict[str, Metric] = field(default_factory=dict)
    # the per-problem tallies the run's summary.json held when the entry was made (schema 1.7;
    # scoring.summary.scoring_digest): a page scored again since holds others, and loses the entry's link
    scoring_sha256: str | None = None

    @property
    def settings_key(self) -> str:
        return self.settings.key

    @property
    def n(self) -> int:
        """Samples per problem."""
        return self.settings.n

    @property
    def temperature(self) -> float:
        return self.settings.temperature

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two entries the same row: a new run with an equal key replaces the old one."""
        return (self.model, self.task, self.settings_key)

    def ks(self) -> list[int]:
        return sorted(metric_k(name) for name in self.metrics)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "model_id": self.model_id, "task": self.task,
            "dataset_sha256": self.dataset_sha256, "settings": self.settings.to_json(),
            "settings_key": self.settings_key,
            "metrics": {name: metric.to_json() for name, metric in sorted_metrics(self.metrics)},
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
        if self.base_metrics:
            out["base_metrics"] = {name: metric.to_json() for name, metric in sorted_metrics(self.base_metrics)}
        if self.scoring_sha256:
            out["scoring_sha256"] = self.scoring_sha256
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LeaderboardEntry:
        """Build from a schema-valid entry (validated by :func:`evalsuite.reporting.store.load_leaderboard`)."""
        return cls(
            model=data["model"], model_id=data["model_id"], task=data["task"],
            dataset_sha256=data["dataset_sha256"], settings=EntrySettings.from_json(data["settings"]),
            metrics={name: Metric.from_json(value) for name, value in data["metrics"].items()},
            n_problems=data["n_problems"],
            date=data["date"], run_id=data["run_id"], hardware=data["hardware"],
            evalsuite_version=data["evalsuite_version"], not_computable=dict(data.get("not_computable", {})),
            seed=data.get("seed"), run_page=data.get("run_page"),
            base_metrics={name: Metric.from_json(value) for name, value in (data.get("base_metrics") or {}).items()},
            scoring_sha256=data.get("scoring_sha256"),
        )


def sorted_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return sorted(metrics.items(), key=lambda item: metric_k(item[0]))


# -- settings key ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProblemSubset:
    """The subset a ``--limit`` run scored: how many problems, of how many, and which (a digest of their ids)."""

    n_problems: int
    of: int
    ids_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"n_problems": self.n_problems, "of": self.of, "ids_sha256": self.ids_sha256}

    @classmethod
    def from_json(cls, data: ProblemSubset | Mapping[str, Any] | None) -> ProblemSubset | None:
        """The stored form (a record's, an entry's, a run summary's dict form); None or empty for the whole task."""
        if isinstance(data, ProblemSubset):
            return data
        if not data:
            return None
        return cls(int(data["n_problems"]), int(data["of"]), str(data["ids_sha256"]))


@dataclass(frozen=True)
class EntrySettings:
    """The normalised settings that change the number (see the module docstring for the choice): the entry's
    key is a digest of them. Under greedy decoding ``top_p``/``top_k`` are unused and normalised to 1.0/0."""

    n: int
    temperature: float
    top_p: float
    top_k: int
    max_new_tokens: int
    prompt_template: str
    dataset_sha256: str
    weights: str | None = None  # "int8"/"nf4" only
    prompt_style: str | None = None  # "instruct" only
    strip_prompt: bool = False
    max_length: int | None = None
    problem_set: ProblemSubset | None = None
    protocol: str | None = None  # a preset's asking beyond style and stripping (EvalPlus's direct completion)
    other_data: bool = False  # not keyed (dataset_sha256 is): the task's data is not its own, said in every view

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_json(self) -> dict[str, Any]:
        """The settings as the leaderboard stores them: the key fields, then the optional ones an entry has."""
        out: dict[str, Any] = {
            "n": self.n, "temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens, "prompt_template": self.prompt_template,
            "dataset_sha256": self.dataset_sha256,
        }
        if self.weights:
            out["weights"] = self.weights
        if self.prompt_style:
            out["prompt_style"] = self.prompt_style
        if self.strip_prompt:
            out["strip_prompt"] = True
        if self.max_length is not None:
            out["max_length"] = self.max_length
        if self.problem_set is not None:
            out["problem_set"] = self.problem_set.to_json()
        if self.protocol:
            out["protocol"] = self.protocol
        if self.other_data:
            out["other_data"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EntrySettings:
        return cls(n=int(data["n"]), temperature=float(data["temperature"]), top_p=float(data["top_p"]),
                   top_k=int(data["top_k"]), max_new_tokens=int(data["max_new_tokens"]),
                   prompt_template=str(data["prompt_template"]), dataset_sha256=str(data["dataset_sha256"]),
                   weights=data.get("weights"), prompt_style=data.get("prompt_style"),
                   strip_prompt=bool(data.get("strip_prompt", False)),
                   max_length=None if data.get("max_length") is None else int(data["max_length"]),
                   problem_set=ProblemSubset.from_json(data.get("problem_set")),
                   protocol=data.get("protocol") or None, other_data=bool(data.get("other_data", False)))

    @property
    def key(self) -> str:
        return settings_key(self.to_json())


def settings_for(sampling: SamplingParams, prompt_template: str, dataset_sha256: str,
                 weights: str | None = None, prompt_style: str | None = None, strip_prompt: bool = False,
                 problem_set: ProblemSubset | None = None, other_data: bool = False,
                 protocol: str | None = None) -> EntrySettings:
    """The normalised settings that change the number (see the module docstring for the choice).

    ``weights`` the precision the model ran in (only int8/nf4 are kept); ``prompt_style`` "base" or "instruct";
    ``problem_set`` the subset a ``--limit`` run scored (None: all of the task's problems).
    """
    greedy = sampling.greedy
    return EntrySettings(
        n=sampling.n, temperature=float(sampling.temperature), top_p=1.0 if greedy else float(sampling.top_p),
        top_k=0 if greedy else sampling.top_k, max_new_tokens=sampling.max_new_tokens,
        prompt_template=str(prompt_template), dataset_sha256=str(dataset_sha256),
        weights=weights if weights in QUANTIZED_WEIGHTS else None,
        prompt_style="instruct" if prompt_style == "instruct" else None, strip_prompt=bool(strip_prompt),
        max_length=sampling.max_length, problem_set=problem_set, other_data=bool(other_data),
        protocol=protocol or None)


def settings_key(settings: EntrySettings | Mapping[str, Any]) -> str:
    """A short stable key like ``n20-t0.8-3f9a0c1b2d``: readable prefix, digest of all KEY_FIELDS (and of
    the OPTIONAL_KEY_FIELDS an entry has); of typed settings or of their stored form."""
    if isinstance(settings, EntrySettings):
        settings = settings.to_json()
    canonical = {name: settings[name] for name in KEY_FIELDS}
    canonical.update({name: settings[name] for name in OPTIONAL_KEY_FIELDS if name in settings})
    for name in ("temperature", "top_p"):  # 1 and 1.0 must give the same key
        canonical[name] = float(canonical[name])
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode("utf-8")).hexdigest()
    return f"n{int(settings['n'])}-t{float(settings['temperature']):g}-{digest[:10]}"


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def sort_entries(entries: Iterable[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Stable file order: by task, then model, then settings key (keeps diffs of the JSON small)."""
    return sorted(entries, key=lambda e: (e.task, e.model.casefold(), e.model, e.settings_key))


def merge(entries: Iterable[LeaderboardEntry], new_entries: Iterable[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Entries of ``new_entries`` replace those with the same key; all others are kept."""
    by_key = {entry.key: entry for entry in entries}
    for entry in new_entries:
        by_key[entry.key] = entry
    return sort_entries(by_key.values())
