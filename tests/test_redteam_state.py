"""Red-team suite, kernel state (issue 20): what one sample can leave in the kernel for a later one (class 1),
what it can take from other workers' samples (class 3) and what it can learn of the host (class 5).

* Writer/reader pairs: on ONE worker, a writer sample is given a random bit and stores it in one facility
  (network namespace, page cache, file times, mount ids, scheduler settings, kernel counters...); the next
  sample, the reader, reports what it observes of that facility through its own error text (a measuring
  instrument of this test only: a real attacker learns just its verdict). A facility is closed when the
  reader's observation does not depend on the bit: ``bits_carried`` counts the pairs in which the reader
  decodes the writer's bit better than a constant would.
* Learners: a candidate that cannot compute the hidden values but keeps what it learned from one sample to
  the next in kernel state, 20 samples of one problem on one worker, one learner per carrier: none may pass.
* Denial: CPU attackers (undo the pinning, fork busy processes, change priorities) and memory attackers
  (processes, tmpfs, kernel memory) run beside honest samples of a CPU-bound problem on two workers: every
  honest sample keeps its verdict.
* Host information: nothing a sample can read names the checkout, the host's name or its counters.

Residual channels that cannot be closed (timing) are measured here and in docs/sandbox.md.
"""

from __future__ import annotations

import json
import random
import socket
import statistics
import textwrap
import time
from pathlib import Path

import pytest

import redteam_kit as kit
from redteam_kit import bits_carried
from sandbox import Executor, detect_isolation
from sandbox import Job as _Job


def Job(job_id, key, source, *args, **kwargs):  # noqa: N802 - the sandbox's Job, with the peers' guard undone
    """Every attack undoes the peers' reliability_guard first (tests/redteam_kit.py): it tests the jail."""
    return _Job(job_id, key, kit.unguarded(source), *args, **kwargs)

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")

TIMEOUT_S = 2.0
MEMORY_MB = 256
PAIRS = 12  # writer/reader pairs per facility (bits written)
REPO = str(Path(__file__).resolve().parent.parent)
SEP = kit.SEP

PROMPT = "def f(x):\n"


def fn(code: str) -> str:
    return PROMPT + textwrap.indent(kit.dedent(code), "    ")


# A stdlib file no sample imports: its pages are the page-cache carrier.
TARGET = """
    import os
    TARGET = os.path.join(os.path.dirname(os.__file__), "pydoc_data", "topics.py")
    PAGES = 32
""" + SEP
LIBC = kit.LIBC

