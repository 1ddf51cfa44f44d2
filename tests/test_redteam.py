"""Red-team suite: hostile candidates against the real sandbox (bubblewrap jail, checker, call channel).

Every attack (tests/data/attacks/, read by tests/attack_corpus.py) passes only if it succeeded, or fakes a pass
with a wrong answer; the corpus's manifest says which flag or reason each one's outcome must carry.
All of them run in one two-worker batch, each followed by a correct control of its problem: the run must
survive every attack and still pass the controls. Samples that try to keep state from one sample to the
next run back to back on a single worker. Planted secrets are random, so their text can only show up in
an outcome if an attack READ it.

The attack classes, and where each is attacked: cross-sample state (network, page cache, file metadata, IPC,
scheduler, kernel counters; writer/reader pairs and learners), denial of other verdicts (CPU and memory
attackers beside honest samples) and host information in tests/test_redteam_state.py; oracles from the
checker's behaviour (learners, random state), reporting integrity (forged frames, exit 70, samples-file
fields on the page) and the checker's own memory in tests/test_redteam_checker.py; compilation as written in
tests/test_sandbox.py and tests/test_parity_peers.py. Every attack in all of them undoes the peers'
reliability_guard first (redteam_kit.unguarded), so that it tests the jail.
"""

from __future__ import annotations

import builtins
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

import redteam_kit as kit
from attack_corpus import corpus
from sandbox import Executor, Job, detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")

TIMEOUT_S = 1.5
MEMORY_MB = 256
DAEMON_MARKER = b"REDTEAM_DAEMON_4242"
BUILTIN_EXCEPTIONS = {n for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}
FIXED_REASONS = {
    "exception", "non-plain value", "channel tampered", "sample process died", "return value too large",
    "unsupported argument", "test code does not compile", "test setup failed", "timed out",
    "sandbox setup failed in the child", "exited before the test finished", "sandbox worker was killed",
    "checker failed"}
KILLED = re.compile(r"killed by SIG[A-Z0-9]+( \([a-z ?]+\))?|killed by a signal")

def _listen_unix(path_or_name: str, hits: list) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path_or_name)
    server.listen(8)
    server.settimeout(0.2)
    return server


