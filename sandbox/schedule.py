"""Which job a worker runs next: never one of a problem that another worker holds.

Why: every covert channel between samples running at the same time on different workers (the shared caches
timed by Flush+Reload or by eviction, interrupts sent to other CPUs, locks on shared files: docs/sandbox.md) needs
a correct sender and a wrong receiver *of the same problem* at the same time: the receiver wants the answers to
its own tests. Samples of one worker run one after another, each forked afresh, and what one leaves for the next
is bounded (docs/sandbox.md, "Residual risks"). So a problem's jobs go to one worker at a time: no two samples of
one problem ever overlap, whatever channel exists between two CPUs, found or not.

The cost: a run of a single problem executes its samples on one worker, one at a time; with many problems the
workers stay busy (each takes the first problem in order that no other worker holds), and only the last
problem's samples run alone.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from typing import Protocol


class _Keyed(Protocol):
    @property
    def problem_key(self) -> str: ...


class OneProblemOneWorker:
    """Pending jobs, grouped by problem in order of first appearance, and which worker holds each problem (it has
    jobs of it sent or running). Thread-safe: each worker's thread takes and releases its own jobs."""

    def __init__(self, jobs: Iterable[_Keyed]) -> None:
        self._pending: dict[str, collections.deque] = {}
        for job in jobs:
            self._pending.setdefault(job.problem_key, collections.deque()).append(job)
        self.count = sum(len(queue) for queue in self._pending.values())
        self._holder: dict[str, tuple[int, int]] = {}  # problem -> (worker, how many of its jobs that worker holds)
        self._changed = threading.Condition()

    def take(self, worker: int, wait: bool = False, stopped: Callable[[], bool] = lambda: False):
        """The next job ``worker`` may run, now held by it; None when no job is left, or, without ``wait``, when
        every job left is of a problem another worker holds. With ``wait`` it waits for such a problem to be
        released (or for ``stopped``)."""
        with self._changed:
            while True:
                for problem, queue in self._pending.items():
                    holder, held = self._holder.get(problem, (worker, 0))
                    if queue and holder == worker:
                        self._holder[problem] = (worker, held + 1)
                        job = queue.popleft()
                        if not queue:
                            del self._pending[problem]
                        return job
                if not self._pending or not wait or stopped():
                    return None
                self._changed.wait(0.1)

    def release(self, worker: int, job: _Keyed) -> None:
        """``job`` is done (its outcome is in): its problem is free once ``worker`` holds no other job of it."""
        with self._changed:
            holder, held = self._holder[job.problem_key]
            assert holder == worker, (holder, worker)
            if held > 1:
                self._holder[job.problem_key] = (worker, held - 1)
            else:
                del self._holder[job.problem_key]
            self._changed.notify_all()

    def put_back(self, worker: int, job: _Keyed) -> None:
        """``job`` was sent but never started (its worker restarted): released, and first in line again."""
        self.release(worker, job)
        with self._changed:
            self._pending.setdefault(job.problem_key, collections.deque()).appendleft(job)
            self._changed.notify_all()
