"""Which isolation the host allows, and the command line that starts a fork server inside it.

Modes, best first:

* ``bwrap`` -- bubblewrap: own PID, network, IPC and UTS namespaces; the host filesystem bound read-only;
  ``$HOME``, ``/home``, ``/root``, ``/run``, ``/tmp``, ``/var/tmp``, ``/mnt`` and ``/media`` replaced by
  empty read-only tmpfs (only the Python installation is bound back); a size-capped private ``/tmp`` as
  the scratch directory; a minimal read-only ``/dev``. As real root, bubblewrap keeps only the capabilities
  the fork server needs (setuid, kill, file cleanup) and every sample runs under a uid of its own with
  none; otherwise bubblewrap makes a user namespace and samples run as ``nobody`` inside it.
* ``none`` -- no namespaces (e.g. Ubuntu 24.04's AppArmor-restricted user namespaces, locked-down
  containers): only rlimits, a process-tree kill and the in-process guards. Used only with an explicit
  opt-in, because the sample can then read your files and reach the network.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SERVER_PATH = Path(__file__).resolve().parent / "forkserver.py"
HIDDEN_DIRS = ("/home", "/root", "/run", "/var/tmp", "/mnt", "/media")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SERVER_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
SAMPLE_UID_BASE = 0x70000000  # as real root, worker i's samples run as this + i: a uid no one else uses
SANDBOX_UID = 65534  # "nobody" inside a user namespace
PROBE_TIMEOUT_S = 20.0


class SandboxUnavailable(RuntimeError):
    """No namespace isolation is possible here and the caller did not opt in to running without it."""


JAIL_SCRATCH = "/tmp/scratch"  # inside the jail: the samples' working directory, wiped after each sample


@dataclass(frozen=True)
class Jail:
    """How to start one worker's fork server."""

    mode: str  # "bwrap" or "none"
    flavor: str  # what the fork server is told: "ns-root", "ns-user" or "none"
    detail: str  # one line for the run record

    def command(self, config_json: str, scratch_mb: int) -> list[str]:
        server = [sys.executable, "-I", "-B", str(SERVER_PATH), config_json]
        if self.mode == "bwrap":
            return bwrap_prefix(scratch_mb, as_root=self.flavor == "ns-root") + server
        return server


def _hidden_dirs() -> list[str]:
    dirs = set(HIDDEN_DIRS)
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if home and os.path.isabs(home) and home != "/":
        dirs.add(os.path.realpath(home))
        dirs.add(os.path.abspath(home))
    # /tmp is replaced as a whole by the scratch tmpfs, so nothing under it needs hiding on its own.
    existing = sorted(d for d in dirs if os.path.isdir(d) and not (d + "/").startswith("/tmp/"))
    # Drop dirs nested in another hidden dir: the outer tmpfs already hides them.
    return [d for d in existing if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in existing)]


def _paths_to_keep() -> list[str]:
    """The interpreter and this package must stay visible even when they live under a hidden dir."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable)),
             str(SERVER_PATH.parent)}
    resolved = set()
    for path in paths:
        for candidate in (os.path.abspath(path), os.path.realpath(path)):
            if os.path.isdir(candidate):
                resolved.add(candidate)
    return sorted(resolved)


def _bind_back(paths: list[str], hidden: list[str]) -> list[str]:
    """Bind ``paths`` that lie under a hidden dir back in, read-only, with traversable (0755) parents."""
    args: list[str] = []
    made: set[str] = set()
    bound: list[str] = []
    for path in sorted(paths):
        root = next((h for h in hidden if path.startswith(h.rstrip("/") + "/")), None)
        if root is None or any(path.startswith(b + "/") for b in bound):
            continue
        parts = Path(path).relative_to(root).parts
        for depth in range(1, len(parts)):
            parent = str(Path(root, *parts[:depth]))
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", path, path]
        bound.append(path)
    return args


def bwrap_prefix(scratch_mb: int, as_root: bool) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, "--die-with-parent", "--new-session",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--ro-bind", "/", "/", "--proc", "/proc",
            "--size", str(1 << 20), "--tmpfs", "/dev"]
    for device in DEVICES:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    args += ["--remount-ro", "/dev",
             "--perms", "1777", "--size", str(scratch_mb << 20), "--tmpfs", "/tmp"]
    hidden = _hidden_dirs()
    for directory in hidden:
        args += ["--perms", "0755", "--tmpfs", directory]
    args += _bind_back(_paths_to_keep(), hidden + ["/tmp"])
    # The samples' scratch is a folder of its own: wiping it after each sample must never touch the
    # interpreter or this package, which are bound back under /tmp when they live there (a CI clone in /tmp).
    args += ["--perms", "1777", "--dir", JAIL_SCRATCH]
    for directory in hidden:
        args += ["--remount-ro", directory]
    if as_root:
        args += ["--cap-drop", "ALL"]
        for capability in SERVER_CAPABILITIES:
            args += ["--cap-add", capability]
    else:
        args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    args += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", JAIL_SCRATCH,
             "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", JAIL_SCRATCH, "--chdir", JAIL_SCRATCH, "--"]
    return args


def _probe(command: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0 and proc.stdout.strip() == b"ok":
        return True, ""
    message = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
    return False, message[-1] if message else f"exit status {proc.returncode}"


@functools.lru_cache(maxsize=None)
def find_jail() -> tuple[Jail | None, str]:
    """The best isolation that actually works here (tried for real), or None with the reasons why not."""
    reasons = []
    if shutil.which("bwrap") is None:
        reasons.append("bubblewrap is not installed (apt-get install bubblewrap)")
    else:
        as_root = os.geteuid() == 0
        ok, why = _probe(bwrap_prefix(16, as_root) + [sys.executable, "-I", "-B", str(SERVER_PATH), "--probe"])
        if ok:
            flavor = "ns-root" if as_root else "ns-user"
            detail = ("bubblewrap as root: samples run under a private uid without capabilities" if as_root
                      else "bubblewrap with a user namespace: samples run as nobody")
            return Jail("bwrap", flavor, detail), ""
        reasons.append(f"bubblewrap cannot create its namespaces here: {why}")
    return None, "; ".join(reasons)


def detect_isolation() -> str:
    """``"bwrap"`` when bubblewrap works on this host, else ``"none"``."""
    jail, _ = find_jail()
    return jail.mode if jail else "none"


def unsandboxed_jail() -> Jail:
    return Jail("none", "none", "NO ISOLATION: rlimits, process-tree kill and in-process guards only")
