"""User stories with listed acceptance criteria (smart-ralph's ``requirements.md``).

- ``### US-1: Title`` is requirement ``US-1``; its "As a ... I want ... So that ..." is
  context. Under its ``**Acceptance Criteria:**`` label (or heading), each list item that
  starts with an id (``- AC-1.1: Given ..., When ..., Then ...``, ``- **AC-1.2**: ...``)
  is that criterion; an item without one is ``US-1-AC<n>``. A check the item states itself
  ("... `cmd` exits 0") is run (``stated_check``); otherwise an agent judges it.
- A ``Functional Requirements`` table row (``| FR-1 | text | Must | AC-1.1, AC-1.2 |``)
  is requirement ``FR-1``, verified by the criteria its acceptance-criteria column names.
- A ``Non-Functional Requirements`` table row (``| NFR-1 | Performance | p95 | < 200 ms |``)
  is criterion ``NFR-1``, judged by an agent.

Category: the story's heading (the table's heading for NFR rows); priority MUST, or the
row's Should/Could for an NFR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pytest_acceptance.model import Priority, Spec
from pytest_acceptance.spec.formats.common import Builder, add_listed
from pytest_acceptance.spec.formats.document import Block, Document
from pytest_acceptance.spec.formats.table import Table, read_table

_STORY = re.compile(r"(?P<id>US-?\d+(?:\.\d+)*)\s*[:.\u2014\u2013-]?\s*(?P<title>.*)", re.I)
_CRITERIA = re.compile(r"[*_]*\s*Acceptance Criteria\b", re.IGNORECASE)
_FUNCTIONAL = re.compile(r"(?<!non-)(?<!non )functional requirements", re.IGNORECASE)
_NON_FUNCTIONAL = re.compile(r"non-?\s?functional requirements", re.IGNORECASE)
_ROW_ID = re.compile(r"[*_`]*(?P<id>[A-Z][A-Z0-9]*-\d[\w.-]*?)[*_`]*\Z")
_LISTED_ID = re.compile(r"[A-Z][A-Z0-9]*-\d[\w.]*\w|\d+(?:\.\d+)+")
_PRIORITY = {"must": Priority.MUST, "should": Priority.SHOULD, "could": Priority.COULD}
_DETECT_STORY = re.compile(r"^#{2,4}[ \t]+US-?\d+", re.MULTILINE | re.IGNORECASE)
_DETECT_ITEM = re.compile(r"^[ \t]*[-*][ \t]+[*_`]*AC-\d+(?:\.\d+)*[*_`]*[ \t]*:", re.MULTILINE)
SHAPE = 'user stories like "### US-1: Title" with "- AC-1.1: ..." items under "Acceptance Criteria"'


@dataclass
class _Story:
    id: str
    heading: str
    level: int
    context: str = ""
    in_criteria: bool = False
    items: int = 0


class StoriesFormat:
    name = "stories"

    def detect(self, text: str) -> float:
        return 0.9 if _DETECT_STORY.search(text) and _DETECT_ITEM.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        blocks = document.blocks
        story: _Story | None = None
        section = ""
        for index, block in enumerate(blocks):
            if block.kind == "heading":
                story, section = self._heading(builder, block, story), block.text
            elif block.kind == "paragraph" and (table := read_table(block.text)) is not None:
                self._table(builder, block, table, section)
            elif story is None:
                continue
            elif block.kind == "paragraph" and not block.item:
                if _CRITERIA.match(block.text):
                    story.in_criteria = True
                elif not story.context and re.search(r"\bAs an?\b", block.text):
                    story.context = "User story: " + document.plain(block.text)
            elif block.kind == "item" and story.in_criteria and block.depth == 1:
                self._criterion(builder, blocks, index, story)
        return builder.spec(SHAPE)

    @staticmethod
    def _heading(builder: Builder, block: Block, story: _Story | None) -> _Story | None:
        found = _STORY.match(block.text)
        if found:
            ident = found["id"].upper()
            builder.requirement(ident, found["title"].strip() or block.text, block.line)
            return _Story(ident, block.text, block.level)
        if story is not None and block.level > story.level:
            story.in_criteria = _CRITERIA.match(block.text) is not None
            return story
        return None

    @staticmethod
    def _criterion(builder: Builder, blocks: list[Block], index: int, story: _Story) -> None:
        story.items += 1
        add_listed(
            builder,
            blocks,
            index,
            fallback_id=f"{story.id}-AC{story.items}",
            context=story.context,
            category=story.heading,
            requirement=story.id,
        )

    def _table(self, builder: Builder, block: Block, table: Table, section: str) -> None:
        if _NON_FUNCTIONAL.search(section):
            self._non_functional(builder, block, table, section)
        elif _FUNCTIONAL.search(section):
            self._functional(builder, block, table)

    @staticmethod
    def _functional(builder: Builder, block: Block, table: Table) -> None:
        """Each row a requirement verified by the criteria it lists."""
        text_at = table.column("requirement", "description")
        listed_at = table.column("acceptance criteria", "criteria", "ac", "verified by")
        known = {c.id.casefold(): c.id for c in builder.criteria}
        for offset, cells in table.rows:
            row_id = _ROW_ID.match(cells[0]) if cells else None
            if row_id is None:
                continue
            title = cells[text_at] if text_at is not None and text_at < len(cells) else ""
            listed = cells[listed_at] if listed_at is not None and listed_at < len(cells) else ""
            ids = [known[i.casefold()] for i in _LISTED_ID.findall(listed) if i.casefold() in known]
            line = block.line + offset
            builder.requirement(row_id["id"], builder.document.plain(title), line, ids)

    @staticmethod
    def _non_functional(builder: Builder, block: Block, table: Table, section: str) -> None:
        """Each row a criterion of its own, judged by an agent."""
        priority_at = table.column("priority")
        for offset, cells in table.rows:
            row_id = _ROW_ID.match(cells[0]) if cells else None
            if row_id is None:
                continue
            name = builder.document.plain(cells[1]) if len(cells) > 1 else row_id["id"]
            details = "; ".join(
                f"{table.header[i]}: {builder.document.plain(cell)}"
                for i, cell in enumerate(cells[2:], 2)
                if i != priority_at and cell and i < len(table.header)
            )
            stated = cells[priority_at].casefold() if priority_at is not None else ""
            line = block.line + offset
            ident = builder.add(
                row_id["id"],
                line,
                title=f"{name} ({details})" if details else name,
                text=f"{name}: {details}" if details else name,
                category=section,
                priority=_PRIORITY.get(stated, Priority.MUST),
                prose=[],
            )
            if ident is not None:
                builder.requirement(ident, name, line, [ident])


FORMAT = StoriesFormat()
