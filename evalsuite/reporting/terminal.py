"""The one formatter of every terminal table (run's results, the leaderboard, evaluate's summary, the models
and tasks lists): columns two spaces apart, each as wide as its widest cell, so that all tables read alike.

Cells hold names from users, plugins and files (a model name, a task id): each is shown through
:func:`evalsuite.untrusted.visible`, so no cell drives the terminal (``ESC [``), reorders a line (bidi controls)
or starts a line of its own."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalsuite.untrusted import visible

GAP = "  "


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (CJK) characters two, combining marks none; a model named
    "模型 α" misaligned every column after its own."""
    return sum(0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
               for char in text)


@dataclass(frozen=True)
class Table:
    """``rows`` of text cells under an optional ``header``.

    ``right``: the columns aligned right (numbers). ``rule``: a line of dashes under the header. ``pad_last``:
    False leaves the last column unpadded, for free text (no trailing blanks)."""

    rows: Sequence[Sequence[str]]
    header: Sequence[str] | None = None
    right: frozenset[int] = field(default_factory=frozenset)
    rule: bool = False
    pad_last: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", [[visible(cell) for cell in row] for row in self.rows])
        if self.header is not None:
            object.__setattr__(self, "header", [visible(cell) for cell in self.header])

    def widths(self) -> list[int]:
        lines = [*([self.header] if self.header else []), *self.rows]
        return [max(display_width(line[i]) for line in lines) for i in range(len(lines[0]))] if lines else []

    def offset(self, column: int) -> int:
        """Where ``column`` starts on a line: for text printed under it (a row's continuation lines)."""
        return sum(width + len(GAP) for width in self.widths()[:column])

    def _line(self, cells: Sequence[str], widths: Sequence[int]) -> str:
        last = len(cells) - 1
        return GAP.join(cell if i == last and not self.pad_last
                        else " " * (width - display_width(cell)) + cell if i in self.right
                        else cell + " " * (width - display_width(cell))
                        for i, (cell, width) in enumerate(zip(cells, widths)))

    def lines(self) -> list[str]:
        widths = self.widths()
        head = [self._line(self.header, widths)] if self.header else []
        if self.header and self.rule:
            head.append(GAP.join("-" * width for width in widths))
        return head + [self._line(row, widths) for row in self.rows]

    def render(self) -> str:
        return "\n".join(self.lines())


def key_values(pairs: Sequence[tuple[str, str]]) -> str:
    """``label  value`` lines, the labels padded to the longest: the form of a summary or a model's settings."""
    return Table(pairs, pad_last=False).render()
