"""The public plugin contract (pluggy hook specifications).

A plugin is any module (or object) with functions named like these hooks and decorated with
``evalsuite.hookimpl``. Plugins are found three ways, like pytest's:

* built-in task modules ``evalsuite/tasks/builtin/task_*.py`` (installed as ``evalsuite.tasks.builtin``);
* ``--task-dir DIR``: every ``task_*.py`` module in DIR;
* installed packages exposing a module under the ``evalsuite.tasks`` entry-point group, e.g.::

      [project.entry-points."evalsuite.tasks"]
      mytasks = "mypackage.evalsuite_plugin"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from evalsuite.tasks.task import Task

PROJECT = "evalsuite"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def evalsuite_register_tasks() -> Iterable[Task]:
    """Return the tasks this plugin provides.

    Keep it cheap: build :class:`~evalsuite.tasks.task.Task` objects whose data loads lazily
    (override ``Task.load_problems``), since ``evalsuite tasks`` calls every plugin.
    """
    raise NotImplementedError  # a specification: pluggy calls the plugins' implementations, never this
