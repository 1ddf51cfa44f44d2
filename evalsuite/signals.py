"""Stop signals held back while heavy modules import.

A SIGTERM, SIGHUP or Ctrl-C raises in the main thread wherever it is (``evalsuite.cli.stops_as_interrupts``).
Raised inside torch's or transformers' import, it left numpy half-imported: the run then ended in a traceback, or
as "needs torch and transformers: pip install" (an ImportError), a broken install blamed for a stop (the
twenty-third session's red-team round). Held back, the stop is raised once the import is done, where the run
handles it as any other stop. The stop handler asks :func:`held` first; blocking the signals instead would not
do: a process-directed signal goes to any thread that does not block it, and Python runs the handler in the main
thread all the same.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_depth = [0]  # stops_held blocks open in the main thread
_pending: list[int] = []  # stops that arrived inside them, the first is raised at the end


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Stops that arrive in the block are raised at its end (main thread only: handlers run nowhere else)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if not _depth[0] and _pending:
            signum = _pending[0]
            _pending.clear()
            signal.raise_signal(signum)  # the handler runs now, outside the import


def held(signum: int) -> bool:
    """For a stop handler: True when a :func:`stops_held` block is open, the stop then kept for its end."""
    if _depth[0] and threading.current_thread() is threading.main_thread():
        _pending.append(signum)
        return True
    return False


__all__ = ["held", "stops_held"]
