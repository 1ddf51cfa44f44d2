"""One ``model.generate`` call whose rows come out as each one ends, not when the whole batch returns.

Why: plain generate decodes a whole batch in one call, which on a CPU lasts minutes; a row that ended at step 20
waited for the slowest row of its batch before it was saved or counted, and a stopped job lost it. The call runs
in a worker thread; its stopping criterion posts each row the moment it ends (and the tokens of every step) to a
queue that the calling thread reads. Saving, progress and signal handling (Ctrl-C, SIGTERM, SIGHUP raise in the
main thread only) thus stay where they were, and the worker is always stopped and joined before the caller goes
on, so the model is never freed under a running call.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

POLL_S = 0.2  # how often the waiting thread wakes: a signal is handled within this, whatever the platform


@dataclass(frozen=True)
class RowEnded:
    """Row ``index`` of the batch ended after ``generated`` (its new token ids, the stop token included)."""

    index: int
    generated: list[int]


@dataclass(frozen=True)
class TokensDecoded:
    """One decoding step made ``count`` tokens (the rows still decoding)."""

    count: int


@dataclass(frozen=True)
class BatchDone:
    """The call returned ``output`` (prompt and generated ids of every row)."""

    output: Any


Event = RowEnded | TokensDecoded | BatchDone


class StreamedCall:
    """Runs ``call`` in a worker thread; :meth:`events` yields what it posts through :meth:`post` in order, ending
    with :class:`BatchDone` (or raising the call's exception). Leaving the ``with`` block stops the call at its next
    step (``cancel`` is called from here) and waits for it."""

    def __init__(self, call: Callable[[], Any], cancel: Callable[[], None], threaded: bool = True):
        """``threaded`` False runs the call in the calling thread when :meth:`events` starts: rows are then read
        once the call returns (or is stopped), as on a GPU, where a batch's rows end within seconds and the
        decoding stays on the thread that made the model's CUDA state."""
        self._call, self._cancel = call, cancel
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threaded = threaded
        self._worker = threading.Thread(target=self._work, name="evalsuite-generate", daemon=True)

    def post(self, event: Event) -> None:
        """Called from the worker (the stopping criterion) for each row that ends and each step."""
        self._queue.put(event)

    def __enter__(self) -> StreamedCall:
        if self._threaded:
            self._worker.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def events(self) -> Iterator[Event]:
        if not self._threaded:
            self._queue.put(BatchDone(self._call()))  # a stop raises here; stop() then hands over the ended rows
        while True:
            try:
                event = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if isinstance(event, BaseException):
                raise event
            yield event
            if isinstance(event, BatchDone):
                return

    def stop(self) -> list[RowEnded]:
        """Stop the call at its next step, wait for it, and return the rows that ended but were not read yet."""
        if self._worker.is_alive():
            self._cancel()
            self._worker.join()
        left: list[RowEnded] = []
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return left
            if isinstance(event, RowEnded):
                left.append(event)

    def _work(self) -> None:
        try:
            self._queue.put(BatchDone(self._call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
            self._queue.put(exc)
