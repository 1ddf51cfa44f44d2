"""A command-line flag declared once, on the option-dataclass field it fills.

Why: a flag written by hand in every command that takes it drifts (``--dtype`` had three sets of choices, the
``--timeout`` default was written three times). Here the field carries its flag, help, choices and check; the
argparse group is generated from the dataclass (:mod:`evalsuite.cli.option_groups`), so the default shown in
``--help`` is the dataclass default itself. A leaf module: it imports nothing from evalsuite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Flag:
    """How one option field appears on the command line."""

    help: str
    name: str | None = None  # "--request-timeout"; default: "--" + the field name with dashes
    aliases: tuple[str, ...] = ()  # older spellings, still accepted
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    default_text: str | None = None  # what the default means where the value alone does not say it (None, 8)
    unset: tuple[str, ...] = ()  # spellings that mean the field's default (``--dtype auto``)
    convert: Callable[[Any], Any] | None = None  # normalises a given value; raises EvalsuiteError on a bad one
    check: Callable[[Any], bool] | None = None  # a given value must pass it, else "FLAG must MUST, got VALUE"
    must: str = ""

    def option(self, field_name: str) -> str:
        return self.name or "--" + field_name.replace("_", "-")

    def dest(self, field_name: str) -> str:
        """The argparse attribute: the flag's own name, so ``args.timeout`` and the API's keywords stay as they were."""
        return self.option(field_name)[2:].replace("-", "_")


def flag(default: Any, help: str, **how: Any) -> Any:
    """A dataclass field with a default and its flag (see :class:`Flag`)."""
    return field(default=default, metadata={"flag": Flag(help, **how)})


def flag_of(dataclass_field: Any) -> Flag | None:
    return dataclass_field.metadata.get("flag")
