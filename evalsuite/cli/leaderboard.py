"""``evalsuite leaderboard``: print the table, render ``index.html``, and gate CI with ``--fail-under``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from evalsuite.cli.json_output import add_json_argument, print_json, stdout_to_stderr
from evalsuite.cli.options import add_fail_under_argument
from evalsuite.errors import EvalsuiteError
from evalsuite.reporting.gate import check_fail_under, raise_shortfalls
from evalsuite.reporting.labels import display_labels, estimate_text
from evalsuite.reporting.model import LeaderboardEntry
from evalsuite.reporting.store import LEADERBOARD_FILE, load_leaderboard, locked
from evalsuite.reporting.terminal import Table
from evalsuite.reporting.views.leaderboard_page import HTML_FILE
from evalsuite.untrusted import visible


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="print the leaderboard and render leaderboard/index.html",
        description="Print the leaderboard, render a static HTML page, and optionally fail under a threshold.")
    parser.add_argument("--leaderboard-dir", "--dir", dest="dir", default="leaderboard", type=Path, metavar="DIR",
                        help=f"folder holding {LEADERBOARD_FILE}; {HTML_FILE} is written there (default: leaderboard)")
    parser.add_argument("--model", action="append", default=None, metavar="NAME",
                        help="only show and gate this model (display name or model id; repeatable)")
    parser.add_argument("--task", action="append", default=None, metavar="TASK",
                        help="only show and gate this task (repeatable)")
    add_fail_under_argument(parser)
    parser.add_argument("--no-html", action="store_true", help=f"do not (re)write {HTML_FILE}")
    add_json_argument(parser)
    parser.set_defaults(handler=main)


# -- the terminal table ------------------------------------------------------------------------------

def _clean(text: str, limit: int | None = None) -> str:
    """No terminal escape sequences, bidi or invisible characters from model names (each shown as an escape such
    as ``\\x1b``); with a ``limit``, long text is cut with an ellipsis."""
    text = visible(text)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _name_cell(entry: LeaderboardEntry, label: str, limit: int | None) -> str:
    """The model's label, whole by default: a partial run and the full one must never look alike. With a
    ``limit``, only the model's name is cut (with "…"); what sets the row apart, e.g. ``(partial 5/164)``,
    always stays whole."""
    if limit is None or len(label) <= limit:
        return _clean(label)
    suffix = label[len(entry.model):] if label.startswith(entry.model) else ""
    return _clean(entry.model, max(8, limit - len(suffix))) + _clean(suffix)


def format_table(entries: Sequence[LeaderboardEntry], max_name: int | None = None) -> str:
    """Aligned plain-text table: model, task, pass@k with 95% CI, n, T, date; best first within a task.

    Model names are printed whole (``max_name`` cuts long names, never their settings labels)."""
    if not entries:
        return ""
    ks = sorted({k for entry in entries for k in entry.ks()})
    labels = display_labels(entries)

    def rank(entry: LeaderboardEntry) -> tuple:
        first = entry.metrics.get(f"pass@{entry.ks()[0]}")
        return (entry.task, -(first.value if first else 0.0), entry.model.casefold())

    header = ["model", "task"] + [f"pass@{k} [95% CI]" for k in ks] + ["n", "T", "date"]
    rows = []
    for entry in sorted(entries, key=rank):
        cells = [_name_cell(entry, labels[entry.key], max_name), _clean(entry.task)]
        for k in ks:
            metric = entry.metrics.get(f"pass@{k}")
            cells.append(estimate_text(metric) if metric else "-")
        cells += [str(entry.n), f"{entry.temperature:g}", entry.date[:10]]
        rows.append(cells)
    numeric = frozenset(range(2, len(header) - 1))
    return Table(rows, header, right=numeric, rule=True, pad_last=False).render()


# -- the command -------------------------------------------------------------------------------------

def main(args: argparse.Namespace) -> int:
    json_out = getattr(args, "json", False)
    path = args.dir / LEADERBOARD_FILE
    if not args.dir.is_dir():  # a typo: say so, rather than make the folder and show an empty board
        raise EvalsuiteError(f"no leaderboard folder {args.dir} (`evalsuite run` makes it; --leaderboard-dir "
                             "names the one to read)")
    # under the folder's lock, as a run's store_entries draws them: a run saving meanwhile would be missing from
    # the page (or shown with its replaced entry's number) until the next write
    with stdout_to_stderr(json_out), locked(args.dir):
        entries = load_leaderboard(path)
        shown = [e for e in entries
                 if (args.model is None or e.model in args.model or e.model_id in args.model)
                 and (args.task is None or e.task in args.task)]
        if json_out:
            pass  # the entries are the output
        elif shown:
            print(format_table(shown))
        elif entries:
            print(f"no entries in {path} match the --model/--task selection")
        else:
            print(f"no entries yet in {path}; `evalsuite run` adds them")
        from evalsuite.reporting.publish import pages_rescored_since, write_leaderboard_pages

        labels = display_labels(entries)
        rescored = pages_rescored_since(args.dir, shown)
        for key, said in rescored.items():
            print(f"warning: {labels[key]} on {key[1]}: its run was scored again since it was added here (a rerun "
                  f"into the same folder that updated another leaderboard or none): the run's page now says {said}; "
                  "the entry keeps its own numbers and loses its link (rerun with this --leaderboard-dir to "
                  "update it)", file=sys.stderr)
        written = None
        if not args.no_html:
            try:
                written = write_leaderboard_pages(args.dir, entries)  # the pages always show everything
            except OSError as exc:  # a read-only folder: the table, the JSON and the gate still stand
                print(f"warning: cannot write the leaderboard's page in {args.dir} ({exc.strerror or exc}); "
                      "--no-html skips it", file=sys.stderr)
            else:
                if not json_out:
                    print(f"wrote {written}", file=sys.stderr)  # stdout holds the table alone
    shortfalls = check_fail_under(shown, args.fail_under, models=args.model) if args.fail_under else []
    if json_out:
        from evalsuite.runs.results import FailUnder, leaderboard_json

        gate = FailUnder(dict(args.fail_under), shortfalls) if args.fail_under else None
        print_json(leaderboard_json(path, shown, written, gate, rescored))
    raise_shortfalls(shortfalls)
    if args.fail_under and not json_out:
        print(f"--fail-under met by all {len(shown)} selected entr{'y' if len(shown) == 1 else 'ies'}")
    return 0