# -- writer/reader pairs: (name, writer body, reader body); the reader ends by raising its observation --------
FACILITIES: list[tuple[str, str, str]] = [
    ("net_abstract_socket", """
        import socket, os, time
        if x:
            s = socket.socket(socket.AF_UNIX)
            s.bind("\\0rt-state")
            s.listen(1)
            if os.fork() == 0:
                time.sleep(30)
        return 0
        """, """
        import socket
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect("\\0rt-state")
            obs = "connected"
        except OSError as exc:
            obs = type(exc).__name__
        raise ValueError(obs)
        """),
    ("net_tcp_time_wait_and_counters", """
        import socket
        if x:
            server = socket.socket()
            server.bind(("127.0.0.1", 47001))
            server.listen(64)
            for _ in range(40):
                c = socket.create_connection(("127.0.0.1", 47001))
                conn, _ = server.accept()
                c.close()  # the client closes first: TIME_WAIT, kept by the namespace for a minute
                conn.close()
        return 0
        """, """
        import socket
        obs = []
        try:
            s = socket.socket()
            s.bind(("127.0.0.1", 47001))
            obs.append("bound")
        except OSError as exc:
            obs.append(type(exc).__name__ + str(exc.errno))
        for path in ("/proc/self/net/snmp", "/proc/self/net/sockstat", "/proc/net/tcp"):
            try:
                obs.append(open(path).read()[-400:])
            except OSError as exc:
                obs.append(type(exc).__name__)
        raise ValueError(repr(obs))
        """),
    ("net_unix_garbage", """
        import socket, array
        if x:
            for _ in range(50):  # sockets in flight inside each other: unreachable until the kernel's GC
                a, b = socket.socketpair()
                a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno(), b.fileno()]))])
                a.close(); b.close()
        return 0
        """, """
        try:
            obs = len(open("/proc/self/net/unix").read().splitlines())
        except OSError as exc:
            obs = type(exc).__name__
        raise ValueError(repr(obs))
        """),
    ("pagecache_mincore", TARGET + LIBC + """
        import mmap
        fd = os.open(TARGET, os.O_RDONLY)
        size = os.fstat(fd).st_size
        if x:  # evict: every call that drops a file's pages
            for attempt in (lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED),):
                try:
                    attempt()
                except OSError:
                    pass
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            for advice in (20, 21):  # MADV_COLD, MADV_PAGEOUT
                try:
                    m.madvise(advice)
                except OSError:
                    pass
        else:  # load
            os.pread(fd, size, 0)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
        return 0
        """, TARGET + LIBC + """
        import mmap
        fd = os.open(TARGET, os.O_RDONLY)
        size = os.fstat(fd).st_size
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        addr = libc.mmap(None, size, 1, 1, fd, 0)
        vec = ctypes.create_string_buffer((size + 4095) // 4096)
        r = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec)
        obs = ("mincore", r, ctypes.get_errno()) if r else ("mincore", sum(b & 1 for b in vec.raw))
        raise ValueError(repr(obs))
        """),
    ("pagecache_rwf_nowait", TARGET + """
        fd = os.open(TARGET, os.O_RDONLY)
        if x:
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
        else:
            os.pread(fd, os.fstat(fd).st_size, 0)
        return 0
        """, TARGET + """
        fd = os.open(TARGET, os.O_RDONLY)
        buf = bytearray(4096)
        obs = []
        for page in range(PAGES):
            try:
                obs.append(os.preadv(fd, [buf], page * 4096, os.RWF_NOWAIT))
            except OSError as exc:
                obs.append(exc.errno)
        raise ValueError(repr(obs))
        """),
    ("pagecache_cachestat", TARGET + """
        fd = os.open(TARGET, os.O_RDONLY)
        if x:
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
        return 0
        """, TARGET + LIBC + """
        fd = os.open(TARGET, os.O_RDONLY)
        rng = (ctypes.c_uint64 * 2)(0, 0)
        out = (ctypes.c_uint64 * 5)()
        r = libc.syscall(451, fd, rng, out, 0)
        raise ValueError(repr((r, ctypes.get_errno()) if r else tuple(out)))
        """),
    ("pagecache_readahead_and_populate", TARGET + LIBC + """
        import mmap
        fd = os.open(TARGET, os.O_RDONLY)
        if x:
            libc.syscall(187, fd, ctypes.c_long(0), ctypes.c_size_t(1 << 20))  # readahead
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            for advice in (3, 22):  # WILLNEED, POPULATE_READ
                try:
                    m.madvise(advice)
                except OSError:
                    pass
        return 0
        """, TARGET + LIBC + """
        fd = os.open(TARGET, os.O_RDONLY)
        obs = [libc.syscall(187, fd, ctypes.c_long(0), ctypes.c_size_t(4096)), ctypes.get_errno()]
        raise ValueError(repr(obs))
        """),
    ("file_times", """
        import os
        if x:
            for path in (os.__file__, "/dev/null", "/dev/zero", "/evalsuite-sandbox/wire.py"):
                try:
                    with open(path, "rb") as h:
                        h.read(100)
                    with open(path, "wb") as h:
                        h.write(b"x")
                except OSError:
                    pass
                try:
                    os.utime(path)
                except OSError:
                    pass
        return 0
        """, """
        import os
        obs = []
        for path in (os.__file__, "/dev/null", "/dev/zero", "/evalsuite-sandbox/wire.py", "/", "/dev"):
            info = os.stat(path)
            obs.append((info.st_atime_ns, info.st_mtime_ns, info.st_ctime_ns))
        raise ValueError(repr(obs))
        """),
    ("tmp_mount_identity", """
        if x:  # a trace in /tmp: the server mounts a new tmpfs for the next sample
            open("/tmp/mark", "w").close()
        return 0
        """, LIBC + """
        import os
        buf = ctypes.create_string_buffer(256)
        r = libc.syscall(332, -100, b"/tmp", 0, 0x1000 | 0x4000, buf)  # statx(STATX_MNT_ID | _UNIQUE)
        mnt = (r, ctypes.get_errno()) if r else buf.raw[144:160]
        info = os.stat("/tmp")
        raise ValueError(repr((mnt, info.st_dev, info.st_ino, info.st_nlink, sorted(os.listdir("/tmp")))))
        """),
    ("tmp_pinned_through_the_channel", """
        import os, socket, stat, array
        if x:  # a trace in /tmp, and the old tmpfs kept alive in flight to the checker: a new one gets a new device
            open("/tmp/mark", "w").close()
            fd = os.open("/tmp", os.O_RDONLY)
            for ch in range(3, 64):
                try:
                    if stat.S_ISSOCK(os.fstat(ch).st_mode):
                        socket.socket(fileno=os.dup(ch)).sendmsg(
                            [b"\\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
                except OSError:
                    pass
        return 0
        """, """
        import os
        info = os.stat("/tmp")
        try:
            space = os.statvfs("/tmp")  # a new tmpfs has a random fsid
            fsid = (space.f_fsid, space.f_ffree, space.f_bfree)
        except OSError as exc:
            fsid = exc.errno
        raise ValueError(repr((info.st_dev, info.st_ino, fsid)))
        """),
    ("file_lock_through_the_channel", """
        import os, socket, stat, array, fcntl
        if x:  # a lock on a file every sample can open, its descriptor in flight to the checker
            fd = os.open("/evalsuite-sandbox/wire.py", os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            for ch in range(3, 64):
                try:
                    if stat.S_ISSOCK(os.fstat(ch).st_mode):
                        socket.socket(fileno=os.dup(ch)).sendmsg(
                            [b"\\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
                except OSError:
                    pass
        return 0
        """, """
        import os, fcntl
        fd = os.open("/evalsuite-sandbox/wire.py", os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            obs = "free"
        except OSError as exc:
            obs = exc.errno
        raise ValueError(repr(obs))
        """),
    ("scheduler_and_priority", LIBC + """
        import os
        if x:
            for attempt in (lambda: os.sched_setaffinity(0, {0}), lambda: os.setpriority(os.PRIO_PROCESS, 0, 19),
                            lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19),
                            lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19),
                            lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)),
                            lambda: libc.syscall(251, 1, 0, (3 << 13) | 7)):  # ioprio_set(idle)
                try:
                    attempt()
                except OSError:
                    pass
        return 0
        """, LIBC + """
        import os
        obs = (os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0),
               libc.syscall(252, 1, 0))
        raise ValueError(repr(obs))
        """),
    ("kernel_counters", LIBC + """
        import os, time
        if x:
            for i in range(2000):  # negative dentries, forks, load
                try:
                    os.stat(f"/evalsuite-sandbox/missing-{i}")
                except OSError:
                    pass
            for _ in range(50):
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                os.waitpid(pid, 0)
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                pass
        return 0
        """, LIBC + """
        obs = []
        for path in ("/proc/stat", "/proc/loadavg", "/proc/sys/fs/dentry-state", "/proc/meminfo", "/proc/vmstat"):
            try:
                obs.append(open(path).read()[:200])
            except OSError as exc:
                obs.append(type(exc).__name__)
        info = ctypes.create_string_buffer(128)
        obs.append((libc.sysinfo(info), ctypes.get_errno()))
        raise ValueError(repr(obs))
        """),
    ("hostname", LIBC + """
        if x:
            libc.sethostname(b"rt-state", 8)
        return 0
        """, """
        import os
        raise ValueError(repr(os.uname().nodename))
        """),
    # The sample server no longer preloads hashlib, decimal, fractions, datetime, shutil or subprocess, and the
    # guard reaches shutil/subprocess/tempfile through a meta-path hook: a writer that imports them (or not),
    # removes the hook, caches tempfile's directory and fills the allocator must leave the next sample the same.
    ("import_state_and_guard_hook", """
        import sys
        if x:
            import decimal, fractions, hashlib, datetime, tempfile
            hashlib.sha256(b"x" * 1000).hexdigest()
            decimal.getcontext().prec = 7
            tempfile.tempdir = "/tmp/elsewhere"
            sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_OnFirstImport"]
            sys.setrecursionlimit(123)
        return 0
        """, """
        import sys
        obs = [sorted(m for m in ("decimal", "fractions", "hashlib", "datetime", "tempfile") if m in sys.modules),
               [type(f).__name__ for f in sys.meta_path], sys.getrecursionlimit()]
        import decimal, tempfile
        obs += [decimal.getcontext().prec, tempfile.gettempdir()]
        raise ValueError(repr(obs))
        """),
    ("allocator_and_address_space", LIBC + """
        if x:
            keep = [bytearray(1 << 16) for _ in range(2000)]  # ~130 MB through malloc, freed at exit
            libc.malloc.restype = ctypes.c_void_p
            for _ in range(1000):
                libc.malloc(1 << 20)
        return 0
        """, LIBC + """
        libc.malloc.restype = ctypes.c_void_p
        obs = [id(object()) % (1 << 20), libc.malloc(64) % (1 << 20), libc.malloc(1 << 20) % (1 << 20),
               len(open("/dev/null", "rb").read(1))]
        raise ValueError(repr(obs))
        """),
]

