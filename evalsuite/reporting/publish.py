"""Adding entries to the leaderboard: store them (:mod:`.store`), then redraw every leaderboard view
(:mod:`.views`) from the stored entries and the runs' problem tallies storage reads. The one place where storage and
pages meet, so that neither imports the other."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from evalsuite.reporting.model import LeaderboardEntry
from evalsuite.reporting.store import linked_summary, rescored_since, run_tallies, store_entries
from evalsuite.reporting.views import write_leaderboard_views


def update_leaderboard(directory: str | Path, new_entries: Sequence[LeaderboardEntry],
                       render_html: bool = True) -> list[LeaderboardEntry]:
    """Load, merge the new entries, save and (by default) redraw the leaderboard's pages; returns all entries."""
    return store_entries(directory, new_entries, then=(lambda entries: _pages_or_warning(directory, entries))
                         if render_html else None)


def _pages_or_warning(directory: str | Path, entries: Sequence[LeaderboardEntry]) -> None:
    """The pages, drawn after leaderboard.json is saved: a folder that takes the JSON but not the pages (full, or
    the page read-only) loses the pages alone, said once; the entries and the --fail-under gate stand."""
    try:
        write_leaderboard_pages(directory, entries)
    except OSError as exc:
        print(f"warning: cannot write the leaderboard's page in {directory} ({exc.strerror or exc}): "
              "leaderboard.json holds the entries; `evalsuite leaderboard` draws the page again", file=sys.stderr)


def write_leaderboard_pages(directory: str | Path, entries: Sequence[LeaderboardEntry]) -> Path:
    """Redraw every leaderboard view in ``directory`` from ``entries`` and their runs' problem tallies; returns the
    leaderboard's page."""
    return write_leaderboard_views(directory, with_pages_found(directory, entries), run_tallies(directory, entries))


def with_pages_found(directory: str | Path, entries: Sequence[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """The entries as the pages show them: one whose run folder was deleted since keeps its row and loses its link,
    which led nowhere; so does one whose run was scored again since into the same folder by a rerun that added
    to another leaderboard or none (its page says other numbers: :func:`pages_rescored_since`). The stored entry
    keeps its link (the folder may come back, from a backup; a rerun here puts it back in step)."""
    rescored = pages_rescored_since(directory, entries)
    return [entry if not entry.run_page or ((Path(directory) / entry.run_page).is_file() and entry.key not in rescored)
            else dataclasses.replace(entry, run_page=None) for entry in entries]


def pages_rescored_since(directory: str | Path, entries: Sequence[LeaderboardEntry]) -> dict[tuple, str]:
    """Entry key -> what its linked run's summary says now, for each entry whose run page no longer says its
    numbers."""
    out = {}
    for entry in entries:
        summary = linked_summary(directory, entry)
        said = rescored_since(entry, summary) if summary is not None else None
        if said:
            out[entry.key] = said
    return out
