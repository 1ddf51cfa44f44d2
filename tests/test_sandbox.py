"""The sandbox package on its own: guards, isolation command line, executor behaviour (real fork servers)."""

from __future__ import annotations

import collections
import os
import signal
import sys
import threading
import time

import pytest

from sandbox import Executor, Job, SandboxUnavailable, UnsandboxedWarning, detect_isolation
from sandbox.isolation import JAIL_SCRATCH
from sandbox import guard
from sandbox.isolation import bwrap_prefix

needs_isolation = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")

PROMPT = "def add(a, b):\n"
TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


def job(job_id: int, body: str, test: str = TEST, key: str = "t/add") -> Job:
    return Job(job_id, key, PROMPT + body, test, "check(add)")


# -- guards ------------------------------------------------------------------------------------------
def test_plain_check_accepts_nested_builtin_values():
    plain, _, detections = guard.make_plain_check()
    value = [1, 2.5, "x", b"y", None, (True, {1: [frozenset({2})]}), {3}, collections.OrderedDict(a=1),
             collections.defaultdict(list), collections.Counter("aab"), range(3), 1j]
    assert plain(value) is value
    assert detections == []


@pytest.mark.parametrize("make", [
    lambda: type("AlwaysEqual", (), {"__eq__": lambda s, o: True})(),
    lambda: type("S", (str,), {})("x"),
    lambda: [1, [2, type("I", (int,), {})(3)]],
    lambda: {"k": object()},
])
def test_plain_check_rejects_non_plain_values(make):
    plain, plain_truth, detections = guard.make_plain_check()
    with pytest.raises(guard.NonPlainValue):
        plain(make())
    with pytest.raises(guard.NonPlainValue):
        plain_truth(make())
    assert detections == ["non_plain_value", "non_plain_value"]


def test_plain_check_rejects_a_patched_counter():
    plain, _, _ = guard.make_plain_check()
    original = collections.Counter.__eq__
    collections.Counter.__eq__ = lambda self, other: True
    try:
        with pytest.raises(guard.NonPlainValue):
            plain(collections.Counter())
    finally:
        collections.Counter.__eq__ = original


def test_instrumented_test_checks_comparisons_asserts_and_candidate_calls():
    plain, plain_truth, detections = guard.make_plain_check()
    code = guard.instrument_test("def check(candidate):\n    assert abs(candidate(1) - 1) < 1e-9\n", "<t>")

    class Rigged(float):
        def __sub__(self, other):
            return 0.0

    ns = {guard.PLAIN_CHECK_NAME: plain, guard.ASSERT_CHECK_NAME: plain_truth}
    exec(code, ns)
    ns["check"](lambda x: float(x))
    with pytest.raises(guard.NonPlainValue):
        ns["check"](lambda x: Rigged(5.0))
    assert detections == ["non_plain_value"]


def test_imported_modules():
    assert guard.imported_modules("import math, os.path\nfrom random import choice\nfrom . import x\n") == [
        "math", "os.path", "random"]


# -- isolation command line ---------------------------------------------------------------------------
def test_bwrap_prefix_hides_home_and_keeps_the_interpreter(monkeypatch):
    monkeypatch.setenv("HOME", "/usr/share")  # any existing directory outside /tmp will do
    args = bwrap_prefix(64, as_root=True)
    joined = " ".join(args)
    assert "--unshare-net" in args and "--unshare-pid" in args
    assert "--ro-bind / /" in joined and "--tmpfs /usr/share" in joined and "--remount-ro /usr/share" in joined
    for hidden in ("/root", "/run", "/var/tmp"):
        if os.path.isdir(hidden):
            assert f"--tmpfs {hidden}" in joined
    assert "--cap-drop ALL" in joined and "CAP_SYS_ADMIN" not in joined
    assert f"--size {64 << 20} --tmpfs /tmp" in joined
    prefix = os.path.realpath(sys.base_prefix)
    if prefix.startswith(("/root/", "/home/")):
        assert f"--ro-bind {prefix} {prefix}" in joined


# -- executor ------------------------------------------------------------------------------------------
def test_refuses_without_isolation_unless_opted_in():
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        with Executor(workers=1, isolation="none"):
            pass


