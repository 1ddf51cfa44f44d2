"""Red-team suite: hostile completions against the real sandbox (bubblewrap fork servers).

Every attack is written so that it *passes* only if it succeeded (it returns the right answer after
reading the secret, reaching the listener, lifting a limit, ...) or fakes a pass, and each is bounded in
time (a 1.5 s sample timeout) and size. All attacks run in one batch together with correct control
samples, so the suite also shows that a run survives them and scores everything else.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sandbox import Executor, Job, detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")

TIMEOUT_S = 1.5
PROMPT = "def add(a, b):\n"
TEST = textwrap.dedent("""
    import math

    def check(candidate):
        assert candidate(1, 2) == 3
        assert abs(candidate(2.5, 0.5) - 3.0) < 1e-9
        assert math.isclose(candidate(10, -4), 6)
        assert candidate(0, 0) is not None
""")
CORRECT = "    return a + b\n"
WRONG = "    return a - b\n"
# Attack output must never appear in a verdict: these markers are planted where an attack could echo them.
LEAK_MARKERS = ("PWNED", "TOPSECRET")
ALLOWED_REASON_WORDS = {"timed out", "failed: "}


def body(code: str) -> str:
    """Indent module-level attack code so it sits inside ``add`` (runs when the test calls it)."""
    return textwrap.indent(textwrap.dedent(code), "    ")


def module(code: str) -> str:
    """Attack code that runs at import time of the candidate, after a wrong ``add``."""
    return PROMPT + WRONG + textwrap.dedent(code)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Secrets and writable targets outside the sandbox, plus a TCP listener on 127.0.0.1."""
    repo_tests = Path(__file__).resolve().parent
    home = Path(tempfile.mkdtemp(prefix=".redteam-home-", dir=repo_tests))  # visible unless HOME is hidden
    (home / "secret.txt").write_text("TOPSECRET-home\n")
    host_tmp = tmp_path_factory.mktemp("host-tmp")
    (host_tmp / "secret.txt").write_text("TOPSECRET-tmp\n")
    targets = [home, host_tmp, Path(tempfile.mkdtemp(prefix=".redteam-out-", dir=repo_tests))]
    for target in targets:
        os.chmod(target, 0o777)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    yield {"home": home, "host_tmp": host_tmp, "targets": targets, "port": listener.getsockname()[1],
           "accepted": accepted}
    stop.set()
    thread.join()
    listener.close()
    for target in targets:
        shutil.rmtree(target, ignore_errors=True)


