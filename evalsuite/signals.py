"""Stop signals held back while heavy modules import.

A SIGTERM, SIGHUP or Ctrl-C raises in the main thread wherever it is (``evalsuite.cli.stops_as_interrupts``).
Raised inside torch's or transformers' import, it left numpy half-imported: the run then ended in a traceback, or
as "needs torch and transformers: pip install" (an ImportError), a broken install blamed for a stop (the
twenty-third session's red-team round). Held back, the signal arrives once the import is done, where the run
handles it as any other stop.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Block the stop signals for the block (main thread only; elsewhere they never arrive anyway)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a held signal is delivered here


__all__ = ["STOPS", "stops_held"]
