"""The report views, registered in one place: a new view is one module that defines ``VIEW`` (a
:class:`~.contract.LeaderboardView` or :class:`~.contract.RunView`) plus one registration in :data:`VIEWS`
(here for the built-ins; an ``evalsuite.views`` entry point for an installed package's).

Callers never name a page: the finishing of a run writes every run view (:func:`write_run_views`), and
storing entries writes every leaderboard view (:func:`write_leaderboard_views`, via
:func:`evalsuite.reporting.publish.update_leaderboard`). Storage (:mod:`evalsuite.reporting.store`) never
imports from here, and nothing here reads a file: a view is handed typed values (the run's
:class:`~evalsuite.scoring.ScoreSummary`, the runs' problem tallies that storage read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evalsuite.jsonl import atomic_write_text
from evalsuite.registry import Registry
from evalsuite.reporting.model import LeaderboardEntry
from evalsuite.reporting.views.contract import (
    LeaderboardData,
    LeaderboardView,
    RunHeader,
    RunReport,
    RunView,
    SampleView,
    Tallies,
)
from evalsuite.scoring.summary import ScoreSummary

# The registry: one line per built-in view module (imported on first use: the pages are not loaded by a command
# that draws none); installed packages add views through the ``evalsuite.views`` entry point group. The first run
# view is the run's page, the one the leaderboard links to; the first leaderboard view is the leaderboard's page.
VIEWS: Registry[LeaderboardView | RunView] = Registry("views", "report view")
VIEWS.register_lazy("leaderboard page", "evalsuite.reporting.views.leaderboard_page:VIEW")
VIEWS.register_lazy("run page", "evalsuite.reporting.views.run_page:VIEW")


def registered_views() -> list[LeaderboardView | RunView]:
    """Every registered view, in registration order (built-ins first, then plugins')."""
    return [view for _, view in VIEWS]


def leaderboard_views() -> list[LeaderboardView]:
    return [view for view in registered_views() if isinstance(view, LeaderboardView)]


def run_views() -> list[RunView]:
    return [view for view in registered_views() if isinstance(view, RunView)]


def write_leaderboard_views(folder: str | Path, entries: Sequence[LeaderboardEntry],
                            tallies: Tallies | None = None) -> Path:
    """Write every leaderboard view into ``folder``; returns the leaderboard's page (the first view's file).
    ``tallies``: the runs' problem tallies (:func:`evalsuite.reporting.store.run_tallies` reads them; none given:
    the views show no per-problem comparison)."""
    folder = Path(folder)
    data = LeaderboardData(entries=entries, tallies=dict(tallies or {}))
    written = []
    for view in leaderboard_views():
        written.append(folder / view.file)
        atomic_write_text(written[-1], view.render(data))
    return written[0]


def write_run_views(folder: str | Path, header: RunHeader, summary: ScoreSummary, samples: Sequence[SampleView],
                    prompts: Mapping[str, str]) -> Path:
    """Write every run view into the run's ``folder``; returns the run's page (the first view's file), the one
    the leaderboard entry links to."""
    folder = Path(folder)
    report = RunReport(header, summary, samples, prompts)
    written = []
    for view in run_views():
        written.append(folder / view.file)
        atomic_write_text(written[-1], view.render(report))
    return written[0]


__all__ = ["VIEWS", "registered_views", "leaderboard_views", "run_views", "write_leaderboard_views",
           "write_run_views"]
