"""The harness side: starts one fork server per worker inside the jail and feeds it jobs.

Host-side threads only move frames; all sample code runs in the fork servers' children. A worker whose
server dies (a sample killed it, or it ran out of memory) or stops answering is killed and restarted, and
the job it was running is reported as failed or timed out, so one hostile sample never stops the run.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Iterable, Iterator

from sandbox.framing import ChannelClosed, FrameReader, write_frame
from sandbox.isolation import JAIL_SCRATCH, SAMPLE_UID_BASE, Jail, SandboxUnavailable, find_jail, unsandboxed_jail

STARTUP_TIMEOUT_S = 60.0
PIPELINE_DEPTH = 2
GRACE_S = 10.0  # beyond the sample timeout, before the harness gives up on a fork server


@dataclass(frozen=True)
class Job:
    """One sample to run: the fields of ``evalsuite.task.Program`` plus an id chosen by the caller."""

    job_id: int
    problem_key: str
    candidate: str
    test: str
    check: str
    timeout_s: float | None = None  # this sample's wall-clock limit; None: the executor's default


@dataclass(frozen=True)
class Outcome:
    job_id: int
    status: str  # "passed", "failed", "timed out"
    reason: str  # short and harness-chosen; empty unless failed
    duration_s: float
    flags: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class UnsandboxedWarning(UserWarning):
    """Samples are about to run without namespace isolation."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_mb: int
    nproc: int
    fsize_mb: int
    nofile: int
    scratch_mb: int