@pytest.fixture(scope="module")
def planted():
    """Secrets in /srv, /opt, the repo and $HOME, one in the harness's environment; listeners on the host."""
    token = "REDTEAM_SECRET_" + secrets.token_hex(16)
    repo = Path(__file__).resolve().parent.parent
    dirs = [Path(tempfile.mkdtemp(prefix="redteam-", dir=d)) for d in ("/srv", "/opt")]
    dirs += [Path(tempfile.mkdtemp(prefix=".redteam-", dir=repo)), Path(tempfile.mkdtemp(prefix=".redteam-",
                                                                                        dir=os.path.expanduser("~")))]
    dirs.append(Path(tempfile.mkdtemp(prefix="redteam-", dir="/tmp")))
    for d in dirs:
        os.chmod(d, 0o777)
        (d / ".env").write_text(f"API_KEY={token}\n")
        os.chmod(d / ".env", 0o644)
    hits: list[str] = []
    servers = []
    unix_paths = [str(dirs[0] / "sock"), str(dirs[-1] / "sock")]
    for path in unix_paths:
        servers.append(_listen_unix(path, hits))
        os.chmod(path, 0o777)
    abstract = "\0redteam-" + secrets.token_hex(4)
    servers.append(_listen_unix(abstract, hits))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.settimeout(0.2)
    servers.append(tcp)
    fifo = str(dirs[-1] / "fifo")
    os.mkfifo(fifo, 0o666)
    fifo_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    stop = threading.Event()

    def accept_loop(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append(repr(server.getsockname()))
            conn.close()

    threads = [threading.Thread(target=accept_loop, args=(s,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield {"token": token, "secret_dirs": dirs, "unix_paths": unix_paths, "abstract": abstract,
           "port": tcp.getsockname()[1], "fifo": fifo, "fifo_fd": fifo_fd, "hits": hits}
    stop.set()
    for thread in threads:
        thread.join()
    for server in servers:
        server.close()
    os.close(fifo_fd)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


ATTACKS = {a.name: a for a in corpus() if a.attack_class != "cross_sample"}  # run side by side, two workers
CROSS = [a for a in corpus() if a.attack_class == "cross_sample"]  # back to back on one worker, in order
ATTACK_CLASSES = {group: sorted(a.name for a in ATTACKS.values() if a.attack_class == group)
                  for group in dict.fromkeys(a.attack_class for a in ATTACKS.values())}
ATTACK_NAMES = sorted(ATTACKS)
READERS = [a.name for a in CROSS if a.verdict == "fail"]
SET_UP = [a.name for a in CROSS if a.verdict == "pass"]


def _job(job_id: int, problem: str, candidate: str) -> Job:
    prelude, test, check, _ = kit.PROBLEMS[problem]
    return Job(job_id, f"redteam/{problem}", kit.unguarded(candidate), test, check, prelude=prelude)


def _host_daemons() -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if DAEMON_MARKER in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def _sample_uid_processes(wait_s: float = 3.0) -> list[str]:
    """Host processes still running under a sample uid (0x70000000 + worker), after up to ``wait_s`` for the
    kernel to finish killing a closed jail's processes."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat(f"/proc/{name}").st_uid >= 0x70000000:
                        status = Path(f"/proc/{name}/status").read_text().splitlines()
                        found.append(f"{name} " + " ".join(l for l in status if l.startswith(("State", "NSpid"))))
                except OSError:
                    pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture(scope="module")
def batch(planted):
    jobs, names = [], {}
    for name in ATTACK_NAMES:
        attack = ATTACKS[name]
        control = kit.PROBLEMS[attack.problem][3]
        for label, code in ((name, attack.program(planted)), (f"control-after-{name}", control)):
            names[len(jobs)] = label
            jobs.append(_job(len(jobs), attack.problem, code))
    cross_jobs, cross_names = [], {}
    for attack in CROSS:
        cross_names[len(cross_jobs)] = attack.name
        cross_jobs.append(_job(len(cross_jobs), attack.problem, attack.program(planted)))
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REDTEAM_ENV_SECRET", planted["token"])  # in the harness's environment only
        with Executor(workers=2, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, nproc=16) as executor:
            outcomes = {names[o.job_id]: o for o in executor.run(jobs)}
            daemons_during = _host_daemons()
            restarts, mode = executor.restarts, executor.mode
        main_elapsed = time.monotonic() - started
        with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, nproc=16) as executor:
            cross = {cross_names[o.job_id]: o for o in executor.run(cross_jobs)}
    fifo_data = b""
    try:
        fifo_data = os.read(planted["fifo_fd"], 100)
    except BlockingIOError:
        pass
    return {"outcomes": outcomes, "cross": cross, "elapsed": time.monotonic() - started, "main_elapsed": main_elapsed,
            "mode": mode, "restarts": restarts, "daemons_during": daemons_during, "daemons_after": _host_daemons(),
            "sample_uid_after": _sample_uid_processes(), "fifo_data": fifo_data}


def _check_outcome_fields(name, outcome, token):
    assert outcome.status in ("passed", "failed", "timed out"), (name, outcome)
    reason = outcome.reason
    assert len(reason) < 80 and reason.isprintable(), (name, outcome)
    assert reason in ("",) or reason in FIXED_REASONS or reason in BUILTIN_EXCEPTIONS or KILLED.fullmatch(reason), \
        (name, outcome)
    assert set(outcome.flags) <= {"non_plain_value", "channel_tampered"}, (name, outcome)
    assert token not in repr(outcome), f"{name} leaked a planted secret: {outcome!r}"
    assert len(outcome.sample_error) <= 600, (name, len(outcome.sample_error))
    outcome.sample_error.encode("utf-8")  # a record writer must be able to store it (no lone surrogates)
    assert isinstance(outcome.duration_s, float) and 0 <= outcome.duration_s < 60


@pytest.mark.parametrize("name", ATTACK_NAMES)
def test_attack_fails_cleanly(batch, planted, name):
    outcome = batch["outcomes"][name]
    assert outcome.status != "passed", f"{name} got through: {outcome}"
    _check_outcome_fields(name, outcome, planted["token"])
    attack = ATTACKS[name]
    # what its outcome must carry (tests/data/attacks/manifest.yaml: flag, reasons; the note there says why)
    if attack.flag:
        assert attack.flag in outcome.flags, (name, outcome)
    if attack.reasons:
        assert outcome.reason in attack.reasons, (name, outcome)


@pytest.mark.parametrize("name", READERS)
def test_no_state_survives_from_one_sample_to_the_next(batch, planted, name):
    outcome = batch["cross"][name]
    assert outcome.status != "passed", f"{name}: state crossed samples: {outcome}"
    _check_outcome_fields(name, outcome, planted["token"])


def test_controls_pass_and_run_is_bounded(batch, planted):
    controls = {k: o for k, o in batch["outcomes"].items() if k.startswith("control-after-")}
    assert len(controls) == len(ATTACK_NAMES)
    failed = {k: (o.status, o.reason, o.sample_error[:80]) for k, o in controls.items() if o.status != "passed"}
    assert not failed
    for name in SET_UP:
        assert batch["cross"][name].passed, batch["cross"][name]
    for outcome in controls.values():
        _check_outcome_fields("control", outcome, planted["token"])
    assert batch["mode"] == "bwrap"
    assert batch["elapsed"] < 60, batch["elapsed"]


def test_no_trace_left_on_host(batch, planted):
    assert batch["daemons_during"] == [] and batch["daemons_after"] == [], "a sample's daemon outlived it"
    assert batch["sample_uid_after"] == [], "processes of a sample uid are left on the host"
    for d in planted["secret_dirs"]:
        assert not (d / "pwned.txt").exists()
        assert sorted(p.name for p in d.iterdir()) in (
            [".env"], [".env", "sock"], [".env", "fifo", "sock"]), sorted(d.iterdir())
    assert not Path("/pwned.txt").exists() and not Path("/root/pwned.txt").exists()
    assert planted["hits"] == [], f"a sample reached a host listener: {planted['hits']}"
    assert batch["fifo_data"] == b"", "a sample wrote to a host FIFO"


def test_attack_count_per_class():
    counts = {group: len(names) for group, names in ATTACK_CLASSES.items()}
    assert all(n >= 5 for n in counts.values()), counts
    assert sum(counts.values()) >= 60, counts


@pytest.mark.skipif(not os.environ.get("REDTEAM_REPORT"), reason="set REDTEAM_REPORT=1 to print every outcome")
def test_report(batch):
    for name, outcome in sorted(batch["outcomes"].items()) + sorted(batch["cross"].items()):
        if not name.startswith("control-after-"):
            print(f"{name:40s} {outcome.status:9s} {outcome.reason:36s} {','.join(outcome.flags):16s} "
                  f"{outcome.duration_s:6.3f} {outcome.sample_error[:90]!r}")
    print(f"restarts={batch['restarts']} main={batch['main_elapsed']:.1f}s total={batch['elapsed']:.1f}s")
