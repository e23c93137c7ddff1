"""Kiro specs: ``requirements.md`` (EARS acceptance criteria) and ``design.md`` properties.

- requirements.md: each numbered item under ``#### Acceptance Criteria`` (or a bold
  ``**Acceptance Criteria:**``) of ``### Requirement N`` (``### Requirement N: Title``), or
  of a numbered section (``### 3.1 Title``, ``### 2. Title``), is criterion ``N.M`` — the
  id Kiro's ``tasks.md`` refers to (``_Requirements: 1.2_``); an item that starts with its
  own id (``- **AC-001**: WHEN ...``) keeps it. Criteria written as paragraph lines
  (``1.1. WHEN ...``, ``2) IF ...``, bare EARS lines) are one a line, ``N.M`` as
  numbered or counted. Requirement N is a requirement of the spec
  with these criteria. EARS keywords (WHEN/IF/WHILE/WHERE ... SHALL) stay in the text the
  agent judges; the ``**User Story:**`` (or ``**Objective:**``) is context. A check the
  criterion states itself ("... `cmd` exits 0") is run (``stated_check``).
- design.md: each ``**Property N: Title**`` (or ``### Property N: Title``) with its text is
  criterion ``Property-N``; ``**Validates: Requirements 1.2, 3.4**`` is kept as context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.formats.common import Builder, add_listed, keyword_priority
from pytest_acceptance.spec.formats.document import Block, Document
from pytest_acceptance.spec.formats.table import read_table, table_criteria

_REQUIREMENT = re.compile(
    r"(?:Requirement\s+(?P<n>\d+(?:\.\d+)*)\b|(?P<section>\d{1,3}(?:\.\d{1,3})*)(?:\.|(?=\s))"
    r"|(?P<own>[A-Z][A-Z0-9]{0,9}-?\d{1,4}(?:\.\d{1,3})*)(?=\s*[:.\u2014\u2013-]))"
    r"\s*[:.\u2014\u2013-]?\s*(?P<t>.*)"
)

_ACCEPTANCE = re.compile(r"acceptance criteria\b", re.IGNORECASE)
_USER_STORY = re.compile(
    r"[*_]*(?:User Story(?:\s*\([^)]*\))?|Objective)[*_]*\s*:?[*_]*\s*:?\s*", re.IGNORECASE
)
_AS_A = re.compile(r"[*_]*As an?\b", re.IGNORECASE)  # "**As a** system **I want** ..."
_PROPERTY = re.compile(r"[*_]*Property\s+(?P<n>\d+)\s*[:.\u2014\u2013-]\s*(?P<rest>.*)", re.S)
_VALIDATES = re.compile(r"[*_]*Validates\s*:", re.IGNORECASE)
_DETECT_REQUIREMENT = re.compile(r"^#{2,4}[ \t]+Requirement[ \t]+\d+", re.MULTILINE)
# The numbered-section layout: "### 3.1 Title", a user story or objective, EARS SHALL items.
_DETECT_SECTION = re.compile(r"^#{2,4}[ \t]+\d{1,3}(?:\.\d{1,3})*\.?[ \t]+\S", re.MULTILINE)
# "### US-001: Title", "### REQ-2 — Title", "### R1.1: Title": a requirement by its own id.
_DETECT_OWN = re.compile(
    r"^#{2,4}[ \t]+[A-Z][A-Z0-9]{0,9}-?\d{1,4}(?:\.\d{1,3})*[ \t]*[:.\u2014\u2013-]", re.M
)
_DETECT_STORY = re.compile(r"^[*_]{2}(?:User Story|Objective)\b", re.MULTILINE | re.IGNORECASE)
_DETECT_EARS = re.compile(r"^[ \t]*(?:\d+[.)]|[-*])[ \t].*\bSHALL\b", re.MULTILINE | re.IGNORECASE)
_DETECT_CRITERIA = re.compile(r"^(?:#{3,5}[ \t]+|[*_]{2})Acceptance Criteria", re.M | re.I)
_CRITERIA_LABEL = re.compile(r"[*_]{1,3}Acceptance Criteria\b", re.IGNORECASE)
# A criterion written as a paragraph line: "1.1. WHEN ...", "2) IF ...", "**1.3** WHILE ...",
# or an EARS sentence with no number at all ("WHEN ... THE system SHALL ...").
_NUMBERED_LINE = re.compile(
    r"[*_]{0,2}(?P<n>\d{1,3}(?:\.\d{1,3})*)\.?[*_]{0,2}[.:)\u2014\u2013-]?[ \t]+(?P<rest>\S.*)",
    re.S,
)
_EARS_LINE = re.compile(r"[*_]{0,2}(?:WHEN|IF|WHILE|WHERE|THE|GIVEN)\b|.*\bSHALL\b", re.S)
_DETECT_PROPERTY = re.compile(r"^(?:#{2,5}[ \t]+|[ \t]*\*\*)Property[ \t]+\d+[ \t]*:", re.M)
_DETECT_VALIDATES = re.compile(r"Validates:?\**[ \t]*:?[ \t]*Requirements?", re.IGNORECASE)
REQUIREMENTS_SHAPE = (
    'Kiro numbered items under "#### Acceptance Criteria" of a "### Requirement 1" heading '
    '(or of a numbered section like "### 3.1 Title")'
)
DESIGN_SHAPE = 'Kiro properties like "**Property 1: Title**" with "**Validates: Requirements 1.1**"'


@dataclass
class _Requirement:
    number: str
    heading: str
    title: str
    line: int
    level: int
    context: str = ""
    in_criteria: bool = False
    items: int = 0  # criteria items so far: the number of an unnumbered one


class KiroRequirementsFormat:
    name = "kiro"

    def detect(self, text: str) -> float:
        if _DETECT_REQUIREMENT.search(text) and _DETECT_CRITERIA.search(text):
            return 0.9
        numbered = _DETECT_SECTION.search(text) and _DETECT_CRITERIA.search(text)
        if numbered and _DETECT_STORY.search(text) and _DETECT_EARS.search(text):
            return 0.9
        owned = _DETECT_OWN.search(text) and _DETECT_CRITERIA.search(text)
        return 0.8 if owned and _DETECT_EARS.search(text) else 0.0  # BMAD's AC1 headings win

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        blocks = document.blocks
        requirement: _Requirement | None = None
        for index, block in enumerate(blocks):
            if block.kind == "heading":
                requirement = self._heading(block, requirement)
            elif requirement is None:
                continue
            elif block.kind == "paragraph" and not block.item and _CRITERIA_LABEL.match(block.text):
                requirement.in_criteria = True  # "**Acceptance Criteria:**" instead of a heading
            elif block.kind == "paragraph" and not block.item and _USER_STORY.match(block.text):
                requirement.context = "User story: " + document.plain(
                    block.text[_USER_STORY.match(block.text).end() :]  # type: ignore[union-attr]
                )
            elif block.kind == "paragraph" and not block.item and _AS_A.match(block.text):
                requirement.context = requirement.context or "User story: " + document.plain(
                    block.text
                )
            elif block.kind == "item" and requirement.in_criteria and block.depth == 1:
                self._criterion(builder, blocks, index, requirement)
            elif block.kind == "paragraph" and requirement.in_criteria and block.depth == 0:
                self._paragraph(builder, block, requirement)
        return builder.spec(REQUIREMENTS_SHAPE)

    @staticmethod
    def _paragraph(builder: Builder, block: Block, requirement: _Requirement) -> None:
        """Criteria written as lines of a paragraph, not as a list: "1.1. WHEN ..." (the
        number as the author wrote it, or under the requirement's), or EARS sentences
        without a number, one a line; a line that opens neither continues the one above."""
        document = builder.document
        owner = builder.requirement(requirement.number, requirement.title, requirement.line)
        for line, number, text in _paragraph_criteria(block):
            requirement.items += 1
            if number is not None and (
                number.startswith(requirement.number + ".") or not number[0].isdigit()
            ):
                ident = number  # "2.1." under requirement 2, or "AC-3", as the author wrote
            else:  # "1." or a number copied from another requirement: the M of N.M
                last = number.rsplit(".", 1)[-1] if number else str(requirement.items)
                ident = f"{requirement.number}.{last}"
            statement = document.plain(text)
            builder.add(
                ident,
                line,
                title=statement,
                text=statement,
                context=requirement.context,
                category=requirement.heading,
                priority=keyword_priority(statement),
                prose=[text],
                requirement=owner,
            )

    @staticmethod
    def _criterion(
        builder: Builder, blocks: list[Block], index: int, requirement: _Requirement
    ) -> None:
        requirement.items += 1
        number = blocks[index].number or requirement.items
        owner = builder.requirement(requirement.number, requirement.title, requirement.line)
        add_listed(
            builder,
            blocks,
            index,
            fallback_id=f"{requirement.number}.{number}",
            context=requirement.context,
            category=requirement.heading,
            requirement=owner,
        )

    @staticmethod
    def _heading(block: Block, requirement: _Requirement | None) -> _Requirement | None:
        found = _REQUIREMENT.match(block.text)
        if found:
            number = found["n"] or found["section"] or found["own"]
            title = found["t"].strip() or block.text
            return _Requirement(number, block.text, title, block.line, block.level)
        if requirement is None or block.level <= requirement.level:
            return None
        requirement.in_criteria = _ACCEPTANCE.match(block.text) is not None
        return requirement


def _paragraph_criteria(block: Block) -> list[tuple[int, str | None, str]]:
    """``(line, number as written or None, text)`` of each criterion line of a paragraph;
    an unnumbered line ending in ":" before the first is an introduction ("The criteria
    below apply to guests:")."""
    table = read_table(block.text)
    if table is not None:
        return table_criteria(block, table)
    found: list[tuple[int, str | None, str]] = []
    for offset, raw in enumerate(block.text.split("\n")):
        line = raw.strip()
        numbered = _NUMBERED_LINE.match(line)
        if numbered is not None:
            found.append((block.line + offset, numbered["n"], numbered["rest"]))
        elif found and not _EARS_LINE.match(line):
            at, number, text = found[-1]
            found[-1] = (at, number, f"{text} {line}")
        elif line and not line.endswith(":"):
            found.append((block.line + offset, None, line))
    return found


@dataclass
class _Property:
    number: str
    title: str
    line: int
    level: int  # of its heading; 7 for a bold line (any heading ends it)
    category: str
    text: list[str] = field(default_factory=list)
    validates: str = ""
    owned: list[Block] = field(default_factory=list)


class KiroDesignFormat:
    name = "kiro-design"

    def detect(self, text: str) -> float:
        found = _DETECT_PROPERTY.search(text) and _DETECT_VALIDATES.search(text)
        return 0.85 if found else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        current: _Property | None = None
        category = ""
        for block in document.blocks:
            if block.kind == "heading":
                if current is not None and block.level <= current.level:
                    current = self._close(builder, current)
                found = _PROPERTY.match(block.text)
                if found:
                    current = self._close(builder, current)
                    current = _Property(
                        found["n"], found["rest"], block.line, block.level, category
                    )
                else:
                    category = block.text
            elif block.kind == "paragraph":
                current = self._paragraph(builder, block, current, category)
            elif current is not None:
                current.owned.append(block)
        self._close(builder, current)
        return builder.spec(DESIGN_SHAPE)

    def _paragraph(
        self, builder: Builder, block: Block, current: _Property | None, category: str
    ) -> _Property | None:
        document = builder.document
        found = _PROPERTY.match(block.text)
        if found:
            self._close(builder, current)
            title, _, rest = found["rest"].partition("\n")
            title = document.plain(title.strip().rstrip("*_").strip())
            current = _Property(found["n"], title, block.line, 7, category)
            if rest.strip():
                current.text.append(document.plain(rest))
            return current
        if current is None:
            return None
        if _VALIDATES.match(block.text):
            current.validates = document.plain(block.text)
        else:
            current.text.append(document.plain(block.text))
        return current

    @staticmethod
    def _close(builder: Builder, current: _Property | None) -> None:
        if current is None:
            return
        statement = " ".join(current.text) or current.title
        builder.add(
            f"Property-{current.number}",
            current.line,
            title=current.title,
            text=statement,
            context=current.validates,
            category=current.category,
            priority=keyword_priority(statement),
            owned=current.owned,
        )


REQUIREMENTS = KiroRequirementsFormat()
DESIGN = KiroDesignFormat()
