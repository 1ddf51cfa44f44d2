"""One way to extend evalsuite: a named :class:`Registry` per extension point.

Why one mechanism: generation backends, engine layouts and report views were each extended differently (an
if/elif, a dict keyed by strings, a tuple of module names). Each is now a ``Registry``: the package registers
its own entries where they are defined, and an installed package adds more through an entry point in the
group ``evalsuite.<point>`` (``[project.entry-points."evalsuite.backends"] mine = "my_pkg.backend:BACKEND"``),
read on the first lookup, so nothing of a plugin is imported by a command that does not need it. Tasks keep
their pluggy hook (:mod:`evalsuite.hookspecs`); the sandbox registers its jails itself (it imports nothing
from evalsuite). A leaf module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, TypeVar, overload

from evalsuite.errors import EvalsuiteError

T = TypeVar("T")
ENTRY_POINT_PREFIX = "evalsuite."


class Registry(Generic[T]):
    """Entries of one kind by name, in registration order; the package's first, then the entry points'."""

    def __init__(self, point: str, what: str):
        self.point = point  # entry point group: "evalsuite." + point
        self.what = what  # how errors name an entry: "backend", "engine layout"...
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = {}  # name -> "module:attribute", imported at the first lookup
        self._plugins_loaded = False
        self._from_plugins: list[str] = []

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None):
        """``registry.register("name", entry)``, or ``@registry.register("name")`` above a class or function.
        A name is registered once: a second entry under it is a mistake, refused."""
        def add(item: T) -> T:
            if name in self._entries and self._entries[name] is not item:
                raise EvalsuiteError(f"{self.what} {name!r} is registered twice")
            self._entries[name] = item
            return item

        return add if entry is None else add(entry)

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``module:attribute`` without importing it yet (a page module, a heavy backend): it is
        imported, in registration order, at the first lookup."""
        self._lazy[name] = target

    def get(self, name: str) -> T:
        entries = self._all()
        if name not in entries:
            raise EvalsuiteError(f"unknown {self.what} {name!r}; choose one of {', '.join(entries) or '(none)'}")
        return entries[name]

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._all().items()))

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def _all(self) -> dict[str, T]:
        for name, target in list(self._lazy.items()):
            module, _, attribute = target.partition(":")
            self.register(name, getattr(importlib.import_module(module), attribute))
            del self._lazy[name]
        if not self._plugins_loaded:
            self._plugins_loaded = True
            for point in metadata.entry_points(group=ENTRY_POINT_PREFIX + self.point):
                try:
                    entry = point.load()
                except Exception as exc:  # noqa: BLE001 - a broken plugin is named, in one line
                    raise EvalsuiteError(f"the {self.what} plugin {point.name!r} ({point.value}) cannot be "
                                         f"loaded: {type(exc).__name__}: {exc}") from None
                self.register(point.name, entry)
                self._from_plugins.append(point.name)
        return self._entries

    def forget_plugins(self) -> None:
        """Drop what entry points added and read them again at the next lookup (a plugin installed or removed
        while running: tests)."""
        for name in self._from_plugins:
            self._entries.pop(name, None)
        self._from_plugins, self._plugins_loaded = [], False
