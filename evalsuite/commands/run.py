"""``evalsuite run``: placeholder, being written."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("run", help="generate, execute, score and report")
    parser.set_defaults(handler=lambda args: 0)
