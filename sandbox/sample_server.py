"""The sample server: one per worker, inside the jail, forking a fresh process for every sample.

Started by :mod:`sandbox.pool` as ``python -I -S -B sample_server.py CONFIG_JSON`` inside bubblewrap,
with the control socket to the worker's checker on ``config["control_fd"]``. It never sees a test. Per
sample it receives the candidate's source and one end of a fresh call channel, forks a child that

1. starts in a fresh PID namespace (it is its init), made by the server just before the fork, and with an
   empty, size-capped tmpfs of the server's on ``/tmp``: a new one whenever the last sample left any trace
   in it (:meth:`SampleServer.prepare_tmp`), detached whole, never deleted file by file, so no process,
   PID count or file outlives a sample and no directory tree can make the clean-up fail (SysV IPC and
   POSIX message queues, the one other place for state, are refused by the seccomp filter);
2. points fds 0-2 at ``/dev/null`` and closes every other fd but the channel;
3. is the out-of-memory killer's first choice (``oom_score_adj`` 1000, set around the fork), sets its rlimits
   and drops to an unprivileged uid without capabilities (``no_new_privs`` and the seccomp filter of
   :mod:`sandbox.seccomp`, installed once in the server, are inherited);
4. runs the candidate and answers the checker's calls (:func:`sandbox.channel.serve_calls`);

and, when the checker says the sample is over, kills every process left in the jail and answers with
how the sample's process ended. Stdlib only: it runs with ``-S``, without site-packages.
"""

from __future__ import annotations