# The kernel's shared inode counter (pipes, sockets, /proc, memfds, pidfds...): the writer moves it to a value
# of its choice; the reader reads it off the one descriptor it holds (the call channel) or any new inode.
INODE_BURN = LIBC + """
    import os, socket, stat
    def _burn_one():
        for make in (lambda: os.pipe(), lambda: socket.socketpair(), lambda: (os.memfd_create("x"),),
                     lambda: (os.open("/proc/self/stat", os.O_RDONLY),)):
            try:
                made = make()
            except OSError:
                continue
            ino = os.fstat(made[0] if isinstance(made[0], int) else made[0].fileno()).st_ino
            for item in made:
                item.close() if hasattr(item, "close") else os.close(item)
            return ino
        return None
    def _channel_ino():
        for fd in range(3, 1024):
            try:
                info = os.fstat(fd)
            except OSError:
                continue
            if stat.S_ISSOCK(info.st_mode):
                return info.st_ino
        return None
""" + SEP
INODE_COUNTER = ("inode_counter", INODE_BURN + """
    target = 32 * x  # ino % 64 in [0, 16) or [32, 48) for the next sample's channel
    for _ in range(5000):
        ino = _burn_one()
        if ino is None or (ino + 4) % 64 == target:
            break
    return 0
    """, INODE_BURN + """
    ino = _channel_ino()
    made = _burn_one()
    raise ValueError(repr((ino % 64 // 32 if ino else None, made)))
    """)


