"""``evalsuite models``: list the registry's aliases and their generation fixes, or show how one name
(alias, local directory or hub id) resolves."""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("models", help="list model aliases and their generation fixes")
    parser.add_argument("name", nargs="?", help="show how this alias, directory or hub id resolves")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=main)


def _fixes(spec) -> str:
    parts = []
    if spec.pad_token:
        parts.append(f"pad={spec.pad_token}")
    if spec.bos != "auto":
        parts.append(f"bos={spec.bos}")
    if spec.strip_prompt_whitespace:
        parts.append("strip-prompt")
    if spec.extra_stop_sequences:
        parts.append("stops=" + ",".join(json.dumps(s) for s in spec.extra_stop_sequences))
    if spec.trust_remote_code:
        parts.append("remote-code")
    return " ".join(parts) or "-"


def main(args: argparse.Namespace) -> int:
    from evalsuite.registry import list_models, resolve_model

    specs = [resolve_model(args.name)] if args.name else list_models()
    if args.json:
        print(json.dumps([spec.to_dict() for spec in specs], indent=2))
        return 0
    header = ("model", "hub id / path", "family", "dtype", "fixes")
    rows = [(spec.name, spec.location, spec.family or "(from config.json)", spec.dtype or "auto", _fixes(spec))
            for spec in specs]
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    if args.name and specs[0].notes:
        print(f"\nnotes: {specs[0].notes}")
    return 0