import ctypes
import gc
import json
import math
import os
import platform
import resource
import signal
import socket
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
MS_NOSUID, MS_NODEV = seccomp.MS_NOSUID, seccomp.MS_NODEV
MS_RDONLY, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x8, 0x20, 0x1000, 0x4000, 0x40000
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

    def _check(self, result: int, what: str) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    def prctl(self, option: int, value: int) -> None:
        self._check(self.lib.prctl(option, value, 0, 0, 0), "prctl")

    def make_mounts_private(self) -> None:
        self._check(self.lib.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")

    def mount_tmp(self, size_mb: int) -> None:
        """A new empty tmpfs on /tmp."""
        options = f"size={size_mb}m,mode=1777,nr_inodes=16384".encode()
        self._check(self.lib.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount tmpfs")

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
        sample allowed to write them (utime(NULL)), on the host's devtmpfs, for the next sample to read."""
        for name in os.listdir("/dev"):
            path = f"/dev/{name}".encode()
            self.lib.mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, None)

    def free_space(self, device: int) -> tuple[int, int] | None:
        """(free blocks, free inodes) of a mounted file system, through ``ustat`` (x86-64): ``statfs`` is refused
        by the seccomp filter (a new tmpfs has a random fsid). None where there is no ``ustat``."""
        if platform.machine() != "x86_64":
            return None
        major, minor = os.major(device), os.minor(device)
        encoded = (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)
        buffer = (ctypes.c_long * 4)()  # struct ustat: int f_tfree; ino_t f_tinode; char f_fname[6], f_fpack[6]
        if self.lib.syscall(USTAT, ctypes.c_uint(encoded), buffer) != 0:
            return None
        return ctypes.c_int.from_buffer(buffer).value, buffer[1]

    def drop_proc(self) -> None:
        """Detach the jail's /proc (and the mounts under it) for good."""
        self._check(self.lib.umount2(b"/proc", MNT_DETACH), "umount /proc")

    def drop_tmp(self) -> None:
        """Detach the sample's tmpfs; the kernel frees it, whatever is in it, once no process holds it."""
        self._check(self.lib.umount2(b"/tmp", MNT_DETACH), "umount /tmp")

    def drop_capabilities(self) -> None:
        header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
        self._check(self.lib.capset(ctypes.byref(header), data), "capset")


class SampleServer:
    def __init__(self, config: dict[str, Any]):
        self.config = config
        # What the jail around us provides (sandbox.isolation.ServerProfile): we harden accordingly.
        self.namespaced: bool = config["namespaced"]
        self.drop_capabilities: bool = config["drop_capabilities"]
        self.pid = os.getpid()
        self.libc = Libc()
        self.seccomp = seccomp.SeccompFilter()
        try:  # raising one's own score, and lowering it back to 0, needs no privilege
            self.oom_score: int | None = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        except OSError:
            self.oom_score = None
        self.control = socket.socket(fileno=config["control_fd"])
        self.reader = framing.FrameReader(self.control.fileno(), binary=True)  # from the checker: trusted
        self.exit_status: dict[int, int] = {}
        self.clean_tmp: tuple | None = None  # how /tmp looks while no sample has changed it; None: mount anew
        self.tmp_mounts = 0  # tmpfs mounted on /tmp so far (the last one is still there)

    # -- setup -----------------------------------------------------------------------------------------
    def check_namespace(self) -> None:
        """Refuse namespace-wide kills unless we really are in our own PID namespace."""
        if self.namespaced and os.readlink("/proc/self/ns/pid") == self.config["host_pidns"]:
            raise SystemExit("sample server: expected a private PID namespace; refusing to start")

    def harden(self) -> None:
        self.libc.prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/<pid>/mem, no pidfd_getfd for same-uid samples
        self.libc.prctl(PR_SET_NO_NEW_PRIVS, 1)  # inherited: no sample gains privileges through execve
        if not self.namespaced:
            self.libc.prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans come back to us, to be killed
        else:
            self.libc.make_mounts_private()  # a sample's tmpfs never propagates anywhere
            self.libc.devices_read_only()
            if self.config.get("child_uid") is not None and self.seccomp.available:
                # Past this point the server needs no /proc (its own fds are open already; kill_namespace
                # needs none when every sample is its PID namespace's init): samples get none at all. No
                # host path (mountinfo), no counters, and no new /proc inode per lookup, which would let a
                # sample move the kernel's shared inode counter (get_next_ino) for the next one to read.
                self.libc.drop_proc()
            else:  # /proc with processes only (and, where samples have a uid of their own, only theirs)
                self.libc.hide_other_processes(os.getgid() if self.config.get("child_uid") is not None else None)
            self.seccomp.install()  # after the set-up mounts above; every sample inherits it
        # Limits the server can hold itself are set once here; its samples inherit them.
        for which, value in ((resource.RLIMIT_FSIZE, self.config["fsize_mb"] << 20),
                             (resource.RLIMIT_NOFILE, self.config["nofile"]), (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(which, (value, value))
        for name in channel.PRELOAD:  # imported once here, so that samples do not pay for them
            try:
                __import__(name)
            except ImportError:
                pass
        exec(WARM_UP, {})
        gc.collect()
        self.libc.lib.malloc_trim(0)  # the heap's free pages back to the kernel: fewer page-table entries per fork

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
        if self.clean_tmp is None or self._tmp_state() != self.clean_tmp:
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

    def run_sample(self, job: dict[str, Any], channel_fd: int) -> None:
        if self.namespaced:
            self.prepare_tmp()
            self.libc.new_pid_namespace()
        gc.freeze()  # objects made so far are shared with the child and never touched by its GC
        # Over the memory limit, the sample goes first: the child inherits the score we hold across the fork.
        self.set_oom_score(b"1000")
        pid = os.fork()
        if pid == 0:
            try:
                self.enter_jail(channel_fd, float(job["timeout_s"]))
            except BaseException:
                os._exit(EXIT_SETUP_FAILED)
            try:
                channel.serve_calls(channel_fd, job["candidate"], channel.program_namespace())
            finally:
                os._exit(0)
        self.set_oom_score(b"0")
        os.close(channel_fd)
        self.sample_pid = pid

    def set_oom_score(self, value: bytes) -> None:
        if self.oom_score is not None:
            try:
                os.pwrite(self.oom_score, value, 0)
            except OSError:
                pass

    def enter_jail(self, channel_fd: int, timeout_s: float) -> None:
        config = self.config
        os.setpgid(0, 0)  # its own process group, so kill(0, ...) reaches only the sample (setsid cost ~0.25 ms)
        if self.namespaced:
            workdir = "/tmp"
        else:
            workdir = os.path.join(config["scratch"], f"sample-{os.getpid()}")
            os.mkdir(workdir, 0o700)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, channel_fd)
        os.closerange(channel_fd + 1, 1 << 16)
        cpu = int(math.ceil(timeout_s)) + 1
        limits = {  # file size, open files and core dumps are the server's own limits already (harden())
            resource.RLIMIT_AS: (config["memory_mb"] << 20,) * 2,
            resource.RLIMIT_CPU: (cpu, cpu + 1),
            resource.RLIMIT_NPROC: (config["nproc"] + self.processes_of_sample_uid(),) * 2,
        }
        for which, value in limits.items():
            resource.setrlimit(which, value)
        uid = config.get("child_uid")
        if uid is not None:  # real root in the jail: a private uid of this worker's, which drops every capability
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        elif self.drop_capabilities:
            self.libc.drop_capabilities()
        os.chdir(workdir)
        if not self.namespaced:  # in the jail, bubblewrap already set them (and an update costs ~100 page faults)
            os.environ.update(HOME=workdir, TMPDIR=workdir)

    def processes_of_sample_uid(self) -> int:
        """Processes that already count against RLIMIT_NPROC for the uid the sample runs as."""
        if self.config.get("child_uid") is not None:
            return 0  # a uid used by this worker's samples alone
        uid, count = os.getuid(), 0
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    count += os.stat(f"/proc/{name}").st_uid == uid
                except OSError:
                    pass
        return count

    # -- after each sample -----------------------------------------------------------------------------
    def end_sample(self) -> dict[str, Any]:
        if not self.namespaced:
            self.kill_descendants()
        else:
            self.kill_namespace()
        status = self.exit_status.pop(self.sample_pid, None)
        self.exit_status.clear()
        if not self.namespaced:
            remove_tree(self.config["scratch"], keep_root=True)
        if status is None:
            return {"code": None, "signal": None}
        if os.WIFSIGNALED(status):
            return {"code": None, "signal": os.WTERMSIG(status)}
        return {"code": os.WEXITSTATUS(status), "signal": None}

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.exit_status[pid] = status

    def kill_namespace(self) -> None:
        """Kill every process the sample left. The sample is the init of its own PID namespace: once it is
        killed and reaped, the kernel has killed and reaped everything in that namespace. A last look at
        /proc kills anything else in the jail but its init and us (there should be nothing)."""
        try:
            os.kill(self.sample_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, self.exit_status[self.sample_pid] = os.waitpid(self.sample_pid, 0)
        except ChildProcessError:
            pass
        else:
            if self.seccomp.available:  # no sample process can have left its PID namespace: nothing else to find
                return
        for attempt in range(10_000):
            self.reap()
            others = [n for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, self.pid)]
            if not others:
                return
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if attempt:
                time.sleep(min(0.0002 * attempt, 0.01))
        raise SystemExit("sample server: could not clear the sandbox's processes")

    def kill_descendants(self) -> None:
        """Without a PID namespace: kill every process descended from us (we are their subreaper)."""
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
            found, todo = [], list(children.get(self.pid, ()))
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
        framing.send_frame(self.control, {"ready": True, "pid": self.pid, "uid": os.getuid(),
                                          "python": sys.version.split()[0], "namespaced": self.namespaced})
        while True:
            try:
                message = self.reader.read()
            except framing.ChannelClosed:
                return
            if message.get("op") == "run" and self.reader.fds:
                self.run_sample(message, self.reader.fds.pop(0))
            elif message.get("op") == "end":
                reply = self.end_sample()
                reply["id"] = message["id"]
                framing.send_frame(self.control, reply)
            else:
                raise SystemExit(f"sample server: unexpected message {str(message)[:80]}")


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
    server = SampleServer.__new__(SampleServer)
    server.config, server.pid, server.libc = config, os.getpid(), Libc()
    server.namespaced, server.drop_capabilities = config["namespaced"], config["drop_capabilities"]
    server.seccomp = seccomp.SeccompFilter()
    server.check_namespace()
    read_end, write_end = os.pipe()  # before the filter, which refuses pipes
    if server.namespaced:
        server.libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
        server.libc.make_mounts_private()
        server.seccomp.install()
        server.libc.mount_tmp(config["scratch_mb"])
        server.libc.new_pid_namespace()
    pid = os.fork()
    if pid == 0:
        try:
            server.enter_jail(write_end, 1.0)
            with open("/tmp/probe", "w") as handle:
                handle.write("ok")
            if server.namespaced:  # what the server may do, a sample may not (no capabilities)
                libc = server.libc
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
    server = SampleServer(config)
    server.check_namespace()
    server.harden()
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
