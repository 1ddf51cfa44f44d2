"""Task discovery: built-ins, --task-dir modules and installed entry-point packages, through the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.discovery import TaskRegistry

TASK_MODULE = textwrap.dedent('''
    from evalsuite import hookimpl
    from evalsuite.tasks.task import Problem, Task

    @hookimpl
    def evalsuite_register_tasks():
        return [Task(name="{name}", description="a throwaway task", problems=[
            Problem(task_id="{name}/0", prompt="def triple(x):\\n", canonical_solution="    return 3 * x\\n",
                    test="def check(f):\\n    assert f(2) == 6\\n", entry_point="triple"),
        ])]
''')


def write_task_dir(tmp_path: Path, name: str = "dirtask") -> Path:
    task_dir = tmp_path / "mytasks"
    task_dir.mkdir()
    (task_dir / f"task_{name}.py").write_text(TASK_MODULE.format(name=name))
    (task_dir / "helper.py").write_text("raise RuntimeError('not a task module: must not be imported')\n")
    return task_dir


def test_builtin_tasks_are_found():
    registry = TaskRegistry.discover()
    assert {"humaneval", "humaneval-plus", "example"} <= set(registry.names())
    humaneval = registry.get("humaneval")
    assert len(humaneval.problems()) == 164
    assert humaneval.dataset_sha256 == "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"


def test_task_dir_module_is_discovered_by_convention(tmp_path, capsys):
    task_dir = write_task_dir(tmp_path)
    assert main(["tasks", "--task-dir", str(task_dir)]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("dirtask"))
    assert " 1 " in line and "dir:" in line


def test_duplicate_task_names_are_an_error(tmp_path):
    first = write_task_dir(tmp_path)
    second = tmp_path / "other"
    second.mkdir()
    (second / "task_dup.py").write_text(TASK_MODULE.format(name="dirtask"))
    with pytest.raises(EvalsuiteError, match="defined twice"):
        TaskRegistry.discover([first, second])


def test_unknown_task_and_missing_dir_give_one_clear_line(tmp_path, capsys):
    assert main(["tasks", "--task-dir", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
    with pytest.raises(EvalsuiteError, match="unknown task 'nope'; known tasks: .*humaneval"):
        TaskRegistry.discover().get("nope")


def test_broken_task_module_names_itself(tmp_path):
    task_dir = tmp_path / "broken"
    task_dir.mkdir()
    (task_dir / "task_broken.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(EvalsuiteError, match="task_broken.py failed to import: ModuleNotFoundError"):
        TaskRegistry.discover([task_dir])


def test_entry_point_plugin_package_is_installed_and_listed(tmp_path):
    """pip-install a throwaway package into a target folder and see its task in `evalsuite tasks`."""
    source = tmp_path / "src"
    (source / "evalsuite_demo_plugin").mkdir(parents=True)
    (source / "evalsuite_demo_plugin" / "__init__.py").write_text(TASK_MODULE.format(name="entrytask"))
    (source / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "evalsuite-demo-plugin"
        version = "0.0.1"
        [project.entry-points."evalsuite.tasks"]
        demo = "evalsuite_demo_plugin"
        [tool.setuptools]
        packages = ["evalsuite_demo_plugin"]
    '''))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)], check=True, capture_output=True)
    env = dict(os.environ, PYTHONPATH=str(target))
    listed = subprocess.run([sys.executable, "-m", "evalsuite", "tasks"], env=env, capture_output=True,
                            text=True, check=True).stdout
    line = next(l for l in listed.splitlines() if l.startswith("entrytask"))
    assert "entrypoint:demo" in line
    ran = subprocess.run([sys.executable, "-m", "evalsuite", "run", "--tasks", "entrytask", "--quiet",
                          "--output", str(tmp_path / "runs"), "--leaderboard-dir", str(tmp_path / "lb")],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "1.000" in ran.stdout