class Worker:
    """One fork server process and the pipe protocol to it."""

    def __init__(self, index: int, jail: Jail, limits: Limits):
        self.index, self.jail, self.limits = index, jail, limits
        self.proc: subprocess.Popen | None = None
        self.reader: FrameReader | None = None
        self.scratch = None if jail.mode != "none" else tempfile.mkdtemp(prefix="evalsuite-scratch-")
        self.stderr = tempfile.TemporaryFile()
        self.restarts = 0

    def _config(self) -> str:
        as_root = os.geteuid() == 0
        child_uid = SAMPLE_UID_BASE + self.index if as_root else None
        if self.scratch is not None:
            os.chmod(self.scratch, 0o1777 if child_uid is not None else 0o700)
        return json.dumps({
            "flavor": self.jail.flavor, "scratch": self.scratch or JAIL_SCRATCH,
            "timeout_s": self.limits.timeout_s, "memory_mb": self.limits.memory_mb, "nproc": self.limits.nproc,
            "fsize_mb": self.limits.fsize_mb, "nofile": self.limits.nofile, "child_uid": child_uid,
            "host_pidns": os.readlink("/proc/self/ns/pid"),
        })

    def start(self) -> None:
        command = self.jail.command(self._config(), self.limits.scratch_mb)
        self.stderr.seek(0)
        self.stderr.truncate()
        # bubblewrap clears the environment inside the jail itself; without one, we do it here so that no
        # token or API key in the harness's environment reaches a sample.
        env = None if self.scratch is None else {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.scratch,
                                                 "TMPDIR": self.scratch, "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     start_new_session=True, close_fds=True, bufsize=0, env=env)
        self.reader = FrameReader(self.proc.stdout.fileno())

    def wait_ready(self) -> dict:
        try:
            hello = self.reader.read(STARTUP_TIMEOUT_S)
        except ChannelClosed:
            hello = None
        if not hello or not hello.get("ready"):
            self.kill()
            raise RuntimeError(f"sandbox worker {self.index} failed to start: {self.stderr_tail()}")
        return hello

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "(no output)"

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()
        self.wait_ready()

    def send(self, job: Job) -> None:
        write_frame(self.proc.stdin.fileno(), {"id": job.job_id, "key": job.problem_key,
                                               "candidate": job.candidate, "test": job.test, "check": job.check,
                                               "timeout_s": job.timeout_s})

    def receive(self, timeout_s: float) -> Outcome | None:
        """The next outcome; None if the fork server did not answer in time. Raises ChannelClosed if it died."""
        reply = self.reader.read(timeout_s + GRACE_S)
        if reply is None:
            return None
        return Outcome(reply["id"], reply["status"], reply["reason"], reply["duration_s"], tuple(reply["flags"]))

    def close(self) -> None:
        self.kill()
        self.stderr.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class Executor:
    """Runs jobs in ``workers`` sandboxed fork servers. Use as a context manager.

    Raises :class:`SandboxUnavailable` on entry when no isolation works and ``allow_unsandboxed`` is False.
    """

    def __init__(self, workers: int | None = None, timeout_s: float = 3.0, memory_mb: int = 1024,
                 allow_unsandboxed: bool = False, isolation: str = "auto", nproc: int = 32,
                 fsize_mb: int = 16, nofile: int = 256, scratch_mb: int = 64):
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
        if timeout_s <= 0 or memory_mb <= 0:
            raise ValueError("timeout_s and memory_mb must be positive")
        self.workers = workers if workers and workers > 0 else (os.cpu_count() or 1)
        self.limits = Limits(float(timeout_s), int(memory_mb), nproc, fsize_mb, nofile, scratch_mb)
        self.allow_unsandboxed = allow_unsandboxed
        self.isolation = isolation
        self.jail: Jail | None = None
        self._pool: list[Worker] = []

    @property
    def mode(self) -> str:
        return self.jail.mode if self.jail else "unknown"

    @property
    def detail(self) -> str:
        return self.jail.detail if self.jail else ""

    def _choose_jail(self) -> Jail:
        found, why = (None, "isolation='none' was requested") if self.isolation == "none" else find_jail()
        if found is not None:
            return found
        if self.isolation == "bwrap" or not self.allow_unsandboxed:
            raise SandboxUnavailable(
                f"cannot isolate sample execution: {why}. Install bubblewrap or allow user namespaces, or "
                "pass --allow-unsandboxed to run with rlimits only (the samples can then read your files "
                "and use the network)")
        warnings.warn("RUNNING SAMPLES WITHOUT A SANDBOX: they can read your files, use the network and "
                      f"signal your processes ({why})", UnsandboxedWarning, stacklevel=3)
        return unsandboxed_jail()

    def __enter__(self) -> "Executor":
        self.jail = self._choose_jail()
        self._pool = [Worker(i, self.jail, self.limits) for i in range(self.workers)]
        try:
            for worker in self._pool:
                worker.start()
            for worker in self._pool:
                worker.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._pool:
            worker.close()
        self._pool = []

    @property
    def restarts(self) -> int:
        return sum(worker.restarts for worker in self._pool)

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        """Yield one Outcome per job, in completion order."""
        if not self._pool:
            raise RuntimeError("Executor.run() outside its 'with' block")
        todo: queue.SimpleQueue[Job] = queue.SimpleQueue()
        count = 0
        for job in jobs:
            todo.put(job)
            count += 1
        done: queue.SimpleQueue[Outcome | BaseException] = queue.SimpleQueue()
        stop = threading.Event()

        def drive(worker: Worker) -> None:
            # Up to PIPELINE_DEPTH jobs are sent ahead, so the fork server never waits for the harness.
            in_flight: collections.deque[Job] = collections.deque()
            try:
                while True:
                    while len(in_flight) < PIPELINE_DEPTH and not stop.is_set():
                        try:
                            job = todo.get_nowait()
                        except queue.Empty:
                            break
                        in_flight.append(job)
                        try:
                            worker.send(job)
                        except BrokenPipeError:
                            break  # the server is gone; receive() below reports it
                    if not in_flight:
                        return
                    first = in_flight.popleft()
                    try:
                        limit = first.timeout_s or self.limits.timeout_s
                        outcome = worker.receive(limit)
                        broken = outcome is None  # the server itself stopped answering: blame the running job
                        if outcome is None:
                            outcome = Outcome(first.job_id, "timed out", "", limit + GRACE_S)
                        elif outcome.job_id != first.job_id:
                            raise RuntimeError(f"sandbox worker {worker.index} answered out of order")
                    except ChannelClosed:
                        broken = True
                        outcome = Outcome(first.job_id, "failed", "sandbox worker was killed", 0.0)
                    if broken:
                        for job in in_flight:  # sent but never started: run them again
                            todo.put(job)
                        in_flight.clear()
                        worker.restart()
                    done.put(outcome)
            except BaseException as exc:  # a worker that cannot restart ends the run with its reason
                done.put(exc)

        threads = [threading.Thread(target=drive, args=(w,), daemon=True, name=f"sandbox-{w.index}")
                   for w in self._pool[:max(1, min(len(self._pool), count))]]
        for thread in threads:
            thread.start()
        try:
            for _ in range(count):
                item = done.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            for thread in threads:
                thread.join()
