"""The jail: which isolation this host allows, and the bubblewrap command line that builds it.

The jail is an **allow-list**: an empty root on which only these are mounted, read-only --

* the Python interpreter, its standard library (with ``site-packages``/``dist-packages`` hidden under
  empty tmpfs) and the shared libraries they load (found with ``ldd``); no ``/etc/ld.so.cache`` (it lists
  every library of the host: the loader finds the bound ones in its default folders and the interpreter's
  run path);
* evalsuite's own ``sandbox/`` code, **copied** (not bound) into the jail's root at :data:`JAIL_CODE_DIR`, so
  that no mount in ``/proc/self/mountinfo`` names the checkout's path;
* a private ``/proc`` (own PID namespace) and a minimal ``/dev`` (null, zero, full, random, urandom);
* an empty ``/tmp`` mount point, on which every sample gets a fresh tmpfs of its own.

Nothing else of the host exists in it: no ``/home``, ``/root``, ``/srv``, ``/opt``, ``/etc``, ``/run``,
project folders or host sockets. The environment is emptied (``PATH``, ``HOME``, ``LANG``, ``TMPDIR`` only).
Own PID, network, IPC, UTS and cgroup namespaces. Modes, best first:

* as real root: the sample server keeps only the capabilities it needs (mount a sample's tmpfs, switch uid,
  kill the jail's processes); each sample runs under a uid of its worker's own with none
  (``ServerProfile(sample_uid=True)``).
* as a normal user: a user namespace; samples drop every capability, run as ``nobody`` and, like root's,
  cannot make namespaces of their own (seccomp) (``ServerProfile(drop_capabilities=True)``).

Where neither works, :mod:`sandbox.nojail` runs samples without isolation, only with an explicit opt-in.
This module is the ``bwrap`` implementation of :class:`sandbox.isolation.Jail`.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

from sandbox.isolation import Jail, ServerProfile
from sandbox.uids import SAMPLE_UID_BASE

SANDBOX_DIR = Path(__file__).resolve().parent
JAIL_CODE_DIR = "/evalsuite-sandbox"  # where sandbox/ is mounted inside the jail
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
ROOT_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_KILL")
USER_CAPABILITIES = ("CAP_SYS_ADMIN",)  # inside its own user namespace only: to mount each sample's tmpfs
SANDBOX_UID = 65534  # "nobody" inside a user namespace
PROBE_TIMEOUT_S = 20.0
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
FALLBACK_LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64")
# As real root, the host's ns_last_pid is bound here for the sample server alone: it opens it, then detaches the
# bind before any sample exists, and sets the jail's PID counter back before every sample (see sample_server).
PID_COUNTER_PATH = f"{JAIL_CODE_DIR}/pid_counter"
HOST_PID_COUNTER = "/proc/sys/kernel/ns_last_pid"
# Host data the peers' programs read through the standard library, read-only: the locale LANG names (without it,
# the common ``locale.setlocale(locale.LC_ALL, "")`` raised "unsupported locale setting" in every sample, where the
# peers run it) and the time-zone database (``zoneinfo.ZoneInfo("UTC")``). Public data, no host state.
HOST_DATA_DIRS = ("/usr/lib/locale/C.utf8", "/usr/share/zoneinfo")
FILES_CACHE_FORMAT = 4  # bump when the rules for what the jail binds change: older cached lists are then ignored
# Hidden under empty tmpfs inside the stdlib: installed packages, and what no code sample needs (CPython's own test
# suite, IDLE, the turtle demos, pip's wheels, the static library): ~4,400 files and ~170 MB less for a sample to
# read, and for the harness to keep in the page cache (warm_page_cache).
HIDDEN_STDLIB_DIRS = ("site-packages", "dist-packages", "test", "idlelib", "turtledemo", "ensurepip")


def open_code_files() -> dict[str, int]:
    """sandbox/*.py, each opened for bubblewrap to copy into the jail (``--file``): the caller passes the fds to
    bubblewrap and closes them after. Copied, not bound: a bind mount's source path (the checkout's) would
    show in the jail's ``/proc/self/mountinfo``."""
    fds = {}
    for path in sorted(SANDBOX_DIR.glob("*.py")):
        fds[path.name] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    return fds


def close_code_files(fds: dict[str, int]) -> None:
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass


@functools.cache
def jail_interpreter() -> str:
    """The base interpreter (not a virtual environment's launcher): it finds its stdlib next to itself."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    return os.path.realpath(base)


def cache_root() -> Path:
    """evalsuite's cache folder: ``$EVALSUITE_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalsuite`` or ~/.cache/evalsuite."""
    if os.environ.get("EVALSUITE_CACHE_DIR"):
        return Path(os.environ["EVALSUITE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "evalsuite"


def _files_fingerprint(paths: list[str], dynload: str) -> str:
    """Size and modification time of every bound file, the loader's cache and each extension module: any
    change (an upgraded library, a new module) makes a cached list of the jail's files stale."""
    modules = sorted(str(p) for p in Path(dynload).glob("*.so")) if dynload else []
    entries: list[tuple[str, int | None, int | None]] = []
    for path in [*paths, *modules]:
        try:
            info = os.stat(path)
            entries.append((path, info.st_size, info.st_mtime_ns))
        except OSError:
            entries.append((path, None, None))
    return hashlib.sha256(json.dumps(entries).encode("utf-8", "surrogateescape")).hexdigest()


@functools.cache
def interpreter_files() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(paths to bind read-only, directories to hide inside them) for the interpreter and its stdlib.

    Finding the shared libraries runs ``ldd`` over every extension module (~0.3 s); the answer is kept in the
    cache folder, checked against the files' sizes and times at each use."""
    name = hashlib.sha256(jail_interpreter().encode("utf-8", "surrogateescape")).hexdigest()[:16]
    cache = cache_root() / "sandbox" / f"jail-files-{name}.json"
    try:
        entry = json.loads(cache.read_text())
        if entry["format"] == FILES_CACHE_FORMAT and \
                entry["fingerprint"] == _files_fingerprint(entry["paths"], entry["dynload"]):
            return tuple(entry["paths"]), tuple(entry["hidden"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    paths, hidden = _find_interpreter_files()
    dynload = base_interpreter_paths()[2]
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        entry = {"format": FILES_CACHE_FORMAT, "paths": list(paths), "hidden": list(hidden), "dynload": dynload,
                 "fingerprint": _files_fingerprint(list(paths), dynload)}
        temporary = cache.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(entry))
        os.replace(temporary, cache)
    except OSError:
        pass
    return paths, hidden


class _CachestatRange(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [("nr_cache", ctypes.c_uint64), ("nr_dirty", ctypes.c_uint64), ("nr_writeback", ctypes.c_uint64),
                ("nr_evicted", ctypes.c_uint64), ("nr_recently_evicted", ctypes.c_uint64)]


CACHESTAT = {"x86_64": 451, "aarch64": 451}


def jail_readable_files() -> list[str]:
    """Every regular file a sample can read from the host's disks (the bound interpreter files)."""
    paths, hidden = interpreter_files()
    found = []
    for path in paths:
        if not os.path.isdir(path):
            found.append(path)
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in hidden]
            found.extend(os.path.join(root, name) for name in files)
    return found


def warm_page_cache() -> tuple[int, int]:
    """Read into the host's page cache every page of every file the jail can read, from the harness (so that
    the pages are charged to the harness's cgroup, not to a worker's, whose memory pressure would evict them).

    Which pages of a readable file are cached is state that every sample shares, across runs: one sample
    evicts or loads a page, a later one probes it. The seccomp filter refuses the calls that probe (mincore,
    cachestat, RWF_NOWAIT) or evict (fadvise, madvise COLD/PAGEOUT, ...); with every page resident, what is
    left to a sample (the time a read or a page fault takes) reads the same all-ones for every sample.
    Returns (files, bytes read): files already fully cached are only checked (``cachestat``, ~2 us each)."""
    libc = ctypes.CDLL(None, use_errno=True)
    number = CACHESTAT.get(platform.machine())
    buffer = bytearray(1 << 20)
    files = read = 0
    for path in jail_readable_files():
        try:
            # a bound library path may be a link: the jail sees its target
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                continue
            files += 1
            if number is not None:
                status, span = _Cachestat(), _CachestatRange(0, 0)
                if libc.syscall(number, fd, ctypes.byref(span), ctypes.byref(status), 0) == 0 and \
                        status.nr_cache >= (info.st_size + 4095) // 4096:
                    continue
            while True:
                count = os.readv(fd, [buffer])
                read += count
                if count <= 0:
                    break
        except OSError:
            pass
        finally:
            os.close(fd)
    return files, read


def _find_interpreter_files() -> tuple[tuple[str, ...], tuple[str, ...]]:
    paths = {jail_interpreter()}
    stdlib = set(base_interpreter_paths()[:2])
    paths.update(p for p in stdlib if os.path.isdir(p))
    hidden = sorted(os.path.join(p, name) for p in stdlib for name in os.listdir(p) if name in HIDDEN_STDLIB_DIRS
                    or name.startswith("config-") and os.path.isdir(os.path.join(p, name)))
    hidden = [h for h in hidden if os.path.isdir(h)]
    paths.update(shared_libraries())
    paths.update(p for p in HOST_DATA_DIRS if os.path.isdir(p) and not os.path.islink(p))
    return tuple(sorted(paths)), tuple(hidden)


@functools.cache
def base_interpreter_paths() -> tuple[str, str, str]:
    """(stdlib, platstdlib, extension-module folder) as the jail's interpreter itself reports them: inside a
    virtual environment, this process's ``sysconfig`` would name the environment's folders instead."""
    script = ("import sysconfig; p = sysconfig.get_paths(); "
              "print(p['stdlib']); print(p['platstdlib']); print(sysconfig.get_config_var('DESTSHARED') or '')")
    try:
        lines = subprocess.run([jail_interpreter(), "-I", "-S", "-c", script], capture_output=True, text=True,
                               timeout=60, env=ENVIRONMENT).stdout.splitlines()
        stdlib, platstdlib, dynload = lines[:3]
    except (OSError, subprocess.TimeoutExpired, ValueError):
        paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                                          "installed_base": sys.base_prefix,
                                          "installed_platbase": sys.base_exec_prefix})
        stdlib, platstdlib, dynload = paths["stdlib"], paths["platstdlib"], ""
    return stdlib, platstdlib, dynload


def _library_dirs() -> set[str]:
    return {d for d in FALLBACK_LIBRARY_DIRS if os.path.isdir(d) and not os.path.islink(d)}


def shared_libraries() -> set[str]:
    """The shared libraries the interpreter and its extension modules load (``ldd``), or, without ``ldd``,
    the system library folders."""
    ldd = shutil.which("ldd")
    dynload = base_interpreter_paths()[2]
    binaries = ([jail_interpreter()] + sorted(str(p) for p in Path(dynload).glob("*.so")) if dynload
                else [jail_interpreter()])
    if ldd is None:
        return _library_dirs()
    found: set[str] = set()
    for start in range(0, len(binaries), 64):
        try:
            output = subprocess.run([ldd, *binaries[start:start + 64]], capture_output=True, text=True,
                                    timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return _library_dirs()
        for match in re.finditer(r"(?:=>\s*)?(/\S+)\s+\(0x", output):
            found.add(match.group(1))
    return {p for p in found if os.path.exists(p)}


def bwrap_prefix(as_root: bool, code_fds: dict[str, int] | None = None) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, "--die-with-parent", "--new-session",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "sandbox"]  # not the host's name
    if not as_root:
        # No --disable-userns: it nests a second user namespace, in which the sample server could no longer make
        # each sample's mount and PID namespaces. Samples cannot make user namespaces anyway: seccomp refuses it.
        args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    args += ["--proc", "/proc", "--size", str(1 << 20), "--tmpfs", "/dev"]
    for device in DEVICES:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    args += ["--remount-ro", "/dev", "--dir", "/tmp"]
    paths, hidden = interpreter_files()
    made = {"/", "/dev", "/tmp", "/proc"}
    for path in paths:
        # Parents the bind needs are made world-traversable (0755) so the sample's uid can reach the files.
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", path, path]
    for directory in hidden:
        args += ["--size", str(1 << 16), "--tmpfs", directory, "--remount-ro", directory]
    args += ["--perms", "0755", "--dir", JAIL_CODE_DIR]
    if as_root and os.path.exists(HOST_PID_COUNTER):
        args += ["--bind", HOST_PID_COUNTER, PID_COUNTER_PATH]
    for name, fd in sorted((code_fds if code_fds is not None else {"sample_server.py": -1}).items()):
        args += ["--perms", "0444", "--file", str(fd), f"{JAIL_CODE_DIR}/{name}"]
    args += ["--remount-ro", "/"]
    args += ["--cap-drop", "ALL"]
    for capability in (ROOT_CAPABILITIES if as_root else USER_CAPABILITIES):
        args += ["--cap-add", capability]
    args += ["--clearenv"]
    for name, value in ENVIRONMENT.items():
        args += ["--setenv", name, value]
    return args + ["--chdir", "/", "--"]


ROOT_PROFILE = ServerProfile(namespaced=True, sample_uid=True, pid_counter=PID_COUNTER_PATH)
USER_PROFILE = ServerProfile(namespaced=True, drop_capabilities=True)


def probe_config(profile: ServerProfile) -> dict:
    """What a sample server needs to set up one sample's jail (see ``sample_server.probe``)."""
    return {**profile.to_config(), "scratch_mb": 16, "memory_mb": 1024, "fsize_mb": 16, "nofile": 64, "nproc": 16,
            "child_uid": SAMPLE_UID_BASE if profile.sample_uid else None,
            "host_pidns": os.readlink("/proc/self/ns/pid"), "control_fd": -1}


def _probe(command: list[str], pass_fds: tuple[int, ...] = ()) -> tuple[bool, str]:
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S,
                              env=ENVIRONMENT, pass_fds=pass_fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0 and proc.stdout.strip() == b"ok":
        return True, ""
    message = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
    return False, message[-1] if message else f"exit status {proc.returncode}"


class BwrapJail(Jail):
    """The allow-list bubblewrap jail (see the module docstring)."""

    name = "bwrap"

    @classmethod
    def find(cls) -> tuple[Jail | None, str]:
        """The jail, if a sample's jail can be set up here for real, else None and why not."""
        if shutil.which("bwrap") is None:
            return None, "bubblewrap is not installed (apt-get install bubblewrap)"
        as_root = os.geteuid() == 0
        profile = ROOT_PROFILE if as_root else USER_PROFILE
        code_fds = open_code_files()
        try:
            command = bwrap_prefix(as_root, code_fds) + [jail_interpreter(), "-I", "-S", "-B",
                                                         f"{JAIL_CODE_DIR}/sample_server.py", "--probe",
                                                         json.dumps(probe_config(profile))]
            ok, why = _probe(command, tuple(code_fds.values()))
        finally:
            close_code_files(code_fds)
        if not ok:
            return None, f"bubblewrap cannot build the jail here: {why}"
        detail = ("bubblewrap allow-list jail as root: samples run under a private uid without capabilities" if as_root
                  else "bubblewrap allow-list jail in a user namespace: samples run as nobody without capabilities")
        return cls(profile, detail), ""

    def command(self, config: dict, code_fds: dict[str, int]) -> list[str]:
        server = [jail_interpreter(), "-I", "-S", "-B", f"{JAIL_CODE_DIR}/sample_server.py", json.dumps(config)]
        return bwrap_prefix(as_root=self.profile.sample_uid, code_fds=code_fds) + server

    def code_files(self) -> dict[str, int]:
        return open_code_files()

    def prepare(self) -> tuple[int, int]:
        """Every page a sample can read, cached before any worker starts (see :func:`warm_page_cache`)."""
        return warm_page_cache()


JAIL = BwrapJail