def bit_job(job_id: int, code: str, bit: int) -> Job:
    test = f"def check(candidate):\n    candidate({bit})\n"
    return Job(job_id, f"state/bit{bit}", code, test, "check(f)")


def observe_job(job_id: int, code: str) -> Job:
    return Job(job_id, "state/observe", code, "def check(candidate):\n    candidate(0)\n", "check(f)")


def balanced_bits(rng: random.Random, count: int) -> list[int]:
    """As many ones as zeros, in random order: a constant guess decodes exactly half."""
    bits = [k % 2 for k in range(count)]
    rng.shuffle(bits)
    return bits


@pytest.fixture(scope="module")
def pairs():
    rng = random.Random(20)
    plan, jobs = [], []
    for name, writer, reader in FACILITIES + [INODE_COUNTER]:
        bits = [rng.randrange(2) for _ in range(PAIRS if name != INODE_COUNTER[0] else 2 * PAIRS)]
        bits[:2] = [0, 1]
        for bit in bits:
            jobs.append(bit_job(len(jobs), fn(writer), bit))
            jobs.append(observe_job(len(jobs), fn(reader)))
        plan.append((name, bits))
    with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB, nproc=16) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
    results, index = {}, 0
    for name, bits in plan:
        observations, writers = [], []
        for _ in bits:
            writers.append(outcomes[index])
            observations.append(outcomes[index + 1].sample_error)
            index += 2
        results[name] = (bits, observations, writers)
    return results


@pytest.mark.parametrize("name", [name for name, _, _ in FACILITIES])
def test_writer_reader_pairs_carry_no_bit(pairs, name):
    """The reader sees the same thing whatever the writer wrote."""
    bits, observations, _ = pairs[name]
    assert all(obs.startswith("ValueError") for obs in observations), observations[:3]
    carried = bits_carried(bits, observations)
    assert carried == 0, f"{name}: {carried} of {len(bits)} bits crossed: {list(zip(bits, observations))[:4]}"


