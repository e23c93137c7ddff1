"""Pipe tables (``| ID | Requirement |``), which CommonMark reads as plain paragraphs: the
header cells and each row's cells with the row's line offset in the paragraph."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return tuple(cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(inner))
