"""Memory sizes as users write them (``16GiB``, ``80GB``), parsed once into bytes.

Why a type: ``--gpu-memory`` used to be a string that the preflight parsed to check it and the planner parsed
again to use it. :class:`ByteSize` is parsed where the option is made and keeps both forms: the text the
user wrote (what records, resume keys and messages show, unchanged) and its bytes (what the planner reads).
A leaf module: it imports nothing from evalsuite but the error type.
"""

from __future__ import annotations

import re

from evalsuite.errors import EvalsuiteError

GiB = 1024**3
_UNITS = {
    "": 1, "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")


class ByteSize(str):
    """A size as written (a ``str``: JSON, equality and messages see the user's text) with its ``bytes``."""

    bytes: int

    def __new__(cls, text: str, what: str = "size") -> ByteSize:
        if isinstance(text, ByteSize):
            return text
        parsed = _parse_text(str(text), what)
        size = super().__new__(cls, text)
        size.bytes = parsed
        return size

    def __reduce__(self):  # pickles (torch.distributed's object gather) as the text it was written as
        return (ByteSize, (str(self),))


def parse_size(text: str | int | None, what: str = "size") -> int | None:
    """``"16GiB"`` -> 17179869184; ``None`` stays ``None``, an int is bytes already, a :class:`ByteSize` gives
    the bytes it was parsed to."""
    if text is None or isinstance(text, int):
        return text
    return ByteSize(text, what).bytes


def _parse_text(text: str, what: str) -> int:
    """A number without a unit is refused: ``--gpu-memory 16`` read as 16 bytes (or guessed as GiB or GB) would
    plan for the wrong card without a word. Bytes are written ``1024B``."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match and not unit:
        raise EvalsuiteError(f"{what}: {text!r} has no unit; write {match.group(1)}GiB (binary) or "
                             f"{match.group(1)}GB (decimal)")
    if not match or unit not in _UNITS:
        raise EvalsuiteError(f"{what}: cannot read {text!r} as a size; write it like 16GiB, 80GB or 512MiB")
    value = int(float(match.group(1)) * _UNITS[unit])
    if value <= 0:
        raise EvalsuiteError(f"{what}: must be positive, got {text!r}")
    return value


def format_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("TiB", 1024**4), ("GiB", GiB), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"
