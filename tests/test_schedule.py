"""No two workers hold jobs of one problem at once (sandbox/schedule.py): the order a worker gets, the waits, the
restarts' put-backs, and, in the jail, samples of one problem that never overlap in time."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sandbox.schedule import OneProblemOneWorker


@dataclass(frozen=True)
class FakeJob:
    problem_key: str
    number: int


def jobs(*counts: tuple[str, int]) -> list[FakeJob]:
    return [FakeJob(problem, i) for problem, count in counts for i in range(count)]


def test_a_worker_takes_the_first_problem_no_other_worker_holds():
    todo = OneProblemOneWorker(jobs(("a", 3), ("b", 2), ("c", 1)))
    assert todo.count == 6
    first = todo.take(0)
    assert first == FakeJob("a", 0)
    assert todo.take(1) == FakeJob("b", 0)  # "a" is worker 0's
    assert todo.take(0) == FakeJob("a", 1)  # its own problem, next
    assert todo.take(2) == FakeJob("c", 0)
    assert todo.take(2) is None  # "a" and "b" are held, "c" has no job left: nothing for worker 2 now
    todo.release(0, first)
    assert todo.take(2) is None  # worker 0 still holds a:1
    todo.release(0, FakeJob("a", 1))
    assert todo.take(2) == FakeJob("a", 2)  # free again


def test_a_waiting_worker_gets_the_problem_when_it_is_released_and_none_when_all_are_done():
    todo = OneProblemOneWorker(jobs(("a", 2)))
    held = todo.take(0)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(todo.take(1, wait=True)))
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and not got  # waits: the only problem is worker 0's
    todo.release(0, held)
    waiter.join(5)
    assert got == [FakeJob("a", 1)]
    todo.release(1, got[0])
    assert todo.take(0, wait=True) is None  # nothing left: no wait


def test_a_stopped_wait_returns_and_a_put_back_job_comes_first():
    todo = OneProblemOneWorker(jobs(("a", 3)))
    first, second = todo.take(0), todo.take(0)
    assert todo.take(1, wait=True, stopped=lambda: True) is None
    todo.put_back(0, second)  # its worker restarted before running it
    todo.release(0, first)
    assert todo.take(1) == second  # first in line again, and free for any worker


def test_samples_of_one_problem_never_overlap_in_the_jail():
    """Two workers, two problems (one task under two keys), four samples each that note when they ran: samples of
    one problem never overlap; samples of the two problems do (the workers still run side by side)."""
    import pytest

    import redteam_kit as kit
    from sandbox import Executor, Job, detect_isolation

    if detect_isolation() == "none":
        pytest.skip("needs namespace isolation (bubblewrap)")
    prelude, test, check, _ = kit.PROBLEMS["add"]
    code = prelude + "    import time\n    start = time.time()\n    time.sleep(0.3)\n" \
                     "    raise ValueError(f'{start} {time.time()}')\n"
    batch = [Job(i, f"add-{i % 2}", code, test, check, prelude=prelude) for i in range(8)]  # interleaved
    with Executor(workers=2, timeout_s=5) as executor:
        outcomes = list(executor.run(batch))
    spans: dict[str, list[tuple[float, float]]] = {"add-0": [], "add-1": []}
    for outcome in outcomes:
        start, end = map(float, outcome.sample_error.removeprefix("ValueError: ").split())
        spans[f"add-{outcome.job_id % 2}"].append((start, end))
    for problem, intervals in spans.items():
        intervals.sort()
        assert len(intervals) == 4
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(intervals, intervals[1:])), (problem, intervals)
    assert any(a_start < b_end and b_start < a_end
               for a_start, a_end in spans["add-0"] for b_start, b_end in spans["add-1"])
