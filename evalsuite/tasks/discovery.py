"""Finds task plugins (built-in, ``--task-dir``, entry points) and builds the task registry."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy

from evalsuite import hookspecs
from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.task import Task

ENTRY_POINT_GROUP = "evalsuite.tasks"
TASK_MODULE_GLOB = "task_*.py"


@dataclass(frozen=True)
class RegisteredTask:
    task: Task
    # where it came from: "builtin:task_humaneval", "dir:/x/task_foo.py", "spec:/x/task_b.yaml", "entrypoint:pkg"
    plugin: str


def _import_file(path: Path):
    """Import one ``task_*.py`` file under a module name of its path and its contents: two dirs may share file
    names, and a file edited between two runs of one process (the Python API) is imported again, not served as
    its first version from ``sys.modules`` (red-team round 20). The bytes hashed are the bytes run."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise EvalsuiteError(f"cannot read task module {path}: {exc.strerror or exc}") from None
    digest = hashlib.sha1(str(path.resolve()).encode() + b"\0" + source).hexdigest()[:16]
    module_name = f"evalsuite_taskdir_{digest}_{path.stem}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise EvalsuiteError(f"cannot import task module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    except Exception as exc:  # a broken plugin must name itself
        del sys.modules[module_name]
        raise EvalsuiteError(f"task module {path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _builtin_task_modules() -> list[tuple[str, Any]]:
    import evalsuite.tasks.builtin

    found = []
    for path in sorted(Path(evalsuite.tasks.builtin.__file__).parent.glob(TASK_MODULE_GLOB)):
        found.append((f"builtin:{path.stem}", importlib.import_module(f"evalsuite.tasks.builtin.{path.stem}")))
    return found


def _task_dir_modules(task_dirs: Sequence[str | Path]) -> list[tuple[str, Any]]:
    found = []
    for task_dir in task_dirs:
        directory = Path(task_dir)
        if not directory.is_dir():
            raise EvalsuiteError(f"--task-dir {task_dir}: not a directory")
        for path in sorted(directory.glob(TASK_MODULE_GLOB)):
            found.append((f"dir:{path}", _import_file(path)))
    return found


def _task_dir_specs(task_dirs: Sequence[str | Path]) -> list[tuple[str, Any]]:
    """Declarative tasks: every ``task_*.yaml`` spec in the task dirs (see :mod:`evalsuite.tasks.specs`)."""
    from evalsuite.tasks.specs import spec_plugins

    return list(spec_plugins(Path(d) for d in task_dirs))


def _entry_point_modules() -> list[tuple[str, Any]]:
    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found.append((f"entrypoint:{ep.name}", ep.load()))
        except Exception as exc:
            raise EvalsuiteError(
                f"task plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}") from exc
    return found


def make_plugin_manager(task_dirs: Sequence[str | Path] = ()) -> tuple[pluggy.PluginManager, dict[str, str]]:
    """A plugin manager with every discovered plugin registered; also returns plugin name -> source."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    sources: dict[str, str] = {}
    found = _builtin_task_modules() + _task_dir_modules(task_dirs) + _task_dir_specs(task_dirs) + _entry_point_modules()
    for label, module in found:
        if pm.is_registered(module):
            continue
        name = pm.register(module, name=label)
        if name is not None:  # None: a plugin the manager was told to block
            sources[name] = label
    return pm, sources


class TaskRegistry:
    """All tasks by name, with where each came from."""

    def __init__(self, entries: Iterable[RegisteredTask]):
        self._entries: dict[str, RegisteredTask] = {}
        for entry in entries:
            other = self._entries.get(entry.task.name)
            if other is not None:
                raise EvalsuiteError(
                    f"task {entry.task.name!r} is defined twice: by {other.plugin} and by {entry.plugin}")
            self._entries[entry.task.name] = entry

    @classmethod
    def discover(cls, task_dirs: Sequence[str | Path] = ()) -> TaskRegistry:
        pm, _ = make_plugin_manager(task_dirs)
        entries = []
        for impl in pm.hook.evalsuite_register_tasks.get_hookimpls():
            tasks: Iterable[Any] = impl.function() or []  # type: ignore[assignment]  # a hook returns its own type
            for task in tasks:
                if not isinstance(task, Task):
                    raise EvalsuiteError(
                        f"plugin {impl.plugin_name} returned {type(task).__name__}, not an evalsuite Task")
                task.registered_by = impl.plugin_name
                entries.append(RegisteredTask(task=task, plugin=impl.plugin_name))
        return cls(entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[RegisteredTask]:
        return [self._entries[name] for name in self.names()]

    def get(self, name: str) -> Task:
        try:
            return self._entries[name].task
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise EvalsuiteError(f"unknown task {name!r}; known tasks: {known}") from None
