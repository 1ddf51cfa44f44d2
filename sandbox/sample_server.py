"""The sample server: one per worker, inside the jail; every sample is a fresh process from a pristine zygote.

Started by :mod:`sandbox.pool` as ``python -I -S -B sample_server.py CONFIG_JSON`` inside bubblewrap,
with the control socket to the worker's checker on ``config["control_fd"]``. It never sees a test, and it
never sees a candidate either. Three processes take part in every sample --

* the **server** (this module's :class:`SampleServer`, long-lived): it keeps the worker's state (how /tmp was
  left, the running sample's pid) and does what needs that state: a fresh ``/tmp`` when the last
  sample left a trace in it (:meth:`SampleServer.prepare_tmp`), the jail's PID counter set back to the same
  value before every sample (as real root), the kill of everything a sample left, and the exit status the zygote
  forwards;
* the **zygote** (:func:`zygote_loop`), forked from the server once, after the jail's set-up and before any
  sample: it holds nothing that any sample made or chose. Per sample it receives only the sample's call channel
  and time limit, makes the sample's PID namespace, forks the **sample**, tells the server its pid (as real root
  the same for every sample: the server resets the jail's PID counter first), and, once the server has killed
  the sample, reaps it into a buffer it forwards to the server and zeroes (:class:`ExitRecord`).

The sample itself

1. starts in a fresh PID namespace (it is its init) and with an empty, size-capped tmpfs of the server's on
   ``/tmp`` (a new one whenever the last sample left any trace in it, detached whole, never deleted file by file),
   so no process, PID count or file outlives a sample (SysV IPC and POSIX message queues, the one other place
   for state, are refused by the seccomp filter);
2. points fds 0-2 at a ``/dev/null`` opened for it alone (an open file shared with earlier samples would carry
   its status flags from one to the next) and closes every other fd but the channel;
3. is the out-of-memory killer's first choice (``oom_score_adj`` 1000, set by the zygote around the fork), sets
   its rlimits and drops to an unprivileged uid without capabilities (``no_new_privs`` and the seccomp filter of
   :mod:`sandbox.seccomp`, installed once before the zygote is forked, are inherited);
4. reads its own candidate from its own channel, runs it and answers the checker's calls
   (:func:`sandbox.channel.serve_calls`).

So the memory a sample inherits is the zygote's: no candidate's source, no object of the server's and no /tmp
history ever passed through it, an earlier sample's pid is the one this sample gets too, and an earlier exit
status was zeroed where the kernel wrote it. When the checker says the sample is
over, the server kills every process left in the jail and answers with how the sample's process ended.
Stdlib only: it runs with ``-S``, without site-packages.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import json
import math
import os
import platform
import resource
import signal
import socket
import struct
import sys
import time
from typing import Any

if __package__:
    from sandbox import channel, framing, seccomp
else:  # run as a script inside the jail: import the sibling modules, then hide their directory again
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import channel  # type: ignore[no-redef]
    import framing  # type: ignore[no-redef]
    import seccomp  # type: ignore[no-redef]
    del sys.path[0]

EXIT_SETUP_FAILED = 70
# The first subscript of a typing generic costs ~1.4 ms of one-time set-up; paid once here instead of in every
# sample (HumanEval prompts annotate with List[int], Tuple[...], Optional[...]).
WARM_UP = """
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union
_ = (List[int], List[str], List[float], List[Any], List[List[int]], List[Tuple[int, int]], Tuple[int, int],
     Tuple[int, ...], Tuple[str, int], Tuple[float, float], Optional[int], Optional[str], Dict[str, int],
     Dict[Any, Any], Set[int], Union[int, float], Union[int, str], Callable[[int], int], Iterable[int],
     Iterator[int], list[int], dict[str, int], tuple[int, ...])
