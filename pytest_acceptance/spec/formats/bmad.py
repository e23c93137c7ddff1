"""BMAD stories: the ``## Acceptance Criteria`` of a story file.

- v4: each numbered item is criterion ``ACn`` (the number BMAD's tasks cite as ``(AC: 1)``).
- v6: each bold ``**AC1 — Title:**`` (``**AC1: Title**``, also as a list item) opens
  criterion ``AC1`` titled "Title"; its ``**Given**``/``**When**``/``**Then**`` bullets are
  the steps the agent checks. A heading ``### AC1: Title`` inside the section does too.

The ``**As a** ... **I want** ... **so that** ...`` story is context; category: the story
title. Priority MUST (a story's criteria are all required).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.formats.common import Builder
from pytest_acceptance.spec.formats.document import Block, Document
from pytest_acceptance.spec.formats.table import read_table, table_criteria

_SECTION = re.compile(r"acceptance criteria\b", re.IGNORECASE)
_STORY = re.compile(r"\bAs an?\b.*\bI want\b", re.IGNORECASE | re.S)
_BOLD_AC = re.compile(
    r"\*\*\s*AC[\s-]?(?P<n>\d+(?:\.\d+)?)\s*(?:[:\u2014\u2013-]\s*(?P<title>[^*]*?))?\s*:?\s*\*\*"
    r"\s*:?\s*(?P<rest>.*)",
    re.S,
)
# "### AC1: Reminder is queued" under the section: a criterion headed by its id.
_HEADING_AC = re.compile(
    r"\W*(?:AC|Acceptance Criterion)[\s-]?(?P<n>\d+(?:\.\d+)?)\b"
    r"\s*[:.\u2014\u2013-]?\s*(?P<title>.*)",
    re.IGNORECASE,
)
_OWN_AC = re.compile(
    r"[*_]*(?P<id>AC-?\d+(?:\.\d+)*)[*_]*\s*[:\u2014\u2013]\s*[*_]*\s*(?P<rest>.*)", re.S
)
_DETECT_SECTION = re.compile(r"^##[ \t]+Acceptance Criteria", re.MULTILINE | re.IGNORECASE)
_DETECT_STORY = re.compile(
    r"^(?:#[ \t]+Story\b|##[ \t]+(?:Story|Tasks[ \t]*/[ \t]*Subtasks|Dev Notes|Dev Agent Record)"
    r"\b)",
    re.MULTILINE | re.IGNORECASE,
)
_CHECKBOX = re.compile(r"\s*\[[ xX]\]\s*")


def _item_criterion(block: Block, current: _Criterion | None) -> bool:
    """A top-level list item is a criterion of its own (v4), unless it is a step of an
    open bold criterion (v6) or nested under the previous item."""
    if not block.item or block.depth != 1:
        return False
    return current is None or not current.bold


SHAPE = 'BMAD numbered items or "**AC1 — Title:**" blocks under "## Acceptance Criteria"'


@dataclass
class _Criterion:
    number: str
    line: int
    title: str
    text: str
    steps: list[str] = field(default_factory=list)
    owned: list[Block] = field(default_factory=list)
    depth: int = 0
    bold: bool = False  # opened by "**AC1 — Title:**": its bullets are its steps
    ident: str = ""  # the author's own id ("AC-1"), when the item starts with one


class BmadFormat:
    name = "bmad"

    def detect(self, text: str) -> float:
        return 0.85 if _DETECT_SECTION.search(text) and _DETECT_STORY.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        story, level = "", 0  # level of the Acceptance Criteria heading; 0 outside it
        current: _Criterion | None = None
        for block in document.blocks:
            if block.kind == "heading":
                self._close(builder, current, document.title, story)
                current = None
                if level and block.level <= level:
                    level = 0
                if _SECTION.match(block.text):
                    level = block.level
                elif level and (found := _HEADING_AC.match(block.text)):
                    title = found["title"].strip() or block.text
                    current = _Criterion(found["n"], block.line, title, "", bold=True)
                continue
            if not level:
                if block.kind == "paragraph" and not story:
                    plain = document.plain(block.text)
                    story = plain if _STORY.search(plain) else ""
                continue
            current = self._block(builder, block, current, document.title, story)
        self._close(builder, current, document.title, story)
        return builder.spec(SHAPE)

    def _block(
        self, builder: Builder, block: Block, current: _Criterion | None, title: str, story: str
    ) -> _Criterion | None:
        document = builder.document
        if block.kind != "paragraph":
            if current is not None and block.kind == "fence":
                current.owned.append(block)
            return current
        table = read_table(block.text) if not block.item else None
        if table is not None:  # a table of criteria: each row is one
            self._close(builder, current, title, story)
            for line, number, row in table_criteria(block, table):
                count = str(self._count(builder, None) + 1)
                ident = number if number and not number[0].isdigit() else f"AC{number or count}"
                statement = document.plain(row)
                found = _Criterion(number or count, line, statement, statement, ident=ident)
                self._close(builder, found, title, story)
            return None
        text = _CHECKBOX.sub("", block.text, count=1) if block.item else block.text
        bold = _BOLD_AC.match(text)
        if bold:
            self._close(builder, current, title, story)
            rest = document.plain(bold["rest"])
            name = document.plain(bold["title"] or "") or rest
            return _Criterion(bold["n"], block.line, name, rest, depth=block.depth, bold=True)
        if _item_criterion(block, current):
            number = block.number or str(self._count(builder, current) + 1)
            self._close(builder, current, title, story)
            own = _OWN_AC.match(text)  # "- [ ] AC-1: ...": the author's id, as written
            statement = document.plain(own["rest"] if own else text)
            found = _Criterion(number, block.line, statement, statement, depth=block.depth)
            found.ident = own["id"] if own else ""
            return found
        if current is not None:
            current.steps.append(document.plain(text))
        return current

    @staticmethod
    def _count(builder: Builder, current: _Criterion | None) -> int:
        return len(builder.criteria) + (current is not None)

    @staticmethod
    def _close(builder: Builder, current: _Criterion | None, title: str, story: str) -> None:
        if current is None:
            return
        builder.add(
            current.ident or f"AC{current.number}",
            current.line,
            title=current.title,
            text=current.text or current.title,
            steps=current.steps,
            context=story,
            category=title,
            owned=current.owned,
        )


FORMAT = BmadFormat()
