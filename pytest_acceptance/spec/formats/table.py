"""Pipe tables (``| ID | Requirement |``), which CommonMark reads as plain paragraphs: the
header cells and each row's cells with the row's line offset in the paragraph."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

_SEPARATOR = re.compile(r"\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*\Z")
_CELL_BORDER = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]  # (line offset in the paragraph, cells)

    def column(self, *names: str) -> int | None:
        """The index of the first header cell named one of ``names`` (case-insensitive)."""
        wanted = {name.casefold() for name in names}
        return next((i for i, cell in enumerate(self.header) if cell.casefold() in wanted), None)


def read_table(text: str) -> Table | None:
    """The table a paragraph holds, or None when it is not a pipe table."""
    lines = text.split("\n")  # line offsets count "\n" only, as spec lines do
    if len(lines) < 2 or not lines[0].lstrip().startswith("|") or not _SEPARATOR.match(lines[1]):
        return None
    rows = tuple(
        (offset, _cells(line))
        for offset, line in enumerate(lines[2:], 2)
        if line.lstrip().startswith("|")
    )
    return Table(_cells(lines[0]), rows)


# A row's first cell that numbers it: "1", "1.2", "AC-3", "AC1".
_ROW_NUMBER = re.compile(r"[*_`]*(?P<n>(?:[A-Z][A-Z0-9]*-?)?\d{1,4}(?:\.\d{1,3})*)\.?[*_`]*\Z")


class _Located(Protocol):
    line: int


def table_criteria(block: _Located, table: Table) -> list[tuple[int, str | None, str]]:
    """``(line, number or None, text)`` of each row of a table of criteria: the number its
    first cell gives (else None), the text of its other cells."""
    found: list[tuple[int, str | None, str]] = []
    for offset, cells in table.rows:
        number = _ROW_NUMBER.match(cells[0]) if cells else None
        rest = cells[1:] if number else cells
        text = " \u2014 ".join(cell for cell in rest if cell)
        if text:
            found.append((block.line + offset, number["n"] if number else None, text))
    return found


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return tuple(cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(inner))
