"""``evalsuite tasks``: list the tasks found (built-in, --task-dir, entry points) with problem counts and sources."""

from __future__ import annotations

import argparse

from evalsuite.cli.options import add_task_source_args, load_registry
from evalsuite.errors import EvalsuiteError
from evalsuite.reporting.terminal import Table


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("tasks", help="list available tasks")
    add_task_source_args(parser)
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    registry = load_registry(args)
    rows = []
    for entry in registry.entries():
        problem = ""
        try:
            count = str(len(entry.task.problems()))
        except EvalsuiteError as exc:  # e.g. a hub dataset with no network and no local copy
            count, problem = "-", str(exc)
        rows.append((entry.task.name, count, entry.plugin, entry.task.description, entry.task.source, problem))
    table = Table([(name, count, f"{plugin}: {description}") for name, count, plugin, description, _, _ in rows],
                  ("task", "problems", "plugin / description"), right=frozenset({1}), pad_last=False)
    lines = table.lines()
    print(lines[0])
    indent = " " * table.offset(2)
    for line, (_, _, _, _, source, problem) in zip(lines[1:], rows):
        print(line)
        if source:
            print(f"{indent}source: {source}")
        if problem:
            print(f"{indent}no data: {problem}")
    return 0
