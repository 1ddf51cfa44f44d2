"""The leaderboard file, ``leaderboard/leaderboard.json``: read, validate, merge and write. It renders nothing.

The file is validated against ``evalsuite/reporting/leaderboard.schema.json`` (:mod:`.schema`) on every
read and every write, so a hand-broken file is reported (file + JSON path) instead of silently rendered or gated on.
Pages are drawn from the stored entries by :mod:`evalsuite.reporting.views` (see :mod:`.publish`), and from the
problem tallies read here from the entries' runs (:func:`run_tallies`): the views read no file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import atomic_write_json
from evalsuite.reporting.model import LeaderboardEntry, merge, settings_key, sort_entries, utc_now_iso
from evalsuite.reporting.schema import SCHEMA_VERSION, check_schema
from evalsuite.scoring.summary import SUMMARY_FILE, ProblemTally, scoring_digest, tallies_from_json

LEADERBOARD_FILE = "leaderboard.json"


def document(entries: Sequence[LeaderboardEntry]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "updated": utc_now_iso(),
            "entries": [entry.to_json() for entry in sort_entries(entries)]}


def validate_document(document: Any, where: str) -> None:
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


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a number a leaderboard holds (an entry edited by hand?)")


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
        document = json.loads(text, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise EvalsuiteError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg} (column {exc.colno})") from exc
    except ValueError as exc:  # NaN or Infinity: Python writes them, JSON has no such number, and NaN passes every gate
        raise EvalsuiteError(f"{path}: {exc}") from exc
    validate_document(document, str(path))
    entries = [LeaderboardEntry.from_json(data) for data in document["entries"]]
    if _minor(document.get("schema_version", "")) < PROTOCOL_SINCE:
        entries = [_with_recorded_protocol(entry, path.parent) for entry in entries]
    return entries


# Schema 1.6 keys a preset's own asking (EvalPlus's direct completion, a preset's stop set): an entry written before
# it carries none, and read as the plain protocol's number, which a gate then checked (the twenty-fourth session's
# run-path rounds).
PROTOCOL_SINCE = 6
RECORDED_DIRECT_COMPLETION = "EvalPlus direct completion (recorded before schema 1.6)"  # by no preset found


def _minor(version: str) -> int:
    major, _, minor = str(version).partition(".")
    return int(minor) if major == "1" and minor.isdigit() else PROTOCOL_SINCE


def _with_recorded_protocol(entry: LeaderboardEntry, folder: Path) -> LeaderboardEntry:
    """An entry of a schema before 1.6 whose run's record (next to its page) shows a preset's own asking gets the
    protocol a run of this version would: keyed apart from the plain protocol's, named in every view."""
    if entry.settings.protocol or not entry.run_page:
        return entry
    try:  # the record a generated run keeps beside its page; none for evaluate's scored samples
        record = json.loads((folder / entry.run_page).with_name("record.json").read_text(encoding="utf-8"))
        prompt, stops = dict(record["prompt"]), [str(stop) for stop in record["task"]["stop_sequences"]]
    except (OSError, ValueError, TypeError, KeyError):
        return entry
    protocol = recorded_protocol(entry.task, str(prompt.get("style")), "direct_completion" in prompt, stops)
    if protocol is None:
        return entry
    return dataclasses.replace(entry, settings=dataclasses.replace(entry.settings, protocol=protocol))


def recorded_protocol(task: str, style: str, direct: bool, stops: list[str]) -> str | None:
    """The protocol (:attr:`evalsuite.protocol.asking.Asking.protocol`) a run asked ``style``-wise with the stop
    sequences ``stops`` (a preset's come first for instruct and direct completion, after the task's otherwise)
    was under, by the shipped presets."""
    from evalsuite.protocol.asking import direct_completion_label, preset_stops_label
    from evalsuite.protocol.presets import list_presets

    for preset in list_presets():
        if direct:
            own = (preset.prompt.get("direct_completion_stop_sequences") or {}).get(task)
            if own and stops[:len(own)] == list(own):
                return direct_completion_label(own)
        elif style == "instruct":
            own = preset.prompt.get("instruct_stop_sequences")
            if own and stops[:len(own)] == list(own):
                return preset_stops_label(own)
        else:
            own = (preset.prompt.get("stop_sequences") or {}).get(task)
            if own and all(stop in stops for stop in own):
                return preset_stops_label(own)
    return RECORDED_DIRECT_COMPLETION if direct else None


