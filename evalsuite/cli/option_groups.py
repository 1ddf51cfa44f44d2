"""argparse groups generated from option dataclasses (vLLM-style): one flag definition, its default shown.

Each field declared with :func:`evalsuite.flags.flag` becomes one flag; :func:`add_options` adds them to a
parser or group and :func:`options_from_args` builds the dataclass back from the parsed arguments, applying
each flag's conversion and check. ``only`` picks the fields a command takes (``models`` reads no placement).
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

from evalsuite.errors import EvalsuiteError
from evalsuite.flags import Flag, flag_of

T = TypeVar("T")


def _flag_fields(cls: type, only: Iterable[str] | None) -> list[tuple[dataclasses.Field, Flag]]:
    wanted = None if only is None else set(only)
    chosen = [(f, flag) for f in dataclasses.fields(cls) if (flag := flag_of(f)) is not None
              and (wanted is None or f.name in wanted)]
    if wanted is not None and wanted - {f.name for f, _ in chosen}:
        raise ValueError(f"{cls.__name__} has no flag field(s) {sorted(wanted - {f.name for f, _ in chosen})}")
    return chosen


def _value_type(cls: type, name: str) -> type:
    hint = typing.get_type_hints(cls)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return args[0]


def shown_default(field: dataclasses.Field, how: Flag) -> str:
    if how.default_text is not None:
        return how.default_text
    if field.default is False:
        return "off"
    return "none" if field.default is None else f"{field.default:g}" if isinstance(field.default, float) \
        else str(field.default)


def add_options(parser: Any, cls: type, only: Iterable[str] | None = None) -> None:
    """Add ``cls``'s flags to ``parser`` (a parser or an argument group), each help ending in its default."""
    for field, how in _flag_fields(cls, only):
        kind = _value_type(cls, field.name)
        names = [how.option(field.name), *how.aliases]
        text = f"{how.help} (default: {shown_default(field, how)})"
        if kind is bool:
            parser.add_argument(*names, dest=how.dest(field.name), action="store_true", help=text)
            continue
        choices = None if how.choices is None else [*how.unset, *how.choices]
        parser.add_argument(*names, dest=how.dest(field.name), type=kind if kind in (int, float) else str,
                            default=None, choices=choices, metavar=how.metavar, help=text)


def options_from_args(cls: type[T], args: argparse.Namespace, only: Iterable[str] | None = None,
                      **others: Any) -> T:
    """``cls`` from the parsed flags (a flag not given keeps the field's default), checked, plus ``others``."""
    values: dict[str, Any] = {}
    for field, how in _flag_fields(cls, only):
        given = getattr(args, how.dest(field.name), None)
        if given is None or given is False or given in how.unset:
            continue
        if how.convert is not None:
            given = how.convert(given)
        if how.check is not None and not how.check(given):
            raise EvalsuiteError(f"{how.option(field.name)} must {how.must}, got {given}")
        values[field.name] = given
    return cls(**values, **others)
