"""The isolation seam: what a jail is (:class:`Jail`), and the registry that picks one by the ``isolation`` option.

A new isolation (docker, gVisor, ...) is one module defining a :class:`Jail` subclass, plus one line in
:data:`JAIL_MODULES` (or a :func:`register` call). The pool and the sample server never test a jail's name: the
pool asks the jail for its command line, its files and its one-time preparation, and the sample server inside is
told only what the jail provides (:class:`ServerProfile`) and hardens itself accordingly.

Built in: ``bwrap`` (:mod:`sandbox.jail`, the allow-list bubblewrap jail) and ``none`` (:mod:`sandbox.nojail`,
rlimits and a process-tree kill only, with an explicit opt-in).
"""

from __future__ import annotations

import functools
import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

# The registry: one line per built-in jail module; each defines JAIL, a Jail subclass. The first that isolates is
# what isolation="auto" tries.
JAIL_MODULES = ("sandbox.jail", "sandbox.nojail")
AUTO = "auto"
FALLBACK = "none"  # what "auto" falls back to where nothing isolates, with allow_unsandboxed only


class SandboxUnavailable(RuntimeError):
    """No namespace isolation is possible here and the caller did not opt in to running without it."""


@dataclass(frozen=True)
class ServerProfile:
    """What the sample server is told about the jail around it (it can see nothing else of it).

    ``namespaced``: private PID and mount namespaces, in which the server mounts each sample's /tmp, gives each
    sample a PID namespace, hides /proc and installs the seccomp filter; without them it works in a scratch folder,
    reaps orphans as a subreaper and kills a sample's process tree. ``sample_uid``: samples run under a uid of
    their executor's own (the server is real root in the jail). ``drop_capabilities``: samples drop every capability
    (the server holds some inside a user namespace). ``pid_counter``: where the jail binds the host's
    ``ns_last_pid`` for the server, which then gives every sample the same pids ("": nowhere)."""

    namespaced: bool
    sample_uid: bool = False
    drop_capabilities: bool = False
    pid_counter: str = ""

    def to_config(self) -> dict[str, bool | str]:
        return {"namespaced": self.namespaced, "sample_uid": self.sample_uid,
                "drop_capabilities": self.drop_capabilities, "pid_counter": self.pid_counter}


class Jail(ABC):
    """One way to start a worker's sample server in isolation; an instance is a jail that works on this host."""

    name: ClassVar[str]  # the isolation option's value, recorded as the executor's mode
    isolates: ClassVar[bool] = True  # False: used only with allow_unsandboxed, and with a warning

    def __init__(self, profile: ServerProfile, detail: str):
        self.profile = profile
        self.detail = detail  # one line for the run record

    @classmethod
    @abstractmethod
    def find(cls) -> tuple[Jail | None, str]:
        """A jail if this isolation works here (tried for real), else None and one line saying why not."""

    @abstractmethod
    def command(self, config: dict, code_fds: dict[str, int]) -> list[str]:
        """The command line that starts the sample server with ``config`` (see :mod:`sandbox.sample_server`);
        ``code_fds`` (from :meth:`code_files`) are passed to that process."""

    def code_files(self) -> dict[str, int]:
        """Files the command needs open (closed by the caller once the process started); none by default."""
        return {}

    def prepare(self) -> tuple[int, int]:
        """Once per executor, before any worker starts; returns (files, bytes) warmed, (0, 0) by default."""
        return 0, 0

    @property
    def mode(self) -> str:
        return self.name


_REGISTERED: dict[str, type[Jail]] = {}


def register(kind: type[Jail]) -> type[Jail]:
    """Make ``kind`` choosable as ``isolation=kind.name`` (also usable as a class decorator)."""
    _REGISTERED[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


@functools.cache
def _load_builtin() -> None:
    for module in JAIL_MODULES:
        kind = importlib.import_module(module).JAIL
        _REGISTERED.setdefault(kind.name, kind)


def jail_kinds() -> dict[str, type[Jail]]:
    """Every registered jail by name, built-in first."""
    _load_builtin()
    return dict(_REGISTERED)


def isolation_names() -> tuple[str, ...]:
    """Every value the isolation option takes: ``"auto"`` and each registered jail's name."""
    return (AUTO, *jail_kinds())


def jail_kind(isolation: str) -> type[Jail]:
    """The jail named by the isolation option; ``"auto"``: the first registered one that isolates."""
    kinds = jail_kinds()
    if isolation == AUTO:
        return next(kind for kind in kinds.values() if kind.isolates)
    if isolation not in kinds:
        names = ", ".join(repr(name) for name in (AUTO, *kinds))
        raise ValueError(f"isolation must be one of {names}, got {isolation!r}")
    return kinds[isolation]


def isolation_problem(isolation: str = AUTO) -> str:
    """Why samples cannot be isolated here with ``isolation`` ("" when they can); the answer is cached."""
    kind = jail_kind(isolation)
    if not kind.isolates:
        return f"isolation={isolation!r} was requested"
    return _find(kind)[1]


def detect_isolation() -> str:
    """The jail ``isolation="auto"`` gets on this host (``"bwrap"``), else ``"none"``."""
    kind = jail_kind(AUTO)
    return kind.name if _find(kind)[0] is not None else "none"


@functools.cache
def _find(kind: type[Jail]) -> tuple[Jail | None, str]:
    return kind.find()


def find_jail(isolation: str) -> tuple[Jail | None, str]:
    """The jail ``isolation`` names, if it works here (cached per kind), else None and why not."""
    return _find(jail_kind(isolation))