def test_the_shared_inode_counter_carries_no_bit(pairs):
    """The counter moves (the checker makes each sample's channel), but no sample can move it: the reader's
    decoding of the writer's bit is a coin toss (with the writer able to burn inodes it is right every time)."""
    bits, observations, _ = pairs[INODE_COUNTER[0]]
    decoded = [eval(obs.split(":", 1)[1]) for obs in observations]  # (bit or None, burn result) from our reader
    assert all(made is None for _, made in decoded), "a sample could make a new pipe, socket, memfd or /proc inode"
    right = sum(d == b for (d, _), b in zip(decoded, bits))
    assert right <= 0.8 * len(bits), (right, len(bits))


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


# -- class 3: CPU and memory attackers beside honest samples ----------------------------------------------
HONEST_PROMPT = "def work(n):\n"
HONEST_TEST = "def check(candidate):\n    assert candidate(2_000_000) == sum(i * i % 7 for i in range(2_000_000))\n"
HONEST = HONEST_PROMPT + "    return sum(i * i % 7 for i in range(n))\n"
CPU_ATTACKS = {
    "cpu_unpin_and_fork": """
        import os, time
        try:
            os.sched_setaffinity(0, range(os.cpu_count() or 64))
        except OSError:
            pass
        for _ in range(15):
            if os.fork() == 0:
                os.setsid()  # a session, and so a scheduler autogroup, of its own: fairness is per group
                while True:
                    pass
        while True:
            pass
        """,
    "cpu_priorities": LIBC + """
        import os
        for attempt in (lambda: os.setpriority(os.PRIO_PROCESS, 0, -20),
                        lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)),
                        lambda: os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(50)),
                        lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19),
                        lambda: libc.syscall(314, 0, (ctypes.c_uint32 * 14)(56, 6, 0, 0, 0, 10**6, 10**6, 10**6), 0)):
            try:
                attempt()
            except OSError:
                pass
        for _ in range(15):
            if os.fork() == 0:
                os.setsid()  # a session, and so a scheduler autogroup, of its own: fairness is per group
                while True:
                    pass
        while True:
            pass
        """,
    "cpu_threads": """
        import threading, os
        try:
            os.sched_setaffinity(0, range(64))
        except OSError:
            pass
        def spin():
            while True:
                pass
        for _ in range(30):
            threading.Thread(target=spin, daemon=True).start()
        spin()
        """,
}
MEMORY_ATTACKS = {
    "memory_processes": """
        import os, time
        for _ in range(12):
            if os.fork() == 0:
                try:
                    held = bytearray(200 << 20)
                    for i in range(0, len(held), 4096):
                        held[i] = 1
                except MemoryError:
                    pass
                time.sleep(30)
        held = [bytearray(100 << 20) for _ in range(8)]
        time.sleep(30)
        """,
    "memory_tmpfs_and_kernel": """
        import os, time, select
        try:
            with open("/tmp/fill", "wb") as h:
                for _ in range(64):
                    h.write(b"x" * (1 << 20))
        except OSError:
            pass
        held = []
        for _ in range(200):  # kernel objects: epoll instances, negative dentries, pipes where allowed
            try:
                held.append(select.epoll())
            except OSError:
                break
        for i in range(100000):
            try:
                os.stat(f"/tmp/missing-{i}")
            except OSError:
                pass
        for _ in range(100):
            try:
                r, w = os.pipe()
                held += [r, w]
            except OSError:
                break
        time.sleep(30)
        """,
}


DENIAL_ROUNDS = 2


@pytest.fixture(scope="module")
def denial():
    jobs, names = [], {}
    attacks = {**CPU_ATTACKS, **MEMORY_ATTACKS}
    # Attackers run for 4 s; an honest sample (~0.25 s of CPU) has 1.5 s: sharing its CPU with 15 spinners for
    # its whole run (what an attacker that undid its pinning did to the other worker) times it out.
    for round_ in range(DENIAL_ROUNDS):
        for name, code in attacks.items():
            names[len(jobs)] = name
            jobs.append(Job(len(jobs), f"attack/{name}", HONEST_PROMPT + textwrap.indent(kit.dedent(code), "    "),
                            HONEST_TEST, "check(work)", timeout_s=4.0))
            for _ in range(3):
                names[len(jobs)] = "honest"
                jobs.append(Job(len(jobs), "honest/work", HONEST, HONEST_TEST, "check(work)", timeout_s=1.5))
            for key, (prelude, test, check, correct) in kit.PROBLEMS.items():  # the canonical solutions too
                names[len(jobs)] = "canonical"
                jobs.append(Job(len(jobs), f"redteam/{key}", correct, test, check, prelude=prelude, timeout_s=1.5))
    started = time.monotonic()
    with Executor(workers=2, timeout_s=3.0, memory_mb=MEMORY_MB, nproc=32) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
        restarts, limits = executor.restarts, executor.limit_mode
    return {"outcomes": [(names[i], o) for i, o in sorted(outcomes.items())], "restarts": restarts,
            "limits": limits, "elapsed": time.monotonic() - started}


