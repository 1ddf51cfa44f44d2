"""The trusted checker: runs a problem's test code, outside the sample's process, and decides the verdict.

Started by :mod:`sandbox.pool` as ``python -I -B checker.py CONFIG_JSON`` with the control socket of the
worker's jailed sample server on fd ``config["control_fd"]``. It speaks length-prefixed marshal frames
(:mod:`sandbox.framing`) with the harness on stdin/stdout: one job in, one outcome out.

Per sample it makes a fresh socket pair (the call channel), hands one end with the candidate's source to
the sample server (which runs the candidate in a fresh jailed process) and runs, with pristine builtins
(nothing untrusted ever runs in this process), the problem's trusted prelude (the prompt's own definitions, e.g. HumanEval's
``poly``), the test code and the check, with the entry point's name bound to a proxy that calls the
candidate over the channel (:class:`sandbox.channel.CallClient`). The test code, its expected values, its
random state and the verdict never enter the sample's process. The verdict is made here, from a fixed
vocabulary; the candidate's own exception message travels apart, as ``sample_error``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

if __package__:
    from sandbox import channel, framing
else:  # run as a script: import the sibling modules, then hide their directory again
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import channel  # type: ignore[no-redef]
    import framing  # type: ignore[no-redef]
    del sys.path[0]

GRACE_S = 1.0  # past the sample's deadline, before a test that does not finish is killed
CONTROL_TIMEOUT_S = 10.0  # for the sample server to clean up after a sample

# Reasons a verdict may carry besides built-in exception class names. Nothing else is ever reported.
FIXED_REASONS = frozenset({
    "exception", "non-plain value", "channel tampered", "sample process died", "return value too large",
    "unsupported argument", "test code does not compile", "test setup failed", "timed out",
    "sandbox setup failed in the child", "exited before the test finished", "sandbox worker was killed",
    "checker failed",
})
KNOWN_FLAGS = frozenset({"non_plain_value", "channel_tampered"})
SIGNAL_HINTS = {"SIGKILL": " (memory or process limit?)", "SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)"}
EXIT_SETUP_FAILED = 70  # the sample server's child could not set up its jail


@dataclass
class CompiledProblem:
    digest: str
    prelude: Any
    test: Any
    check: Any
    entry_point: str
    error: str  # non-empty when the trusted code itself does not compile


def entry_point_of(check: str) -> str:
    """``check(name)`` -> ``name``: the default when a task does not name its entry point."""
    text = check.strip()
    if text.startswith("check(") and text.endswith(")") and text[6:-1].strip().isidentifier():
        return text[6:-1].strip()
    return ""


def compile_prelude(prelude: str, key: str) -> Any:
    """The prompt's own code as a module. A prompt ends in the entry point's docstring, which compiles as a
    stub; one that stops right after ``def f(...):`` gets a ``pass`` body so its helpers still load."""
    if not prelude.strip():
        return None
    try:
        return compile(prelude, f"<prompt {key}>", "exec", dont_inherit=True)
    except SyntaxError:
        return compile(prelude.rstrip() + "\n    pass\n", f"<prompt {key}>", "exec", dont_inherit=True)


class Checker:
    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.problems: dict[str, CompiledProblem] = {}
        self.control = socket.socket(fileno=config["control_fd"])
        self.control_reader = framing.FrameReader(self.control.fileno())

    def compiled(self, job: dict[str, Any]) -> CompiledProblem:
        key = job["key"]
        if "test" not in job:  # the harness sends a problem's code once; later jobs name it by key
            return self.problems[key]
        parts = [job.get("prelude", ""), job["test"], job["check"], job.get("entry_point", "")]
        digest = hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()
        cached = self.problems.get(key)
        if cached is not None and cached.digest == digest:
            return cached
        entry_point = job.get("entry_point") or entry_point_of(job["check"])
        try:
            problem = CompiledProblem(digest, compile_prelude(job.get("prelude", ""), key),
                                      compile(job["test"], f"<test {key}>", "exec", dont_inherit=True),
                                      compile(job["check"], f"<check {key}>", "exec", dont_inherit=True), entry_point, "")
        except (SyntaxError, ValueError, RecursionError):
            problem = CompiledProblem(digest, None, None, None, entry_point, "test code does not compile")
        if not entry_point and not problem.error:
            problem.error = "test code does not compile"
        self.problems[key] = problem
        return problem

    # -- one sample ------------------------------------------------------------------------------------
    def handle(self, job: dict[str, Any]) -> dict[str, Any]:
        problem = self.compiled(job)
        outcome = {"id": job["id"], "status": "failed", "reason": problem.error, "flags": [], "sample_error": "",
                   "duration_s": 0.0}
        if problem.error:
            return outcome
        timeout = float(job.get("timeout_s") or self.config["timeout_s"])
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        started = time.monotonic()
        try:
            framing.send_frame(self.control, {"op": "run", "id": job["id"], "candidate": job["candidate"],
                                              "entry_point": problem.entry_point, "timeout_s": timeout},
                               fds=[theirs.fileno()], binary=True)
        except OSError:
            ours.close()
            theirs.close()
            outcome.update(reason="sandbox worker was killed", restart=True)
            return outcome
        theirs.close()
        try:
            report = run_test(problem, ours.fileno(), started + timeout)
        finally:
            ours.close()
        duration = time.monotonic() - started
        exit_info = self.end_sample(job["id"])
        outcome.update(self.verdict(report, exit_info))
        outcome["duration_s"] = round(duration, 6)
        return outcome

    def end_sample(self, job_id: int) -> dict[str, Any] | None:
        """Tell the sample server to kill the sample's processes; its answer says how the sample ended."""
        try:
            framing.send_frame(self.control, {"op": "end", "id": job_id}, binary=True)
            reply = self.control_reader.read(CONTROL_TIMEOUT_S)
        except (OSError, framing.ChannelClosed, ValueError):
            return None
        if not isinstance(reply, dict) or reply.get("id") != job_id:
            return None
        return reply

    def verdict(self, report: dict[str, Any], exit_info: dict[str, Any] | None) -> dict[str, Any]:
        if exit_info is None:  # the sample server is gone or hung: this worker must be restarted
            result = {"status": "failed", "reason": "sandbox worker was killed", "flags": [], "restart": True}
            if report["status"] == "timed out":
                result.update(status="timed out", reason="")
            return result
        status, reason = report["status"], report["reason"]
        if status == "failed" and reason == "sample process died":
            reason = describe_exit(exit_info)
        return {"status": status, "reason": reason, "flags": report["flags"], "sample_error": report["sample_error"]}

    def serve(self, in_fd: int, out_fd: int) -> None:
        hello = self.control_reader.read(60.0)
        if not isinstance(hello, dict) or not hello.get("ready"):
            raise SystemExit("checker: the sample server did not start")
        framing.write_frame(out_fd, dict(hello, checker_pid=os.getpid()), binary=True)
        reader = framing.FrameReader(in_fd, binary=True)  # the harness's frames, and ours to it: both trusted
        while True:
            try:
                job = reader.read()
            except framing.ChannelClosed:
                return
            outcome = self.handle(job)
            framing.write_frame(out_fd, outcome, binary=True)
            if outcome.get("restart"):
                return


