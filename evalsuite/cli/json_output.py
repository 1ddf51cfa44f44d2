"""``--json`` of ``run``, ``evaluate`` and ``leaderboard``: the summary is the only thing on stdout.

While the command works, everything that would reach stdout (tables, "wrote ..." lines, a library's print,
a child process writing to fd 1) goes to stderr instead; the JSON document is printed at the end.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from evalsuite.untrusted import dumps


def add_json_argument(parser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print a machine-readable summary on stdout (its JSON Schema: "
                             "evalsuite/reporting/cli_output.schema.json) and nothing else there; "
                             "tables and progress go to stderr")


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True) -> Iterator[None]:
    """Send Python's stdout and file descriptor 1 to stderr for the duration (a no-op unless ``enabled``)."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = None
    try:
        if sys.stdout.fileno() == 1:
            saved = os.dup(1)
            os.dup2(2, 1)
    except (AttributeError, OSError, ValueError):  # a replaced sys.stdout (pytest's capsys): Python level only
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def print_json(document: Any) -> None:
    print(dumps(document, indent=2), flush=True)  # no raw control or bidi character reaches the terminal
