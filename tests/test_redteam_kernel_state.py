"""Red-team suite, kernel state (class 1): what one sample can leave in the kernel for a later one.

On ONE worker, a writer sample is given a random bit and stores it in one facility (network namespace, page cache,
file times, mount ids, scheduler settings, kernel counters...); the next sample, the reader, reports what it
observes of that facility through its own error text (a measuring instrument of this test only: a real attacker
learns just its verdict). A facility is closed when the reader's observation does not depend on the bit:
``bits_carried`` counts the pairs in which the reader decodes the writer's bit better than a constant would.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import redteam_kit as kit
from redteam_kit import bits_carried
from redteam_state_kit import (INODE_BURN, LIBC, MEMORY_MB, NEEDS_ISOLATION, TARGET, TIMEOUT_S, Job, bit_job, fn,
                               observe_job)
from sandbox import Executor

pytestmark = NEEDS_ISOLATION

PAIRS = 12  # writer/reader pairs per facility (bits written)

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



def test_a_file_left_in_flight_on_the_channel_does_not_carry_to_the_next_sample():
    """A sample sent a file of its /tmp past the checker's last read (a 64 KiB reply, then one byte with the fd):
    it stayed in the checker's end of the channel, which closed after the sample server had made the next /tmp,
    so the old tmpfs still held its device number and the next /tmp got another (st_dev 49 <-> 50): a bit a sample
    could set and every later one read. The checker's end now closes before the next /tmp is made (found by the
    seventeenth session's red-team round)."""
    folder = Path(__file__).parent / "data" / "channel_in_flight"  # not in the corpus: this test runs them
    writer = (folder / "tmp_device_in_flight_writer.py").read_text()
    reader = (folder / "tmp_device_reader.py").read_text()
    prelude, test, check, _ = kit.PROBLEMS["secret"]
    order = [reader, writer, reader, writer, reader, writer, reader]
    jobs = [Job(i, "redteam/secret", code, test, check, prelude=prelude) for i, code in enumerate(order)]
    with Executor(workers=1, timeout_s=1.5, memory_mb=MEMORY_MB, nproc=16) as executor:
        outcomes = sorted(executor.run(jobs), key=lambda o: o.job_id)
    seen = [o.detail.get("returned") for o, code in zip(outcomes, order) if code is reader]
    assert None not in seen and len(set(seen)) == 1, seen