"""
# The per-sample calls' arguments come from the seccomp module, whose filter lets exactly these through.
CLONE_NEWPID, MNT_DETACH = seccomp.CLONE_NEWPID, seccomp.MNT_DETACH
MS_NOSUID, MS_NODEV, MS_NOEXEC = seccomp.MS_NOSUID, seccomp.MS_NODEV, seccomp.MS_NOEXEC
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x4000, 0x40000
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 36, 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522
USTAT = 136  # x86-64


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class Libc:
    """The few system calls Python's ``os`` module lacks (on 3.10/3.11): unshare, mount, capset, prctl.

    A ctypes call costs a fresh child ~50 copy-on-write page faults, so the server makes them, not the samples.
    """

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)
        self.own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        self._ustat: tuple[int, ctypes.c_uint, Any] | None = None  # free_space's arguments for the last device

    def _check(self, result: int, what: str) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    def prctl(self, option: int, value: int) -> None:
        self._check(self.lib.prctl(option, value, 0, 0, 0), "prctl")

    def make_mounts_private(self) -> None:
        self._check(self.lib.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")

    def mount_tmp(self, size_mb: int) -> None:
        """A new empty tmpfs on /tmp, noexec: no file a sample writes maps executable (W^X, see seccomp)."""
        options = f"size={size_mb}m,mode=1777,nr_inodes=16384".encode()
        self._check(self.lib.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options),
                    "mount tmpfs")

    def new_pid_namespace(self) -> None:
        """The next child starts a new PID namespace (as its init)."""
        # A new PID namespace can be asked for only while children would still go to our own: point them back
        # there (the last sample's namespace is gone with its init), then ask for a new one.
        self._check(self.lib.setns(self.own_pid_namespace, CLONE_NEWPID), "setns")
        self.unshare(CLONE_NEWPID)

    def unshare(self, flags: int) -> None:
        self._check(self.lib.unshare(flags), "unshare")

    def hide_other_processes(self, gid: int | None) -> bool:
        """Remount the jail's /proc with processes only (``subset=pid``: no /proc/stat, loadavg, meminfo, sys,
        ...: host-wide counters a sample could write and the next one read) and, given ``gid``, so that a sample
        sees only its own processes (``gid`` still sees all)."""
        options = (f"hidepid=2,gid={gid},subset=pid" if gid is not None else "subset=pid").encode()
        flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC
        return self.lib.mount(b"proc", b"/proc", b"proc", flags, options) == 0

    def devices_read_only(self) -> None:
        """Remount the device nodes bound into /dev read-only: they stay usable (a device node is written
        through its driver, whatever the mount says), but their times can no longer be set to "now" by any
        sample allowed to write them (utime(NULL)), on the host's devtmpfs, for the next sample to read. Noexec:
        /dev/zero mapped shared and executable, then aliased writable by mremap, was writable code."""
        for name in os.listdir("/dev"):
            path = f"/dev/{name}".encode()
            self.lib.mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, None)

    def free_space(self, device: int) -> tuple[int, int] | None:
        """(free blocks, free inodes) of a mounted file system, through ``ustat`` (x86-64): ``statfs`` is refused
        by the seccomp filter (a new tmpfs has a random fsid). None where there is no ``ustat``. The call's
        arguments are kept per device: the server asks about the same /tmp before every sample."""
        if platform.machine() != "x86_64":
            return None
        if self._ustat is None or self._ustat[0] != device:
            major, minor = os.major(device), os.minor(device)
            encoded = (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)
            # struct ustat: int f_tfree; ino_t f_tinode; char f_fname[6], f_fpack[6]
            self._ustat = (device, ctypes.c_uint(encoded), (ctypes.c_long * 4)())
        _, encoded_device, buffer = self._ustat
        if self.lib.syscall(USTAT, encoded_device, buffer) != 0:
            return None
        return ctypes.c_int.from_buffer(buffer).value, buffer[1]

    def open_pid_counter(self, path: str | None) -> int | None:
        """Open the jail's ``ns_last_pid`` (bound by the jail as real root) for writing, then detach the bind: the
        server keeps the fd, no sample sees the file. Writing it needs CAP_SYS_ADMIN over the jail's PID
        namespace, which samples never hold. None where the jail binds none or it cannot be opened."""
        if not path:
            return None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return None
        self.lib.umount2(path.encode(), MNT_DETACH)
        return fd

    def drop_proc(self) -> None:
        """Detach the jail's /proc (and the mounts under it) for good."""
        self._check(self.lib.umount2(b"/proc", MNT_DETACH), "umount /proc")

    def drop_tmp(self) -> None:
        """Detach the sample's tmpfs; the kernel frees it, whatever is in it, once no process holds it."""
        self._check(self.lib.umount2(b"/tmp", MNT_DETACH), "umount /tmp")

    def drop_capabilities(self) -> None:
        header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
        self._check(self.lib.capset(ctypes.byref(header), data), "capset")


