"""Red-team suite, learners (class 1): a candidate that cannot compute the hidden values but keeps what it
learned from one sample to the next in kernel state, 20 samples of one problem on one worker, one learner per
carrier (the page cache, TCP counters, the inode counter, abstract sockets, the server's priority, the load
average): none may pass.
"""

from __future__ import annotations

import textwrap

import pytest

import redteam_kit as kit
from redteam_state_kit import INODE_BURN, LIBC, MEMORY_MB, NEEDS_ISOLATION, SEP, TIMEOUT_S, Job
from sandbox import Executor

pytestmark = NEEDS_ISOLATION


# -- learners: 20 samples of one problem on one worker; none may pass -------------------------------------
# The state is a number s < 1000: the guesses are its decimal digits (s % 10 for call 0, ...). Before answering
# call i the sample stores s + 10**i (if this answer is wrong, the next sample tries the next digit here); call
# i + 1 arriving means answer i was right. Each carrier below provides load() -> int | None and store(int).
LEARNER_BODY = """
    g = globals()
    if "_state" not in g:  # read once per sample, at its first call
        s = load()
        g["_state"] = 0 if s is None or not 0 <= s < 1000 else s
    s = g["_state"]
    digits = (s % 10, s // 10 % 10, s // 100 % 10)
    store(s + 10 ** i if s + 10 ** i < 1000 else 0)
    return digits[i]
"""
PAGE_CARRIER = """
    import mmap, os, time
    BITS = 10
    # One small, rarely used stdlib file per bit (a page-cache folio can span many pages of one file).
    _DIR = os.path.join(os.path.dirname(os.__file__), "encodings")
    FILES = [os.path.join(_DIR, name) for name in sorted(os.listdir(_DIR)) if name.startswith("cp")][:BITS]
    def _resident(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT) > 0
        except BlockingIOError:
            return False
        except OSError:
            pass
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        start = time.perf_counter()
        m[0]
        return time.perf_counter() - start < 20e-6
    def load():
        return sum(_resident(path) << k for k, path in enumerate(FILES))
    def store(value):
        for k, path in enumerate(FILES):
            fd = os.open(path, os.O_RDONLY)
            if value >> k & 1:
                os.pread(fd, 1 << 16, 0)
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                try:
                    mmap.mmap(fd, 0, prot=mmap.PROT_READ).madvise(21)  # MADV_PAGEOUT
                except OSError:
                    pass
""" + SEP
TCP_COUNTER_CARRIER = """
    import socket
    def _opens():
        try:
            lines = open("/proc/self/net/snmp").read().splitlines()
        except OSError:
            return None
        tcp = [line.split() for line in lines if line.startswith("Tcp:")]
        return int(tcp[1][tcp[0].index("ActiveOpens")])
    def load():
        value = _opens()
        return None if value is None else value % 1000
    def store(value):
        now = _opens()
        try:
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen(64)
        except OSError:
            return
        for _ in range((value - now) % 1000 if now is not None else 0):
            c = socket.create_connection(server.getsockname())
            server.accept()[0].close()
            c.close()
""" + SEP
INODE_CARRIER = INODE_BURN + """
    def load():
        ino = _channel_ino()
        if ino is None or _burn_one() is None:  # it cannot write there: nothing it reads was written
            return None
        return (ino // 4) % 1024
    def store(value):
        for _ in range(5000):
            ino = _burn_one()
            if ino is None or ((ino + 4) // 4) % 1024 == value:
                return
""" + SEP
ABSTRACT_CARRIER = """
    import os, socket, time
    def load():
        for value in range(1000):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(f"\\0rt-learn-{value}")
                return value
            except OSError:
                if value > 2:
                    return None
        return None
    def store(value):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.bind(f"\\0rt-learn-{value}")
            s.listen(1)
        except OSError:
            return
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
""" + SEP
NICE_CARRIER = """
    import os
    def load():
        value = os.getpriority(os.PRIO_PROCESS, 0)
        return value if value else None
    def store(value):
        try:
            os.setpriority(os.PRIO_PROCESS, os.getppid(), min(19, value % 20))
        except OSError:
            pass
""" + SEP
SYSINFO_CARRIER = LIBC + """
    import os, time
    def load():
        info = (ctypes.c_ulong * 16)()
        if libc.sysinfo(info):
            return None
        return int(info[1] * 100 / 65536) % 1000  # the 1-minute load average x 100
    def store(value):
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            pass
""" + SEP
LEARNERS = {"pagecache": PAGE_CARRIER, "tcp_counters": TCP_COUNTER_CARRIER, "inode_counter": INODE_CARRIER,
            "abstract_socket": ABSTRACT_CARRIER, "server_priority": NICE_CARRIER, "load_average": SYSINFO_CARRIER}
LEARNER_RUNS = 20


@pytest.fixture(scope="module")
def learners():
    jobs, names = [], {}
    prelude, test, check, _ = kit.PROBLEMS["learn"]
    for carrier, code in LEARNERS.items():
        candidate = kit.LEARN_PROMPT + textwrap.indent(kit.dedent(code + LEARNER_BODY), "    ")
        for _ in range(LEARNER_RUNS):
            names[len(jobs)] = carrier
            jobs.append(Job(len(jobs), "redteam/learn", candidate, test, check, prelude=prelude))
    with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, nproc=16) as executor:
        outcomes = list(executor.run(jobs))
    passed = {carrier: 0 for carrier in LEARNERS}
    for outcome in outcomes:
        passed[names[outcome.job_id]] += outcome.passed
    return passed


@pytest.mark.parametrize("carrier", sorted(LEARNERS))
def test_learners_pass_nothing(learners, carrier):
    assert learners[carrier] == 0, f"the {carrier} learner passed {learners[carrier]} of {LEARNER_RUNS}"

