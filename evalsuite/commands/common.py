"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse

from evalsuite.errors import EvalsuiteError
from evalsuite.plugins import TaskRegistry


def add_task_source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task-dir", action="append", default=[], metavar="DIR",
                        help="also load task plugins from task_*.py modules in DIR (repeatable)")
    parser.add_argument("--task-data", action="append", default=[], metavar="TASK=PATH",
                        help="data file for a task that needs one, e.g. humaneval-plus=HumanEvalPlus.jsonl.gz")


def load_registry(args: argparse.Namespace) -> TaskRegistry:
    registry = TaskRegistry.discover(args.task_dir)
    for item in args.task_data:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise EvalsuiteError(f"--task-data expects TASK=PATH, got {item!r}")
        task = registry.get(name)
        if not hasattr(task, "data_path"):
            raise EvalsuiteError(f"task {name!r} takes no data file")
        from pathlib import Path

        if not Path(path).exists():
            raise EvalsuiteError(f"--task-data {name}={path}: no such file")
        task.data_path = Path(path)
    return registry


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise EvalsuiteError(f"--k expects comma-separated integers like 1,10,100; got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise EvalsuiteError(f"--k values must be positive integers; got {text!r}")
    return ks


def split_names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise EvalsuiteError("expected at least one name")
    return names