def attacks(p) -> dict[str, str]:
    home, host_tmp, port = p["home"], p["host_tmp"], p["port"]
    write_targets = [str(t / "pwned.txt") for t in p["targets"]] + ["/pwned.txt", "/usr/pwned.txt",
                                                                   "/dev/shm/pwned.txt"]
    return {
        # -- resource exhaustion -------------------------------------------------------------------------
        "fork_bomb": module("""
            import os
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
            """),
        "memory_bomb": module("""
            blocks = []
            while True:
                blocks.append(bytes(1 << 30))  # beyond the 512 MiB address-space limit
            """),
        "memory_creep": module("""
            blocks = []
            while True:
                blocks.append(bytearray(32 << 20))
            """),
        "infinite_loop": module("""
            import signal
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGXCPU):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                pass
            """),
        "disk_fill": PROMPT + body("""
            import os
            total = 0
            try:
                for i in range(10_000):
                    with open(f"fill{i}", "wb") as handle:
                        for _ in range(64):
                            handle.write(b"x" * (1 << 20))
                            total += 1 << 20
            except OSError:
                pass
            return a + b if total > (256 << 20) else None
            """),
        "orphaned_daemon": PROMPT + body("""
            import os
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv("/bin/sleep", ["sleep", "4242.4242"])
                os._exit(0)
            return a - b
            """),
        # -- escaping the jail ---------------------------------------------------------------------------
        "read_home_secret": PROMPT + body(f"""
            try:
                secret = open({str(home / "secret.txt")!r}).read()
            except OSError:
                return None
            raise ValueError("PWNED " + secret)
            """),
        "read_tmp_secret": PROMPT + body(f"""
            import os
            try:
                secret = open({str(host_tmp / "secret.txt")!r}).read()
            except OSError:
                return None
            return a + b
            """),
        "read_expanduser_home": PROMPT + body("""
            import os, glob
            found = glob.glob(os.path.expanduser("~/*")) + glob.glob("/root/*") + glob.glob("/home/*/*")
            found = [f for f in found if not f.startswith("/root/.pyenv")]
            return a + b if found else None
            """),
        "read_env_token": PROMPT + body("""
            import os
            return a + b if any("TOPSECRET" in value for value in os.environ.values()) else None
            """),
        "write_outside_scratch": PROMPT + body(f"""
            wrote = 0
            for path in {write_targets!r}:
                try:
                    with open(path, "w") as handle:
                        handle.write("PWNED")
                    wrote += 1
                except OSError:
                    pass
            return a + b if wrote else None
            """),
        "connect_localhost": PROMPT + body(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=0.5).close()
            except OSError:
                return None
            return a + b
            """),
        "kill_parent": module("""
            import os, signal
            for target in (os.getppid(), 1, -1):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
            """),
        "lift_rlimits": PROMPT + body("""
            import resource
            lifted = 0
            for limit in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE,
                          resource.RLIMIT_NOFILE):
                try:
                    resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                    lifted += 1
                except (ValueError, OSError):
                    pass
            return a + b if lifted else None
            """),
        # -- faking a pass -------------------------------------------------------------------------------
        "print_passed": module("""
            import sys
            print("passed")
            sys.stderr.write("passed\\n")
            """),
        "os_exit_0": module("""
            import os
            os._exit(0)
            """),
        "system_exit": module("raise SystemExit(0)\n"),
        "keyboard_interrupt": module("raise KeyboardInterrupt\n"),
        "atexit_exit_0": module("""
            import atexit, os
            atexit.register(lambda: os._exit(0))
            raise SystemExit(0)
            """),
        "thread_exit_0": module("""
            import os, threading, time
            threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0))).start()
            time.sleep(0.5)
            """),
        "close_fds_exit_0": module("""
            import os
            os.closerange(0, 4096)
            os._exit(0)
            """),
        "forge_verdict": module("""
            import os
            for fd in range(0, 256):
                for message in (b"P" + bytes(16), b"passed", b"Fnon-plain value|"):
                    try:
                        os.write(fd, message)
                    except OSError:
                        pass
            os._exit(0)
            """),
        "monkeypatch_builtins": module("""
            import builtins, math
            builtins.abs = lambda x: 0
            builtins.AssertionError = type("NotAnError", (Exception,), {})
            """),
        "patch_module": PROMPT + body("""
            import math
            math.isclose = lambda *args, **kwargs: True
            return a + b if (a, b) != (10, -4) else 0
            """),
        "always_equal": PROMPT + body("""
            class AlwaysEqual:
                def __eq__(self, other): return True
                def __ne__(self, other): return False
                def __sub__(self, other): return 0.0
                def __rsub__(self, other): return 0.0
            return AlwaysEqual()
            """),
        "int_subclass": PROMPT + body("""
            class Liar(int):
                def __eq__(self, other): return True
                __hash__ = int.__hash__
            return Liar(0)
            """),
        "float_abs_trick": PROMPT + body("""
            class Tiny(float):
                def __sub__(self, other): return 0.0
            return Tiny(0.0)
            """),
        "counter_patch": PROMPT + body("""
            import collections
            collections.Counter.__eq__ = lambda self, other: True
            return collections.Counter()
            """),
        "frame_walk": PROMPT + body("""
            import sys
            frame = sys._getframe(1)
            while frame is not None:
                frame.f_globals.get("check")
                frame = frame.f_back
            return a + b
            """),
        "traceback_frames": PROMPT + body("""
            try:
                raise RuntimeError
            except RuntimeError as exc:
                frame = exc.__traceback__.tb_frame
            return a + b
            """),
        "settrace_skip_asserts": PROMPT + body("""
            import sys
            def tracer(frame, event, arg):
                return tracer
            sys.settrace(tracer)
            return a - b
            """),
        "gc_walk": PROMPT + body("""
            import gc
            gc.get_objects()
            return a + b
            """),
        "ctypes_poke": PROMPT + body("""
            import ctypes
            ctypes.memmove(id(1) + 24, id(2) + 24, 8)
            return a + b
            """),
        "proc_self_mem": PROMPT + body("""
            open("/proc/self/mem", "rb")
            return a + b
            """),
        "exception_leak": PROMPT + body("""
            class PWNED(Exception):
                def __str__(self): return "PWNED"
            PWNED.__name__ = "PWNED"
            raise PWNED("PWNED")
            """),
    }


# What each attack must end as, and the flag it must raise (if any).
EXPECTED_FLAGS = {
    "always_equal": "non_plain_value", "int_subclass": "non_plain_value", "float_abs_trick": "non_plain_value",
    "counter_patch": "non_plain_value", "patch_module": "patched_module",
    "traceback_frames": "introspection_refused",
    "settrace_skip_asserts": "introspection_refused", "gc_walk": "introspection_refused",
    "ctypes_poke": "introspection_refused", "proc_self_mem": "introspection_refused",
}
MUST_TIME_OUT = {"fork_bomb", "infinite_loop"}


def _daemons() -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if b"4242.4242" in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def batch(planted):
    """Run every attack, each followed by a correct control sample, in one two-worker executor."""
    programs = attacks(planted)
    jobs, names = [], {}
    for name, candidate in programs.items():
        for kind, code in ((name, candidate), (f"control-after-{name}", PROMPT + CORRECT)):
            names[len(jobs)] = kind
            jobs.append(Job(len(jobs), "redteam/add", code, TEST, "check(add)"))
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(planted["home"]))  # the sandbox must hide whatever $HOME is
        patch.setenv("EVALSUITE_REDTEAM_TOKEN", "TOPSECRET-env")
        with Executor(workers=2, timeout_s=TIMEOUT_S, memory_mb=512, nproc=16) as executor:
            outcomes = {names[o.job_id]: o for o in executor.run(jobs)}
            mode = executor.mode
    return {"outcomes": outcomes, "elapsed": time.monotonic() - started, "mode": mode,
            "daemons_after": _daemons()}


ATTACK_NAMES = sorted(attacks({"home": Path("/h"), "host_tmp": Path("/t"), "port": 1, "targets": []}))


@pytest.mark.parametrize("name", ATTACK_NAMES)
def test_attack_fails_cleanly(batch, name):
    outcome = batch["outcomes"][name]
    assert outcome.status != "passed", f"{name} faked a pass"
    text = outcome.reason
    assert not any(marker in text for marker in LEAK_MARKERS), f"{name} leaked into the verdict: {text!r}"
    assert len(text) < 80 and text.isprintable()
    if name in MUST_TIME_OUT:
        assert outcome.status == "timed out"
    if name in EXPECTED_FLAGS:
        assert EXPECTED_FLAGS[name] in outcome.flags, (name, outcome)


def test_controls_all_pass_and_run_is_bounded(batch):
    controls = {k: o for k, o in batch["outcomes"].items() if k.startswith("control-after-")}
    assert len(controls) == len(ATTACK_NAMES)
    failed = {k: (o.status, o.reason) for k, o in controls.items() if o.status != "passed"}
    assert not failed
    assert batch["mode"] == "bwrap"
    assert batch["elapsed"] < 45


def test_no_trace_left_on_host(batch, planted):
    assert batch["daemons_after"] == [], "a daemon started by a sample outlived it"
    for target in planted["targets"]:
        assert not (target / "pwned.txt").exists()
    assert not Path("/pwned.txt").exists() and not Path("/usr/pwned.txt").exists()
    assert planted["accepted"] == [], "a sample reached a listener on the host's 127.0.0.1"


def test_specific_failure_reasons(batch):
    """Each attack failed for the reason it was stopped, not by accident (a missing module, say)."""
    outcomes = batch["outcomes"]
    returned_none = ("disk_fill", "read_tmp_secret", "read_env_token", "read_expanduser_home", "write_outside_scratch",
                     "connect_localhost", "lift_rlimits")
    for name in returned_none + ("orphaned_daemon", "kill_parent", "print_passed"):
        assert outcomes[name].reason == "AssertionError", (name, outcomes[name])
    assert outcomes["read_home_secret"].reason == "AssertionError"  # it would raise ValueError had it read it
    assert outcomes["frame_walk"].reason == "ValueError"
    assert outcomes["thread_exit_0"].reason == "exited before the test finished"
    assert outcomes["forge_verdict"].flags == ("channel_tampered",)
    assert outcomes["memory_bomb"].reason == "MemoryError"
    assert outcomes["memory_creep"].reason in ("MemoryError", "") and outcomes["memory_creep"].status != "passed"
    assert outcomes["system_exit"].reason == "SystemExit"
    assert outcomes["keyboard_interrupt"].reason == "KeyboardInterrupt"
    assert outcomes["exception_leak"].reason == "Exception"
    assert outcomes["os_exit_0"].reason == "exited before the test finished"
    assert outcomes["close_fds_exit_0"].reason == "exited before the test finished"
    assert outcomes["monkeypatch_builtins"].reason == "AssertionError"