def save_leaderboard(path: str | Path, entries: Sequence[LeaderboardEntry]) -> None:
    """Validate, then write atomically: readers see the old file or the new one, never half of one."""
    for entry in entries:
        if any(not math.isfinite(m.value) for m in entry.metrics.values()):
            raise EvalsuiteError(f"{entry.model} on {entry.task}: a metric is not a finite number")
    stored = document(entries)
    validate_document(stored, str(path))
    atomic_write_json(path, stored)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
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


def store_entries(directory: str | Path, new_entries: Sequence[LeaderboardEntry],
                  then: Callable[[list[LeaderboardEntry]], Any] | None = None) -> list[LeaderboardEntry]:
    """Load, merge the new entries and save, under the folder's lock; returns all entries. ``then`` (the pages
    drawn from them) runs under the lock too: drawn after it, a run that saved first and drew last left pages
    without the other's entry."""
    directory = Path(directory)
    path = directory / LEADERBOARD_FILE
    new_entries = [_relative_page(entry, directory) for entry in new_entries]
    with locked(directory):
        old = load_leaderboard(path)
        _warn_other_checkpoint(old, new_entries)
        entries = merge(old, new_entries)
        save_leaderboard(path, entries)
        if then is not None:
            then(entries)
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


def linked_summary(directory: str | Path, entry: LeaderboardEntry) -> dict[str, Any] | None:
    """The summary.json next to the entry's run page (a relative page is under the leaderboard ``directory``);
    None where there is no page or the summary cannot be read."""
    if not entry.run_page:
        return None
    try:
        summary = json.loads((Path(directory) / entry.run_page).parent.joinpath(SUMMARY_FILE)
                             .read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def rescored_since(entry: LeaderboardEntry, summary: Mapping[str, Any]) -> str | None:
    """What the linked run's summary says where it no longer says what it said when the entry was made (the
    folder was scored again since, by a rerun whose leaderboard is another one or none): e.g. ``pass@1 0.000``,
    or ``other problems' results`` where pass@k reads the same; None where it agrees. An entry from before
    schema 1.7 (no digest) is compared by its numbers alone."""
    differs = []
    sets = summary.get("sets")
    base = sets.get("base") if isinstance(sets, dict) else None
    for prefix, metrics, said in (("", entry.metrics, summary), ("base ", entry.base_metrics, base)):
        for name, metric in sorted(metrics.items()):
            value = said.get(name) if isinstance(said, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - metric.value) > 1e-9:
                differs.append(f"{prefix}{name} {value:.3f}")
    problems = summary.get("n_problems")
    if isinstance(problems, int) and not isinstance(problems, bool) and problems != entry.n_problems:
        differs.append(f"{problems} problems")
    if not differs and entry.scoring_sha256 and scoring_digest(summary) != entry.scoring_sha256:
        differs.append("other problems' results")
    return ", ".join(differs) or None


def problem_tallies(directory: str | Path, entry: LeaderboardEntry) -> dict[str, ProblemTally] | None:
    """The entry's problems as its run's summary.json counts them; None where there is no page, the summary cannot be
    read, or it was scored again since and no longer says the entry's numbers (its tallies are not the entry's)."""
    summary = linked_summary(directory, entry)
    if summary is None or rescored_since(entry, summary):
        return None
    try:
        return tallies_from_json(summary["per_problem"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def run_tallies(directory: str | Path, entries: Sequence[LeaderboardEntry]
                ) -> dict[tuple[str, str, str], Mapping[str, ProblemTally]]:
    """Every entry's problem tallies that can be read, by :attr:`LeaderboardEntry.key` (what the leaderboard views
    compare runs by, handed to them so that they read no file)."""
    return {entry.key: found for entry in entries if (found := problem_tallies(directory, entry))}