def test_unsandboxed_mode_warns_and_still_judges(monkeypatch):
    monkeypatch.setenv("EVALSUITE_TEST_TOKEN", "secret")
    env_probe = "    import os\n    return a + b if 'EVALSUITE_TEST_TOKEN' not in os.environ else 0\n"
    with pytest.warns(UnsandboxedWarning, match="WITHOUT A SANDBOX"):
        with Executor(workers=1, isolation="none", allow_unsandboxed=True, timeout_s=1.0) as executor:
            outcomes = {o.job_id: o for o in executor.run([
                job(0, "    return a + b\n"), job(1, "    return a - b\n"), job(2, "    while True: pass\n"),
                job(3, "    import os\n    if os.fork() == 0:\n        os.setsid()\n        import time\n"
                       "        time.sleep(60)\n    return a + b\n"), job(4, env_probe)])}
    assert executor.mode == "none"
    assert [outcomes[i].status for i in range(5)] == ["passed", "failed", "timed out", "passed", "passed"]


@needs_isolation
def test_scratch_is_wiped_and_timeouts_are_enforced():
    write = "    open('leftover', 'w').write('x')\n    return a + b\n"
    read = ("    import os\n    return a + b if not os.path.exists('leftover') and os.getcwd() == "
            f"{JAIL_SCRATCH!r} else 0\n")
    sleep = "    import time\n    time.sleep(30)\n"
    with Executor(workers=1, timeout_s=0.5) as executor:
        started = time.monotonic()
        outcomes = {o.job_id: o for o in executor.run([job(0, write), job(1, read), job(2, sleep), job(3, read)])}
        elapsed = time.monotonic() - started
    assert [outcomes[i].status for i in range(4)] == ["passed", "passed", "timed out", "passed"]
    assert 0.5 <= outcomes[2].duration_s < 1.0
    assert elapsed < 5


@needs_isolation
def test_a_dead_worker_is_restarted_and_the_run_goes_on():
    sleep = "    import time\n    time.sleep(1)\n    return a + b\n"
    with Executor(workers=1, timeout_s=3.0) as executor:
        victim = executor._pool[0].proc.pid

        def kill_soon() -> None:
            time.sleep(0.4)
            os.killpg(victim, signal.SIGKILL)

        threading.Thread(target=kill_soon).start()
        outcomes = {o.job_id: o for o in executor.run([job(0, sleep)] + [job(i, "    return a + b\n")
                                                                           for i in range(1, 6)])}
        assert executor.restarts == 1
    assert outcomes[0].status == "failed" and outcomes[0].reason == "sandbox worker was killed"
    assert all(outcomes[i].status == "passed" for i in range(1, 6))


@needs_isolation
def test_broken_test_code_is_reported_not_crashing():
    with Executor(workers=1) as executor:
        [outcome] = executor.run([job(0, "    return a + b\n", test="def check(candidate:\n", key="t/broken")])
    assert outcome.status == "failed" and outcome.reason.startswith("test code does not compile")


@needs_isolation
def test_output_noise_and_big_candidates_are_fine():
    noisy = "    import sys\n    print('x' * 100000)\n    sys.stderr.write('y' * 100000)\n    return a + b\n"
    big = "    return a + b\n" + "# filler\n" * 100_000
    with Executor(workers=2) as executor:
        statuses = sorted(o.status for o in executor.run([job(0, noisy), job(1, big)]))
    assert statuses == ["passed", "passed"]


def test_interpreter_and_package_under_tmp_survive_the_scratch_wipe(tmp_path):
    """A CI clone or venv under /tmp is bound back inside the jail's /tmp; wiping the samples' scratch after
    each sample must leave it alone (it once broke every sample after the first)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import sandbox

    assert str(tmp_path).startswith("/tmp/")
    shutil.copytree(Path(sandbox.__file__).parent, tmp_path / "pkg" / "sandbox")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    script = (
        "from sandbox import Executor, Job\n"
        "jobs = [Job(job_id=i, problem_key='p', candidate='def f(x):\\n    open(\"f\", \"w\").write(\"x\")\\n"
        "    return x\\n', test='def check(c):\\n    assert c(1) == 1\\n', check='check(f)') for i in range(4)]\n"
        "with Executor(workers=1, timeout_s=5.0) as ex:\n"
        "    print(ex.mode, sorted((o.job_id, o.status, o.reason) for o in ex.run(jobs)))\n")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script], env={"PYTHONPATH": str(tmp_path / "pkg"),
                         "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    mode, _, verdicts = out.stdout.partition(" ")
    if mode != "bwrap":
        pytest.skip(f"no bwrap isolation here ({mode})")
    assert verdicts.strip() == str([(i, "passed", "") for i in range(4)])