def describe_exit(exit_info: dict[str, Any]) -> str:
    """How the sample's process ended, in fixed words."""
    sig, code = exit_info.get("signal"), exit_info.get("code")
    if type(sig) is int and sig > 0:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "a signal"
        return f"killed by {name}{SIGNAL_HINTS.get(name, '')}"
    if code == EXIT_SETUP_FAILED:
        return "sandbox setup failed in the child"
    return "exited before the test finished"


# -- the trusted test ------------------------------------------------------------------------------------
class _Overrun(BaseException):
    """The trusted test itself ran past the sample's deadline (raised by a timer signal)."""


def _overrun(signum: int, frame: Any) -> None:
    raise _Overrun()


def run_test(problem: CompiledProblem, channel_fd: int, deadline: float) -> dict[str, Any]:
    """Run prelude, test and check against the candidate's proxy, in this (trusted) process.

    Nothing untrusted ever runs here, so ``builtins`` and every module are pristine; each sample gets a
    fresh namespace. A timer stops a test that runs past the deadline (plus a grace) on its own.
    """
    import builtins

    client = channel.CallClient(channel_fd, deadline)
    status, reason, flags = "failed", "", []
    previous = signal.signal(signal.SIGALRM, _overrun)
    signal.setitimer(signal.ITIMER_REAL, max(deadline + GRACE_S - time.monotonic(), 0.001))
    try:
        client.wait_ready()
        namespace: dict[str, Any] = {"__builtins__": builtins.__dict__}  # as exec(program, {}): no __name__
        if problem.prelude is not None:
            try:
                exec(problem.prelude, namespace)
            except Exception:
                raise _SetupFailed() from None
        namespace[problem.entry_point] = client.proxy(problem.entry_point)
        exec(problem.test, namespace)
        exec(problem.check, namespace)
        status = "passed"
    except _SetupFailed:
        reason = "test setup failed"
    except channel.ChannelFailure:
        pass  # client.failure says what happened
    except _Overrun:
        client.timed_out = True
        client.failure = client.failure or ("timed out", "")
    except BaseException as exc:
        reason = reason_for(exc, client)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if client.failure is not None:  # even when the test swallowed it
        status, reason = ("timed out", "") if client.timed_out else ("failed", client.failure[0])
        if client.failure[1]:
            flags.append(client.failure[1])
    elif status == "passed" and client.unsolicited_data():
        status, reason, flags = "failed", "channel tampered", ["channel_tampered"]
    if reason and reason not in FIXED_REASONS and reason not in channel.BUILTIN_EXCEPTIONS:
        reason = "exception"
    return {"status": status, "reason": reason if status == "failed" else "",
            "flags": [f for f in flags if f in KNOWN_FLAGS], "sample_error": client.sample_error}


class _SetupFailed(Exception):
    pass


def reason_for(exc: BaseException, client: channel.CallClient) -> str:
    """The trusted name of the exception that ended the test: the candidate's own (by its built-in class, or
    ``exception``) or the test's (an ``AssertionError``, say)."""
    raised = client.raised.get(id(exc))
    if raised is not None:
        name, exact = raised
        return name if exact else "exception"
    return channel.builtin_class_of(exc)[0]


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    in_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints from test code must not corrupt the protocol
    os.close(null)
    Checker(config).serve(in_fd, out_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