PID_COUNTER_BASE = 100  # as real root, the jail's last pid is set to this before every sample (see reset_pid_counter)
_PID = struct.Struct("<q")


def harden(config: dict[str, Any], libc: Libc, filter_: seccomp.SeccompFilter) -> int | None:
    """Process-wide set-up, once, before the zygote is forked (so that it and every sample inherit it).

    Returns an fd open for writing on the jail's ``ns_last_pid`` (as real root, where the jail binds it), else
    None. Everything here is the server's own; nothing of a sample exists yet."""
    namespaced = config["namespaced"]
    libc.prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem, no pidfd_getfd for same-uid samples
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1)  # inherited: no sample gains privileges through execve
    # Without a PID namespace, whatever a sample leaves behind comes back to the server, to be killed and reaped.
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    pid_counter = None
    warm_ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # before the filter, which refuses sockets
    if namespaced:
        libc.make_mounts_private()  # a sample's tmpfs never propagates anywhere
        libc.devices_read_only()
        pid_counter = libc.open_pid_counter(config.get("pid_counter"))
        if not drops_proc(config, filter_):  # else /proc goes once the zygote is up (main): samples get none
            # /proc with processes only (and, where samples have a uid of their own, only theirs)
            libc.hide_other_processes(os.getgid() if config.get("child_uid") is not None else None)
        elif config.get("child_uid") is None:  # samples share our uid: RLIMIT_NPROC counts the jail's processes
            config["proc_fd"] = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
        filter_.install()  # after the set-up mounts above; every sample inherits it
    # Limits the server can hold itself are set once here; its samples inherit them.
    for which, value in ((resource.RLIMIT_FSIZE, config["fsize_mb"] << 20),
                         (resource.RLIMIT_NOFILE, config["nofile"]), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))
    for name in channel.PRELOAD:  # imported once here, so that samples do not pay for them
        try:
            __import__(name)
        except ImportError:
            pass
    exec(WARM_UP, {})
    channel.warm_up(*(end.fileno() for end in warm_ends))
    for end in warm_ends:
        end.close()
    gc.collect()
    libc.lib.malloc_trim(0)  # the heap's free pages back to the kernel: fewer page-table entries per fork
    return pid_counter


def drops_proc(config: dict[str, Any], filter_: seccomp.SeccompFilter) -> bool:
    """Whether samples get no /proc at all (in the jail, with the seccomp filter), see :func:`harden`. In the
    user-namespace flavour too: there a sample kept its own ``/proc/self/mem``, which writes through page
    protections (a stdlib file mapped executable, then written there: machine code of its own past W^X, the
    twenty-first session's ninth round). The count of the uid's processes reads a descriptor the zygote keeps
    (``proc_fd``, :func:`processes_of_sample_uid`), closed in each sample before its code runs."""
    return config["namespaced"] and filter_.available


def open_oom_score() -> int | None:
    """This process's own ``oom_score_adj``, opened for writing (raising it, and lowering it back to 0, needs no
    privilege)."""
    try:
        return os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    except OSError:
        return None


def set_oom_score(fd: int | None, value: bytes) -> None:
    if fd is not None:
        try:
            os.pwrite(fd, value, 0)
        except OSError:
            pass