def test_honest_samples_keep_their_verdicts_beside_cpu_and_memory_attackers(denial):
    canonical = [o for name, o in denial["outcomes"] if name == "canonical"]
    assert len(canonical) == len(kit.PROBLEMS) * DENIAL_ROUNDS * (len(CPU_ATTACKS) + len(MEMORY_ATTACKS))
    assert all(o.passed for o in canonical), [(o.status, o.reason) for o in canonical if not o.passed]
    honest = [o for name, o in denial["outcomes"] if name == "honest"]
    attacks = [(name, o) for name, o in denial["outcomes"] if name not in ("honest", "canonical")]
    assert len(honest) == 3 * DENIAL_ROUNDS * (len(CPU_ATTACKS) + len(MEMORY_ATTACKS))
    bad = [(o.status, o.reason, round(o.duration_s, 2)) for o in honest if not o.passed]
    assert not bad, f"honest samples lost their verdict: {bad}"
    assert all(not o.passed for _, o in attacks)
    durations = [o.duration_s for o in honest]
    print(f"honest beside attackers: {len(honest)} samples, {min(durations):.2f}-{max(durations):.2f} s; attackers: "
          + ", ".join(f"{name} {o.status} {o.reason}" for name, o in attacks[:len(CPU_ATTACKS) + len(MEMORY_ATTACKS)]))
    assert max(durations) < 1.5, durations


# -- class 5: host information: each attack answers right only if it found something of the host -------------
NEEDLES = f"""
    import os, sys, gc
    NEEDLES = [n[::-1] for n in ({REPO[::-1]!r}, "/krow/", "ipa_ssecorp")]  # reversed: not in this source
    HOSTNAME = {socket.gethostname()[::-1]!r}[::-1]
    def _found(texts):
        return any(n in t for t in texts for n in NEEDLES)
""" + SEP
HOST_ATTACKS = {
    "proc_paths": NEEDLES + """
        texts = []
        for path in ("/proc/self/mountinfo", "/proc/1/mountinfo", "/proc/mounts", "/proc/self/maps",
                     "/proc/self/cgroup", "/proc/self/cpuset", "/proc/self/environ", "/proc/self/cmdline",
                     "/proc/self/net/unix"):
            try:
                texts.append(open(path, "rb").read().decode("latin-1"))
            except OSError:
                pass
        for link in ("/proc/self/cwd", "/proc/self/exe", "/proc/self/root"):
            try:
                texts.append(os.readlink(link))
            except OSError:
                pass
        return x if _found(texts) else -x
        """,
    "interpreter_state": NEEDLES + """
        texts = [os.getcwd(), repr(sys.argv), repr(getattr(sys, "orig_argv", "")), repr(sys.path), repr(dict(os.environ)),
                 repr(sys.flags)]
        texts += [getattr(m, "__file__", "") or "" for m in list(sys.modules.values())]
        texts += [getattr(getattr(m, "__spec__", None), "origin", "") or "" for m in list(sys.modules.values())]
        return x if _found(texts) else -x
        """,
    "memory_strings": NEEDLES + """
        texts = []
        for o in gc.get_objects():
            if o is NEEDLES or o is texts:
                continue
            if isinstance(o, dict):
                texts += [v for v in list(o.values()) + list(o.keys()) if isinstance(v, str)]
            elif isinstance(o, (list, tuple)):
                texts += [v for v in o if isinstance(v, str)]
            elif hasattr(o, "co_consts"):
                texts += [v for v in o.co_consts if isinstance(v, str)]
        return x if _found(texts) else -x
        """,
    "hostname": NEEDLES + """
        import socket
        return x if HOSTNAME in (os.uname().nodename, socket.gethostname()) else -x
        """,
    "host_counters": NEEDLES + LIBC + """
        seen = [p for p in ("/proc/stat", "/proc/loadavg", "/proc/meminfo", "/proc/uptime", "/proc/sys", "/proc/self",
                            "/sys", "/sys/fs/cgroup") if os.path.exists(p)]
        info = ctypes.create_string_buffer(128)
        return x if seen or libc.sysinfo(info) == 0 else -x
        """,
    "host_files": NEEDLES + """
        texts = []
        for path in ("/etc/hostname", "/etc/hosts", "/etc/passwd", "/etc/os-release", "/etc/resolv.conf", "/run",
                     "/home", "/work", "/srv", "/var", "/sys"):
            try:
                texts.append(open(path).read() if os.path.isfile(path) else repr(os.listdir(path)))
            except OSError:
                pass
        for folder, needed in (("/root", [".pyenv"]), ("/etc", ["ld.so.cache"])):  # the interpreter's own paths
            try:
                texts += [name for name in os.listdir(folder) if name not in needed]
            except OSError:
                pass
        return x if texts else -x
        """,
}


