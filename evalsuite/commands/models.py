"""``evalsuite models``: placeholder until its issue lands."""

from __future__ import annotations

import argparse

from evalsuite.errors import EvalsuiteError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("models", help="(not yet implemented)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    raise EvalsuiteError("evalsuite models is not implemented yet")
