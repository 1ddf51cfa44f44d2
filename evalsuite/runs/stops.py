"""Stop signals held back for the length of one small step, then delivered as they would have been.

Why: saving a completion row and counting it (progress line, tallies) must happen together; a Ctrl-C, SIGTERM
or SIGHUP landing between the two left the progress line a row behind the file. Blocking the signals with a
thread mask is not enough (the kernel then hands them to another thread, and Python still runs the handler in
the main thread at once), so the main thread's handlers are swapped for one that only remembers the signal, and
the first one remembered is replayed through the previous handler when the step ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Run the ``with`` body whole; a stop signal that arrives meanwhile takes effect right after it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are handled in the main thread only: nothing can land here
        return
    caught: list[tuple[int, FrameType | None]] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        caught.append((signum, frame))

    previous: dict[int, Any] = {}
    for stop in STOP_SIGNALS:
        if signal.getsignal(stop) is not None:  # None: a handler not set from Python, left alone
            previous[stop] = signal.signal(stop, remember)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            first, frame = caught[0]
            handler = previous[first]
            if callable(handler):
                handler(first, frame)  # Ctrl-C's KeyboardInterrupt, or the CLI's Stopped for SIGTERM/SIGHUP
            elif handler == signal.SIG_DFL:
                signal.raise_signal(first)  # the default action, now