@pytest.mark.parametrize("name", sorted(HOST_ATTACKS))
def test_no_host_information_reaches_a_sample(name):
    job = Job(0, f"host/{name}", fn(HOST_ATTACKS[name]), "def check(candidate):\n    assert candidate(1) == 1\n",
              "check(f)")
    with Executor(workers=1, timeout_s=5.0, memory_mb=MEMORY_MB) as executor:
        outcome = next(iter(executor.run([job])))
    assert not outcome.passed, f"{name} found host information"
    assert outcome.reason == "AssertionError", (outcome.reason, outcome.sample_error)  # it ran to the end


# -- residual: timing (measured, documented in docs/sandbox.md) -------------------------------------------
# The writer either burns the CPU or not, or evicts page-cache pages it cannot evict; the reader times reads of
# those pages. With every readable page cached by the harness and eviction refused, the reader's decoding is
# no better than a coin: at most DOCUMENTED_TIMING_ACCURACY of pairs right.
TIMING_PAIRS = 24
DOCUMENTED_TIMING_ACCURACY = 0.8
TIMING_WRITER = fn(TARGET + """
    import mmap
    fd = os.open(TARGET, os.O_RDONLY)
    if x:
        for call in (lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED),
                     lambda: mmap.mmap(fd, 0, prot=mmap.PROT_READ).madvise(21)):
            try:
                call()
            except OSError:
                pass
        hog = [bytearray(200 << 20)]  # memory pressure in the worker's cgroup: reclaim its page cache
    return 0
""")
TIMING_READER = fn(TARGET + """
    import time
    fd = os.open(TARGET, os.O_RDONLY)
    size = os.fstat(fd).st_size
    slow = 0  # reads that went to the disk (a cached page reads in ~10 us; preemption makes one or two slow)
    for page in range(0, size, 4096):
        start = time.perf_counter()
        os.pread(fd, 1, page)
        slow += time.perf_counter() - start > 50e-6
    raise ValueError(repr(slow))
""")


def test_page_cache_timing_carries_no_more_than_documented():
    rng = random.Random(7)
    bits = balanced_bits(rng, TIMING_PAIRS)
    jobs = []
    for bit in bits:
        jobs.append(bit_job(len(jobs), TIMING_WRITER, bit))
        jobs.append(observe_job(len(jobs), TIMING_READER))
    with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
    slow = [int(outcomes[2 * k + 1].sample_error.split(":", 1)[1]) for k in range(TIMING_PAIRS)]
    decoded = [int(count >= 3) for count in slow]  # an evicted file: a slow read at least per readahead window
    right = sum(d == b for d, b in zip(decoded, bits))
    accuracy = max(right, TIMING_PAIRS - right) / TIMING_PAIRS
    print(f"page-cache timing: {min(slow)}-{max(slow)} slow reads per sample, decoded {accuracy:.0%} of "
          f"{TIMING_PAIRS} bits")
    assert accuracy <= DOCUMENTED_TIMING_ACCURACY, (accuracy, list(zip(bits, slow)))


def test_attack_count_per_class():
    assert len(FACILITIES) + 1 >= 10 and len(LEARNERS) >= 5 and len(HOST_ATTACKS) >= 5
    assert len(CPU_ATTACKS) >= 3 and len(MEMORY_ATTACKS) >= 2


