"""How text evalsuite did not write is shown: completions, a sample's error message, samples-file fields, model
names, task ids. The one place that decides which code points are dangerous to show and what replaces them.

Why: such text can hold what a reader cannot see or what rewrites its surroundings. Bidi controls (U+202E, U+2066...)
make a program read differently from what ran; zero-width and other default-ignorable characters hide code;
C0/C1 controls (``ESC [``) drive a terminal; U+2028/U+2029 break lines where a viewer does not expect; a lone
surrogate (valid in JSON as ``"\\ud800"``) cannot be encoded as UTF-8 at all, so a writer raises on it.

What is stored and what is shown:

* Code that runs is never altered here; the sandbox gets it byte-exact. A sample whose code holds a lone surrogate
  cannot be stored (results are UTF-8) and is refused when read (:func:`first_lone_surrogate`).
* :func:`storable` replaces lone surrogates, and only them, by their visible escape: for fields that are only
  shown (a raw output, a finish reason, a name), so that what is kept in memory is what the files hold.
* :func:`visible` is for every display (pages, terminal): each dangerous code point becomes an escape such as
  ``\\u202e``; :func:`visible_parts` says which pieces are escapes, for a page to mark them.
* :func:`dumps` is JSON for every file and for ``--json``: lossless for valid text (a dangerous code point is
  written as a JSON ``\\uXXXX`` escape, so a terminal or editor showing the file sees no raw control, and a
  parser reads back the same string), and a lone surrogate is written as its visible escape (never as a lone
  surrogate, which strict parsers reject).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

# Every code point shown as an escape, as ranges: controls (Cc: C0, DEL, C1), format characters (Cf: bidi controls,
# zero-width characters, the BOM, the Arabic and Egyptian format marks...), surrogates (Cs), the line and paragraph
# separators (Zl, Zp), and the rest of Unicode's Default_Ignorable_Code_Point (drawn as nothing, so they can hide
# text: Hangul fillers, variation selectors, the combining grapheme joiner, Mongolian selectors, tags). Written
# out rather than computed from ``unicodedata`` at import (a scan of every code point takes seconds); the tests
# check that it covers those categories in this Python's Unicode data.
DANGEROUS_RANGES = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xD800, 0xDFFF),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
DANGEROUS_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
MULTILINE = "\n\t"  # kept as they are where text is shown as a block (a program, an error message)



def _class_of(ranges: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(chr(low)) + (f"-{re.escape(chr(high))}" if high > low else "")
                                    for low, high in ranges) + "]")


_DANGEROUS = _class_of(DANGEROUS_RANGES)
# In JSON text: json.dumps escapes C0 controls inside strings itself, and those outside are its own whitespace.
_DANGEROUS_IN_JSON = _class_of(DANGEROUS_RANGES[1:])


def is_dangerous(char: str) -> bool:
    """Whether ``char`` (one code point) must not reach a reader as itself."""
    return _DANGEROUS.fullmatch(char) is not None


def escape_of(char: str) -> str:
    """The visible stand-in for one code point, as Python writes it: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.cache
def _escaped_in(keep: str) -> re.Pattern[str]:
    """The dangerous code points but those in ``keep``: the ones shown as escapes. One pattern per ``keep``, so that
    a block of text (a program: a newline per line) is scanned without a Python step per kept character."""
    kept = sorted({ord(char) for char in keep})
    ranges = []
    for low, high in DANGEROUS_RANGES:
        for point in kept:
            if low <= point <= high:
                if point > low:
                    ranges.append((low, point - 1))
                low = point + 1
        if low <= high:
            ranges.append((low, high))
    return _class_of(tuple(ranges))


def visible(text: object, keep: str = "") -> str:
    """``text`` with every dangerous code point (and lone surrogate) replaced by its escape; the characters in
    ``keep`` (:data:`MULTILINE` for a block of text) stay. A single-line place (a table cell, a name) keeps none,
    so that no text starts a line of its own."""
    text = str(text)
    return _escaped_in(keep).sub(lambda m: escape_of(m.group()), text)


def visible_parts(text: object, keep: str = "") -> Iterator[tuple[str, str | None]]:
    """``visible(text, keep)`` in pieces: ``(piece, hidden)``, ``hidden`` the code point an escape stands for (None
    for plain text), so that a page can mark which ``\\u202e`` stands for a hidden code point and which was typed."""
    text, start = str(text), 0
    for match in _escaped_in(keep).finditer(text):
        if match.start() > start:
            yield text[start:match.start()], None
        yield escape_of(match.group()), match.group()
        start = match.end()
    if start < len(text):
        yield text[start:], None


def first_lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (it cannot be written as UTF-8), or None."""
    match = _SURROGATE.search(text)
    return match.start() if match else None


def storable(value: Any) -> Any:
    """``value`` (JSON-like data) with each string's lone surrogates, keys' too, replaced by their escapes: the
    form a display-only field is kept in, so that it can be written and read back unchanged."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: escape_of(m.group()), value)
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(storable(item) for item in value)
    return value


def visible_data(value: Any) -> Any:
    """``value`` (JSON-like data) with every string, keys too, made :func:`visible`: data a page's script shows."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_data(key): visible_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_data(item) for item in value]
    return value


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    point = ord(char)
    if 0xD800 <= point <= 0xDFFF:  # a lone surrogate: its visible escape, as text
        return "\\\\u" + f"{point:04x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    high, low = divmod(point - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def dumps(data: Any, **options: Any) -> str:
    """``json.dumps(data, ensure_ascii=False, **options)`` that is always valid UTF-8 and holds no raw dangerous
    code point (see the module's notes). JSON's structure is ASCII, so every dangerous code point past the C0
    controls (which json.dumps escapes itself) is inside a string, where a ``\\uXXXX`` escape means the same
    character."""
    return _DANGEROUS_IN_JSON.sub(_json_escape, json.dumps(data, ensure_ascii=False, **options))