def start_zygote(config: dict[str, Any], libc: Libc, server_end: socket.socket, zygote_end: socket.socket,
                 server_fds: tuple[int, ...]) -> tuple[socket.socket, int]:
    """Fork the zygote; returns the server's end of the socket to it and its pid. Called from a frame that
    holds no server object, so none is reachable from the zygote or a sample. ``server_fds`` (the checker's
    socket, the PID counter) stay the server's alone; the checker's requests for samples
    (``config["zygote_fd"]``) are the zygote's alone."""
    pid = os.fork()
    if pid == 0:
        try:
            server_end.close()
            for fd in server_fds:
                os.close(fd)
            zygote_loop(zygote_end, socket.socket(fileno=config["zygote_fd"]), config, libc, open_oom_score())
        finally:
            os._exit(EXIT_SETUP_FAILED)
    zygote_end.close()
    os.close(config["zygote_fd"])
    if server_end.recv(1) != b"z":  # the zygote has opened its own oom_score_adj: /proc may go now
        raise SystemExit("sample server: the zygote did not start")
    return server_end, pid


class ExitRecord:
    """Where the zygote has the kernel write a sample's end (``waitid``'s ``siginfo_t``), and nowhere else.

    The zygote forwards the two fields the server needs (how it ended, the code or signal), straight from this
    buffer, then zeroes it: no Python object of the zygote's, which the next sample will inherit, ever holds a
    sample's exit status."""

    SIZE = 128  # sizeof(siginfo_t)
    P_PID, WEXITED = 1, 4
    CODE, STATUS = slice(8, 12), slice(24, 28)  # si_code, si_status (x86-64 and aarch64 alike)

    def __init__(self, libc: Libc):
        self.waitid = libc.lib.waitid
        self.buffer = ctypes.create_string_buffer(self.SIZE)
        self.view = memoryview(self.buffer).cast("B")

    def wait_and_forward(self, pid: int, sock: socket.socket) -> None:
        while self.waitid(self.P_PID, pid, self.buffer, self.WEXITED) != 0:
            if ctypes.get_errno() != errno.EINTR:
                break
        if sock.sendmsg([self.view[self.CODE], self.view[self.STATUS]]) != _EXIT.size:  # one message, no copy
            raise SystemExit("zygote: the server's socket took part of an exit record")
        ctypes.memset(self.buffer, 0, self.SIZE)


CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3
_EXIT = struct.Struct("<ii")  # si_code and si_status, as the zygote forwards them


def zygote_loop(sock: socket.socket, requests: socket.socket, config: dict[str, Any], libc: Libc,
                oom_score: int | None) -> None:
    """The zygote: per sample, receive the channel and the time limit from the checker (``requests``), make the
    sample's PID namespace, fork the sample, tell the server its pid (``sock``: read when the checker ends the
    sample), and reap it once the server has killed it.

    What it receives is the trusted checker's (an fd, a float); the sample's pid is the same for every sample as
    real root (the server resets the jail's PID counter first); its exit status passes through
    :class:`ExitRecord` alone. It never sees a byte of any candidate."""
    exits = ExitRecord(libc)
    fork = channel.UNGUARDED_OS["fork"]
    channel.guard_the_zygote()
    settle_zygote(config)
    if config["namespaced"]:
        seccomp.SampleFilter().install()  # what the server still calls itself (ustat), refused to every sample
    sock.sendall(b"z")
    while True:
        message, fds, _, _ = socket.recv_fds(requests, framing.SAMPLE_REQUEST.size, 1)
        if len(message) != framing.SAMPLE_REQUEST.size or len(fds) != 1:
            os._exit(0)  # the checker is gone
        channel_fd, (timeout_s,) = fds[0], framing.SAMPLE_REQUEST.unpack(message)
        if config["namespaced"]:
            libc.new_pid_namespace()
        gc.freeze()  # objects made so far are shared with the sample and never touched by its GC
        set_oom_score(oom_score, b"1000")  # over the memory limit, the sample goes first: it inherits this score
        try:
            pid = fork()
        except OSError:
            pid = -1
        if pid == 0:  # the zygote's socket is closed with its other fds (enter_jail)
            try:
                enter_jail(config, libc, channel_fd, timeout_s)
            except BaseException:
                os._exit(EXIT_SETUP_FAILED)
            try:
                channel.serve_calls(channel_fd, channel.program_namespace())
            finally:
                os._exit(0)
        set_oom_score(oom_score, b"0")
        os.close(channel_fd)
        sock.sendall(_PID.pack(pid))
        if pid > 0:
            exits.wait_and_forward(pid, sock)


