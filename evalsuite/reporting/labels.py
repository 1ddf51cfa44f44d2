"""How every view names an entry and its settings: display labels, the interval text, the always-shown badges.

Shared by the pages, the terminal tables and the --fail-under messages, so that a partial or quantized run reads
the same everywhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from evalsuite.reporting.model import KEY_FIELDS, OPTIONAL_KEY_FIELDS, EntrySettings, LeaderboardEntry, ProblemSubset


def interval_label(low: float, high: float, method: str | None) -> str:
    """``[0.120, 0.301]``, or ``[0.000, 0.278] Wilson`` where Wilson's interval replaced the bootstrap: the
    terminal tables' form (the pages say the same)."""
    return f"[{low:.3f}, {high:.3f}]" + (" Wilson" if method == "wilson" else "")



def estimate_text(estimate: Any) -> str:
    """``0.120 [0.080, 0.170]``: a pass@k estimate (a ``PassAtK`` or a leaderboard ``Metric``) with its interval, as
    the terminal tables show it."""
    return f"{estimate.value:.3f} {interval_label(estimate.ci_low, estimate.ci_high, estimate.ci_method)}"


def partial_badge(subset: ProblemSubset) -> str:
    """How every view labels a partial problem set (``runs.identity.problem_set``)."""
    return f"partial {subset.n_problems}/{subset.of}"


def other_data_badge(dataset_sha256: str) -> str:
    """How every view labels a run on data that is not the task's own (``Task.runs_on_other_data``)."""
    return f"other data {dataset_sha256[:8] or 'unhashed'}"


def describe_settings(settings: EntrySettings) -> str:
    text = f"n={settings.n}, T={settings.temperature:g}"
    if not settings.greedy:
        text += f", top_p={settings.top_p:g}" + (f", top_k={settings.top_k}" if settings.top_k else "")
    text += f", max_new_tokens={settings.max_new_tokens}"
    return text + (f", max_length={settings.max_length}" if settings.max_length else "")


def _setting_text(name: str, value: Any) -> str:
    if name == "temperature":
        return f"T={value:g}"
    if name == "prompt_template":
        return f"template #{hashlib.sha256(str(value).encode('utf-8')).hexdigest()[:8]}"
    if name == "dataset_sha256":
        return f"data {str(value)[:8] or 'unhashed'}"
    if name == "problem_set":
        return "all problems" if value is None else f"problems #{value.ids_sha256[:8]}"
    if name == "max_length":
        return "no max_length" if value is None else f"max_length={value}"
    return f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"


def always_shown(settings: EntrySettings) -> list[str]:
    """Settings every view names, whatever other rows exist: quantized weights, instruct prompting,
    stripped prompts, a preset's own asking, and a partial problem set (a smoke test must never read as the
    model's score)."""
    parts = [settings.weights] if settings.weights else []
    if settings.prompt_style == "instruct":
        parts.append("instruct")
    if settings.strip_prompt:
        parts.append("stripped prompt")
    if settings.protocol:
        parts.append(settings.protocol)
    if settings.problem_set is not None:
        parts.append(partial_badge(settings.problem_set))
    if settings.other_data:
        parts.append(other_data_badge(settings.dataset_sha256))
    return parts


def is_partial(entry: LeaderboardEntry) -> bool:
    return entry.settings.problem_set is not None


def display_labels(entries: Sequence[LeaderboardEntry]) -> dict[tuple[str, str, str], str]:
    """Entry key -> model name, plus the settings that tell it apart when a model has several rows
    in one task, e.g. ``gpt-j-6b (n=20, T=0.8)`` next to ``gpt-j-6b (n=1, T=0)``; where those still read alike
    (two subsets of 8 problems, two ``--max-length`` caps), the stored settings that differ too."""
    siblings: dict[tuple[str, str], list[LeaderboardEntry]] = {}
    for entry in entries:
        siblings.setdefault((entry.model, entry.task), []).append(entry)
    parts: dict[tuple[str, str, str], list[str]] = {}
    for group in siblings.values():
        differing = _differing(group, KEY_FIELDS)
        for entry in group:
            parts[entry.key] = always_shown(entry.settings) + [  # other data names its hash already
                _setting_text(name, getattr(entry.settings, name)) for name in differing
                if not (name == "dataset_sha256" and entry.settings.other_data)]
        alike: dict[tuple[str, ...], list[LeaderboardEntry]] = {}
        for entry in group:
            alike.setdefault(tuple(parts[entry.key]), []).append(entry)
        for same in alike.values():
            for name in _differing(same, OPTIONAL_KEY_FIELDS) if len(same) > 1 else ():
                for entry in same:
                    parts[entry.key].append(_setting_text(name, getattr(entry.settings, name)))
    return {key: f"{entry.model} ({', '.join(parts[key])})" if parts[key] else entry.model
            for entry in entries for key in [entry.key]}


def _differing(group: Sequence[LeaderboardEntry], names: Sequence[str]) -> list[str]:
    """The settings among ``names`` whose stored values are not the same over ``group``."""
    stored = [entry.settings.to_json() for entry in group]
    return [name for name in names if len({json.dumps(s.get(name), sort_keys=True) for s in stored}) > 1]