# -- residual: the clock (measured, documented in docs/sandbox.md) -----------------------------------------
# A sample chooses when it ends; the next one starts right after and reads the clock. The writer ends in the
# first or the second half of a CLOCK_PERIOD_S window; the reader decodes its start time in that window.
CLOCK_PERIOD_S = 0.02
CLOCK_PAIRS = 24
def clock_writer(period: float) -> str:
    return fn(f"""
        import time
        period = {period!r}
        while True:
            phase = time.time() % period / period
            if (x and 0.55 <= phase < 0.6) or (not x and 0.05 <= phase < 0.1):
                return 0
    """)


def clock_reader(period: float) -> str:
    return fn(f"""
        import time
        raise ValueError(repr(time.time() % {period!r} / {period!r}))
    """)


def measure_clock_channel(period: float = CLOCK_PERIOD_S, pairs: int = CLOCK_PAIRS) -> float:
    """The share of bits the best fixed decoding gets right (0.5: nothing carried, 1.0: a bit per pair)."""
    rng = random.Random(11)
    bits = balanced_bits(rng, pairs)
    jobs = []
    for bit in bits:
        jobs.append(bit_job(len(jobs), clock_writer(period), bit))
        jobs.append(observe_job(len(jobs), clock_reader(period)))
    with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
    phases = [float(outcomes[2 * k + 1].sample_error.split(":", 1)[1]) for k in range(pairs)]
    # The reader starts a fixed delay after the writer ends: the best split of the window decodes the bit.
    best = 0
    for shift in [k / 100 for k in range(100)]:
        decoded = [int((p - shift) % 1.0 >= 0.5) for p in phases]
        best = max(best, sum(d == b for d, b in zip(decoded, bits)), sum(d != b for d, b in zip(decoded, bits)))
    return best / pairs


def test_the_clock_is_a_documented_residual_channel():
    """docs/sandbox.md: about one bit per sample pair at a 20 ms window (more with a longer wait)."""
    accuracy = measure_clock_channel()
    print(f"clock channel: {accuracy:.0%} of {CLOCK_PAIRS} bits decoded at a {CLOCK_PERIOD_S * 1000:.0f} ms window")
    assert accuracy >= 0.5


# -- residual: the dentry cache (measured, documented in docs/sandbox.md) ----------------------------------
# Looking up a name that does not exist leaves a negative dentry in the host's cache: a second lookup of the same
# name is faster. The writer looks up 300 names of its pair's own (bit 1) or none (bit 0); the reader times the
# lookups of those names against 300 names nobody looked up.
DENTRY_PAIRS = 24
DENTRY_WRITER = fn("""
    import os
    pair, bit = divmod(x, 2)
    if bit:
        base = os.path.dirname(os.__file__)
        for k in range(300):
            try:
                os.stat(f"{base}/.rt-neg-{pair}-{k}")
            except OSError:
                pass
    return 0
""")
DENTRY_READER = fn("""
    import os, time
    base = os.path.dirname(os.__file__)
    def lookups(prefix):
        start = time.perf_counter()
        for k in range(300):
            try:
                os.stat(f"{base}/{prefix}-{k}")
            except OSError:
                pass
        return time.perf_counter() - start
    control = lookups(f".rt-ctl-{x}")
    target = lookups(f".rt-neg-{x}")
    raise ValueError(repr(target / control))
""")


def measure_dentry_channel(pairs: int = DENTRY_PAIRS) -> float:
    rng = random.Random(5)
    run = rng.randrange(1 << 30)  # fresh names in every measurement
    bits = balanced_bits(rng, pairs)
    jobs = []
    for k, bit in enumerate(bits):
        pair = run + k
        jobs.append(Job(len(jobs), "state/dentry-w", DENTRY_WRITER,
                        f"def check(candidate):\n    candidate({2 * pair + bit})\n", "check(f)"))
        jobs.append(Job(len(jobs), "state/dentry-r", DENTRY_READER,
                        f"def check(candidate):\n    candidate({pair})\n", "check(f)"))
    with Executor(workers=1, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
    ratios = [float(outcomes[2 * k + 1].sample_error.split(":", 1)[1]) for k in range(pairs)]
    threshold = statistics.median(ratios)
    right = sum(int(r < threshold) == b for r, b in zip(ratios, bits))
    return max(right, pairs - right) / pairs


def test_the_dentry_cache_is_a_documented_residual_channel():
    accuracy = measure_dentry_channel()
    print(f"dentry-cache timing: decoded {accuracy:.0%} of {DENTRY_PAIRS} bits")
    assert accuracy >= 0.5
