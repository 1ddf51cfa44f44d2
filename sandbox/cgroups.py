"""Per-worker memory and process limits that hold across all of a sample's processes.

RLIMIT_AS bounds one process's address space, but not memory held in a memfd, a tmpfs file or a SysV
segment, nor the sum over several processes. A cgroup does: each worker's jail joins one with a memory
limit (swap included) and a process limit, so what the samples of one worker hold together is capped.

Modes, best first, recorded in the run record: ``cgroup2`` (``memory.max``, ``memory.swap.max``,
``pids.max`` in a child of our own cgroup), ``cgroup1`` (the ``memory`` and ``pids`` hierarchies),
``rlimits`` (no cgroup can be made here: per-process rlimits and a process cap only).

CPU: where the ``cpu`` controller is there (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), a worker's jail may use
one CPU's worth of time at most, however many processes a sample forks and wherever they run: a sample that
undid its pinning could otherwise take other workers' CPUs and time their honest samples out (the seccomp
filter also refuses ``sched_setaffinity``, ``sched_setscheduler``, ``setpriority`` and the like, so a
pinning holds even where no controller is). Kernel memory: socket buffers are charged to a v1 memory cgroup
only once ``memory.kmem.tcp.limit_in_bytes`` is set, so it is (samples cannot make sockets anyway: seccomp).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class WorkerCgroup:
    """The cgroup directories of one worker; a process joins by writing its pid to each ``procs`` file."""

    mode: str  # "cgroup2" or "cgroup1"
    directories: list[Path] = field(default_factory=list)
    cpu_limited: bool = False  # a CPU quota (one CPU) holds for the whole jail

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.directories]

    def remove(self) -> None:
        for directory in self.directories:
            for attempt in range(100):  # the kernel frees a cgroup a moment after its last process exits
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(min(0.001 * (attempt + 1), 0.02))


def _own_cgroup_paths() -> dict[str, str]:
    """controller (or "" for cgroup v2) -> our cgroup's path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


CPU_PERIOD_US = 100_000


def _make_v2(name: str, memory_bytes: int, pids: int, own: str) -> WorkerCgroup | None:
    if not (CGROUP_ROOT / "cgroup.controllers").exists():
        return None
    parent = CGROUP_ROOT / own.lstrip("/")
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            _write(parent / "cgroup.subtree_control", "+memory +pids")
        if "cpu" not in enabled:
            try:
                _write(parent / "cgroup.subtree_control", "+cpu")
            except OSError:
                pass
        directory = parent / name
        directory.mkdir()
    except OSError:
        return None
    group = WorkerCgroup("cgroup2", [directory])
    try:
        _write(directory / "memory.max", str(memory_bytes))
        if (directory / "memory.swap.max").exists():
            _write(directory / "memory.swap.max", "0")
        _write(directory / "pids.max", str(pids))
    except OSError:
        group.remove()
        return None
    try:
        _write(directory / "cpu.max", f"{CPU_PERIOD_US} {CPU_PERIOD_US}")
        group.cpu_limited = True
    except OSError:
        pass
    return group


def _make_v1(name: str, memory_bytes: int, pids: int, own: dict[str, str]) -> WorkerCgroup | None:
    memory_root, pids_root = CGROUP_ROOT / "memory", CGROUP_ROOT / "pids"
    if not (memory_root / "memory.limit_in_bytes").exists() or not (pids_root / "pids.max").exists() and not (
            pids_root / "cgroup.procs").exists():
        return None
    group = WorkerCgroup("cgroup1")
    try:
        memory = memory_root / own.get("memory", "/").lstrip("/") / name
        memory.mkdir()
        group.directories.append(memory)
        _write(memory / "memory.limit_in_bytes", str(memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
        process = pids_root / own.get("pids", "/").lstrip("/") / name
        process.mkdir()
        group.directories.append(process)
        _write(process / "pids.max", str(pids))
    except OSError:
        group.remove()
        return None
    try:  # socket buffers are charged to a v1 memory cgroup only once this is set
        _write(memory / "memory.kmem.tcp.limit_in_bytes", str(memory_bytes))
    except OSError:
        pass
    cpu_root = CGROUP_ROOT / "cpu"
    if (cpu_root / "cpu.cfs_quota_us").exists():
        cpu = cpu_root / own.get("cpu", "/").lstrip("/") / name
        try:
            cpu.mkdir()
            group.directories.append(cpu)
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(CPU_PERIOD_US))
            group.cpu_limited = True
        except OSError:
            pass
    return group


def make_worker_cgroup(name: str, memory_mb: int, pids: int) -> WorkerCgroup | None:
    """A fresh cgroup for one worker, or None where this host lets us make none."""
    own = _own_cgroup_paths()
    name = f"evalsuite-{os.getpid()}-{name}"
    if "" in own and len(own) == 1:
        return _make_v2(name, memory_mb << 20, pids, own[""])
    return _make_v1(name, memory_mb << 20, pids, own) or (_make_v2(name, memory_mb << 20, pids, own[""])
                                                         if "" in own else None)


def join_command(group: WorkerCgroup | None, command: list[str]) -> list[str]:
    """``command`` run so that it starts inside ``group``: a shell joins the cgroup, then execs it, so
    that nothing of the worker ever runs outside the limits."""
    if group is None:
        return command
    script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *group.procs_files, "--", *command]