def fds_0_to_2_on_devnull() -> None:
    """Point fds 0-2 at one ``/dev/null`` opened here, an open file of this process's (and its children's) own."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def settle_zygote(config: dict[str, Any]) -> None:
    """What every sample's set-up shares, done once in the zygote (each write a sample makes to memory it shares
    with the zygote costs it a copied page, ~3 us here): fds 0-2 on ``/dev/null`` (the zygote reports nothing on
    them once started; each sample opens its own: :func:`enter_jail`) and the limits that are the same for every
    sample (its CPU limit follows its own time limit: :func:`enter_jail`). The zygote is real root in the jail or
    holds CAP_SYS_ADMIN, which RLIMIT_NPROC does not bind, and stays far below RLIMIT_AS."""
    fds_0_to_2_on_devnull()
    resource.setrlimit(resource.RLIMIT_AS, (config["memory_mb"] << 20,) * 2)
    if config.get("child_uid") is not None:  # else it counts the sample uid's processes anew for every sample
        resource.setrlimit(resource.RLIMIT_NPROC, (config["nproc"],) * 2)
    for signum in ENDS_THE_PEERS_PROCESS:
        signal.signal(signum, _end_as_the_peers_process_would)


# Signals whose default action ends a process. A sample is the init of its own PID namespace, and the kernel drops
# such a signal that the namespace's init sends itself (os.kill(os.getpid(), SIGTERM), an alarm() left at its
# default): the program carried on, and could pass, where the peers' process dies (a verdict they do not give).
# Stop signals (TSTP, TTIN, TTOU) too: the peers' process stops until their time limit. KILL, STOP and the fault
# signals the seccomp filter handles (seccomp.SELF_SIGNALS_ENDING).
ENDS_THE_PEERS_PROCESS = (signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
                          signal.SIGTERM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGIO, signal.SIGPWR,
                          signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGABRT, signal.SIGSYS,
                          *([signal.SIGSTKFLT] if hasattr(signal, "SIGSTKFLT") else []))


def _end_as_the_peers_process_would(signum: int, frame: Any) -> None:
    os._exit(128 + signum)


def enter_jail(config: dict[str, Any], libc: Libc, channel_fd: int, timeout_s: float) -> None:
    """In the sample's process, before any of the candidate's code exists in it: its fds, limits and uid (the rest
    is the zygote's already: :func:`settle_zygote`)."""
    os.setpgid(0, 0)  # its own process group, so kill(0, ...) reaches only the sample (setsid cost ~0.25 ms)
    if config["namespaced"]:
        workdir = "/tmp"
    else:
        workdir = os.path.join(config["scratch"], f"sample-{os.getpid()}")
        os.mkdir(workdir, 0o700)
    shared_uid_processes = processes_of_sample_uid(config)  # before the fds go: it reads the zygote's proc_fd
    os.closerange(3, channel_fd)  # the zygote's socket and files among them
    os.closerange(channel_fd + 1, 1 << 16)
    # fds 0-2 anew: the zygote's /dev/null is one open file that every sample would share, and its status flags
    # (O_APPEND, O_NONBLOCK: fcntl F_SETFL, ioctl FIONBIO) would carry bits from one sample to the next
    fds_0_to_2_on_devnull()
    cpu = int(math.ceil(timeout_s)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    uid = config.get("child_uid")
    if uid is not None:  # real root in the jail: a private uid of this executor's, which drops every capability
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:
        resource.setrlimit(resource.RLIMIT_NPROC, (config["nproc"] + shared_uid_processes,) * 2)
        if config["drop_capabilities"]:
            libc.drop_capabilities()
    channel.UNGUARDED_OS["chdir"](workdir)  # the zygote has set the peers' guard (channel.guard_the_zygote)
    if not config["namespaced"]:  # in the jail, bubblewrap already set them (and an update costs ~100 page faults)
        with channel.unguarded_os("putenv"):
            os.environ.update(HOME=workdir, TMPDIR=workdir)


def processes_of_sample_uid(config: dict[str, Any]) -> int:
    """Processes that already count against RLIMIT_NPROC for the uid the sample runs as."""
    if config.get("child_uid") is not None:
        return 0  # a uid used by this executor's worker alone, on the whole host (sandbox.uids)
    proc = config.get("proc_fd")  # /proc itself is gone where the zygote keeps this (drops_proc)
    uid, count = os.getuid(), 0
    for name in os.listdir(proc if proc is not None else "/proc"):
        if name.isdigit():
            try:
                count += os.stat(name if proc is not None else f"/proc/{name}", dir_fd=proc).st_uid == uid
            except OSError:
                pass
    return count


class SampleServer:
    """The worker's long-lived state and the jail's housekeeping; samples come from the zygote, never from here."""

    def __init__(self, config: dict[str, Any], libc: Libc, filter_: seccomp.SeccompFilter,
                 zygote: socket.socket, zygote_pid: int, pid_counter: int | None):
        self.config = config
        # What the jail around us provides (sandbox.isolation.ServerProfile): we harden accordingly.
        self.namespaced: bool = config["namespaced"]
        self.pid = os.getpid()
        self.libc = libc
        self.seccomp = filter_
        self.zygote, self.zygote_pid = zygote, zygote_pid
        self.pid_counter = pid_counter
        self.control = socket.socket(fileno=config["control_fd"])  # from the checker: trusted
        self.clean_tmp: tuple | None = None  # how /tmp looks while no sample has changed it; None: mount anew
        self.tmp_mounts = 0  # tmpfs mounted on /tmp so far (the last one is still there)
        self.sample_pid = -1

    # -- one sample ------------------------------------------------------------------------------------
    def prepare_tmp(self) -> None:
        """Give the next sample an empty /tmp that nothing of an earlier sample can be read from.

        Mounting a new tmpfs for every sample costs the server ~0.1 ms and the kernel an expedited RCU grace
        period per unmount, and most samples never touch /tmp. So, where samples run under a uid that does
        not own /tmp (real root: ``child_uid``), the tmpfs is kept while no sample has changed it. Before each
        sample the server sets the directory's access and modification times to 0 (its change time becomes
        "now", as on a new mount). Adding or removing any entry sets the modification time, listing it the
        access time, and a sample cannot set either back (only the owner may choose times); a file made with
        O_TMPFILE, the one way to take an inode (and so move the inode numbers a next sample would see)
        without an entry, is refused by the seccomp filter. With both times still 0 and the same owner, mode,
        link count, free blocks and inodes and no extended attributes, the tmpfs is as a new one would be,
        down to the next inode number. Otherwise it is detached whole and a new one mounted.
        """
        if self.clean_tmp is not None and self._tmp_state() == self.clean_tmp:
            os.utime("/tmp", ns=(0, 0))  # the times are 0 already: the state stays clean_tmp; ctime becomes "now"
            return
        if self.tmp_mounts:
            self.libc.drop_tmp()
        self.libc.mount_tmp(self.config["scratch_mb"])
        self.tmp_mounts += 1
        os.utime("/tmp", ns=(0, 0))
        self.clean_tmp = self._tmp_state() if self.config.get("child_uid") is not None else None

    def _tmp_state(self) -> tuple:
        info = os.stat("/tmp")
        return (info.st_atime_ns, info.st_mtime_ns, info.st_mode, info.st_uid, info.st_gid, info.st_nlink,
                info.st_size, self.libc.free_space(info.st_dev), tuple(os.listxattr("/tmp")))

    def reset_pid_counter(self) -> None:
        """Set the jail's last pid back to the same value before every sample (as real root): the sample then gets
        the same pid whatever earlier samples forked, so the pid the zygote learns from ``fork`` (and keeps in its
        memory, which the next sample inherits) counts nothing an earlier sample did."""
        if self.pid_counter is not None:
            os.pwrite(self.pid_counter, str(PID_COUNTER_BASE).encode(), 0)

    def ready_next(self) -> None:
        """Ready the jail for the next sample, which the checker asks the zygote for once we have answered: a
        fresh /tmp where the last sample left a trace, and the PID counter set back."""
        if self.namespaced:
            self.prepare_tmp()
        self.reset_pid_counter()

    def _from_zygote(self, size: int) -> bytes:
        try:
            return framing.recv_exact(self.zygote, size)
        except framing.ChannelClosed:
            raise SystemExit("sample server: the zygote is gone") from None

    def sample_exit(self) -> dict[str, Any]:
        """How the sample ended, as the zygote reaped it (it is the sample's parent)."""
        code, value = _EXIT.unpack(self._from_zygote(_EXIT.size))
        if code == CLD_EXITED:
            return {"code": value, "signal": None}
        if code in (CLD_KILLED, CLD_DUMPED):
            return {"code": None, "signal": value}
        return {"code": None, "signal": None}

    # -- after each sample -----------------------------------------------------------------------------
    def end_sample(self) -> dict[str, Any]:
        self.sample_pid = _PID.unpack(self._from_zygote(_PID.size))[0]  # sent when the zygote forked it
        if self.sample_pid <= 0:  # the zygote could not fork: nothing ran
            return {"code": None, "signal": None}
        if not self.namespaced:
            self.kill_descendants()
        else:
            self.kill_namespace()
        self.sample_pid = -1
        ended = self.sample_exit()
        if not self.namespaced:
            remove_tree(self.config["scratch"], keep_root=True)
        return ended

    def reap(self) -> None:
        """Reap orphans (without a PID namespace, what a sample leaves comes back to us, the subreaper)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.zygote_pid:
                raise SystemExit("sample server: the zygote died")

    def kill_namespace(self) -> None:
        """Kill every process the sample left. The sample is the init of its own PID namespace: once it is
        killed, the kernel kills everything in that namespace, and the zygote reaps it. Without the seccomp
        filter a last look at /proc kills anything else in the jail but its init, the zygote and us."""
        try:
            os.kill(self.sample_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.seccomp.available:  # no sample process can have left its PID namespace: nothing else to find
            return
        keep = {1, self.pid, self.zygote_pid, self.sample_pid}
        for attempt in range(10_000):
            self.reap()
            others = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in keep]
            if not others:
                return
            for pid in others:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if attempt:
                time.sleep(min(0.0002 * attempt, 0.01))
        raise SystemExit("sample server: could not clear the sandbox's processes")

    def kill_descendants(self) -> None:
        """Without a PID namespace: kill every process descended from us (we are their subreaper), but the zygote."""
        for attempt in range(10_000):
            self.reap()
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
                if fields[0] != b"Z":
                    children.setdefault(int(fields[1]), []).append(int(name))
            # The sample is the zygote's child; everything else of it (orphans) ours.
            found, todo = [], [pid for pid in children.get(self.pid, ()) if pid != self.zygote_pid]
            todo += children.get(self.zygote_pid, ())
            while todo:
                pid = todo.pop()
                found.append(pid)
                todo.extend(children.get(pid, ()))
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if attempt:
                time.sleep(min(0.0002 * attempt, 0.01))
        raise SystemExit("sample server: could not kill the sample's processes")

    # -- loop ------------------------------------------------------------------------------------------
    def serve(self) -> None:
        self.ready_next()
        framing.send_frame(self.control, {"ready": True, "pid": self.pid, "uid": os.getuid(),
                                          "python": sys.version.split()[0], "namespaced": self.namespaced})
        # Per sample: the checker's word that it is over (framing.SAMPLE_END), answered with how it ended once its
        # processes are gone; then its word that it has closed its end of the sample's channel
        # (framing.SAMPLE_RELEASED), answered once the jail is ready for the next one (framing.NEXT_READY). In
        # that order: a file a sample left in flight on its channel (an fd sent where the checker never reads)
        # keeps the sample's tmpfs alive, and with it that tmpfs's device number, until the checker's end closes;
        # readied before, the next /tmp got another device number, one bit that a sample could set and later
        # samples read.
        while True:
            try:
                (job_id,) = framing.SAMPLE_END.unpack(framing.recv_exact(self.control, framing.SAMPLE_END.size))
                ended = self.end_sample()
                self.control.sendall(framing.SAMPLE_ENDED.pack(job_id, *(-1 if ended[key] is None else ended[key]
                                                                          for key in ("code", "signal"))))
                (released,) = framing.SAMPLE_RELEASED.unpack(
                    framing.recv_exact(self.control, framing.SAMPLE_RELEASED.size))
            except framing.ChannelClosed:
                return
            if released != job_id:
                raise SystemExit("sample server: the checker released another sample than the one that ended")
            self.ready_next()
            self.control.sendall(framing.NEXT_READY.pack(job_id))


def remove_tree(root: str, keep_root: bool = False) -> None:
    """Delete a directory tree of any depth without recursion (only where there is no private tmpfs)."""
    stack = [root]
    order = []
    while stack:
        path = stack.pop()
        order.append(path)
        try:
            os.chmod(path, 0o700)
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
    for path in reversed(order):
        if keep_root and path == root:
            continue
        try:
            os.rmdir(path)
        except OSError:
            pass


def probe(config: dict[str, Any]) -> int:
    """Set up one sample's jail for real (namespaces, tmpfs, privileges) and report whether it worked."""
    libc = Libc()
    check_namespace(config)
    read_end, write_end = os.pipe()  # before the filter, which refuses pipes
    if config["namespaced"]:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
        libc.make_mounts_private()
        seccomp.SeccompFilter().install()
        libc.mount_tmp(config["scratch_mb"])
        libc.new_pid_namespace()
    pid = os.fork()
    if pid == 0:
        try:
            settle_zygote(config)
            enter_jail(config, libc, write_end, 1.0)
            with open("/tmp/probe", "w") as handle:
                handle.write("ok")
            if config["namespaced"]:  # what the server may do, a sample may not (no capabilities)
                for attempt in (lambda: libc.mount_tmp(1), lambda: libc.unshare(CLONE_NEWPID)):
                    try:
                        attempt()
                    except OSError:
                        continue
                    raise RuntimeError("a sample could mount or make a namespace")
            os.write(write_end, b"ok" if os.getuid() != 0 or not config["namespaced"] else b"root")
        except BaseException as exc:
            os.write(write_end, f"{type(exc).__name__}: {exc}".encode()[:200])
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 256)
    os.waitpid(pid, 0)
    os.write(1, (answer.decode("utf-8", "replace") + "\n").encode())
    return 0 if answer == b"ok" else 1


def check_namespace(config: dict[str, Any]) -> None:
    """Refuse namespace-wide kills unless we really are in our own PID namespace."""
    if config["namespaced"] and os.readlink("/proc/self/ns/pid") == config["host_pidns"]:
        raise SystemExit("sample server: expected a private PID namespace; refusing to start")


def main(argv: list[str]) -> int:
    argv = list(argv)
    config = json.loads(argv[-1])
    del sys.argv[1:]  # samples are forks of the server: leave them nothing of its command line
    if hasattr(sys, "orig_argv"):
        del sys.orig_argv[1:]
    if argv[1] == "--probe":
        return probe(config)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    check_namespace(config)
    del config["host_pidns"]  # the harness's namespace, needed for that check alone: no sample inherits it
    libc, filter_ = Libc(), seccomp.SeccompFilter()
    # The zygote's socket is made before the seccomp filter, which refuses new sockets.
    server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid_counter = harden(config, libc, filter_)
    server_fds = (config["control_fd"],) + ((pid_counter,) if pid_counter is not None else ())
    zygote, zygote_pid = start_zygote(config, libc, server_end, zygote_end, server_fds)
    if config.get("proc_fd") is not None:
        os.close(config.pop("proc_fd"))  # the zygote's alone
    if drops_proc(config, filter_):
        # Past this point the server needs no /proc (its own fds are open already; kill_namespace needs none
        # when every sample is its PID namespace's init): samples get none at all. No host path (mountinfo),
        # no counters, and no new /proc inode per lookup, which would let a sample move the kernel's shared
        # inode counter (get_next_ino) for the next one to read.
        libc.drop_proc()
    SampleServer(config, libc, filter_, zygote, zygote_pid, pid_counter).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
