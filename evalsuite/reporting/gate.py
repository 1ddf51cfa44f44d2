"""The ``--fail-under`` gate: parse the thresholds, name every shortfall, and fail with exit status 3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalsuite.errors import EvalsuiteError, ThresholdNotMet
from evalsuite.reporting.labels import display_labels
from evalsuite.reporting.model import METRIC_NAME, LeaderboardEntry, sort_entries, sorted_metrics


def parse_fail_under(text: str) -> dict[str, float]:
    """``"pass@1=0.30,pass@10=0.5"`` -> ``{"pass@1": 0.3, "pass@10": 0.5}`` (``30%`` is accepted too)."""
    thresholds: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = (s.strip() for s in part.partition("="))
        if not sep or not METRIC_NAME.match(name):
            raise EvalsuiteError(f"--fail-under expects METRIC=VALUE like pass@1=0.30, got {part!r}")
        try:
            value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            raise EvalsuiteError(f"--fail-under {name}: {raw!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise EvalsuiteError(f"--fail-under {name}: {raw!r} is outside [0, 1]")
        if name in thresholds:
            raise EvalsuiteError(f"--fail-under gives {name} twice; give each metric once")
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
        for name, threshold in sorted_metrics(thresholds):
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


def shortfalls_text(messages: Sequence[str]) -> str | None:
    """The one line naming every shortfall :func:`check_fail_under` found; None when there is none."""
    if len(messages) == 1:
        return f"--fail-under not met: {messages[0]}"
    if messages:
        return f"--fail-under not met ({len(messages)} shortfalls): " + "; ".join(messages)
    return None


def raise_shortfalls(messages: Sequence[str]) -> None:
    """Raise :class:`ThresholdNotMet` (exit 3) naming every shortfall; none: no-op."""
    text = shortfalls_text(messages)
    if text is not None:
        raise ThresholdNotMet(text)
