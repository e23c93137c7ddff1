"""Requirement extraction: a spec without AC blocks, written in seed 002's style.

A numbered section — a heading that starts with ``N.M`` (``## 3.2 Verification``) or holds a
``§N.M`` reference (``## §3 Requirements``, ``### Fragments (§4.2-4.3)``) — contributes one
agent-judged criterion per sentence that says MUST, MUST NOT, SHALL, SHALL NOT, SHOULD,
SHOULD NOT, COULD or MAY (upper case, outside code spans, as in RFC 2119 and MoSCoW; a
keyword in a list like "MUST/SHOULD" or a formula like "= MUST +" is only mentioned).

- id: ``S<ref>-<n>`` (``S3.2-1``), numbered within its section, so ids do not move when
  another section changes; unnumbered sub-headings stay in the enclosing numbered section;
- check and description: the statement; category: the section heading; title: the
  statement, shortened; priority: the strongest keyword (MUST/SHALL > SHOULD > COULD/MAY);
- location: the line the statement starts on.

Text outside numbered sections, headings and code are never requirements. A spec whose
yaml blocks declare ``method:`` is an AC-style spec with broken headings: nothing is
extracted, so the parser's "no acceptance criteria" error tells the author what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_acceptance.model import Criterion, Location, Method, Priority

# "3.2 Title", "3.2. Title", "3) Title", "§3 Title"; at most 3 digits a part (not "2024 plan").
_LEADING_NUMBER = re.compile(r"§?\s*(?P<ref>\d{1,3}(?:\.\d{1,3})*)\.?(?:[)\s]|\Z)")
_SECTION_REF = re.compile(r"§\s*(?P<ref>\d{1,3}(?:\.\d{1,3})*)")
# A keyword listed ("MUST/SHOULD") or in a formula ("= MUST +") is mentioned, not required.
_KEYWORD = re.compile(r"(?<![/=])(?<!= )\b(?:MUST|SHALL|SHOULD|COULD|MAY)\b(?!\s?[/+=])")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# A sentence ends at . ! or ? (and closing marks) before white space and a capital/number.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=[\"'(\[*_`]*[A-Z0-9§])")
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "approx.", "incl.")
_METHOD_KEY = re.compile(r"^\s*method\s*:", re.MULTILINE)
_PRIORITY = {
    "MUST": Priority.MUST,
    "SHALL": Priority.MUST,
    "SHOULD": Priority.SHOULD,
    "COULD": Priority.COULD,
    "MAY": Priority.COULD,
}
_STRENGTH = (Priority.MUST, Priority.SHOULD, Priority.COULD)
TITLE_LIMIT = 100


class Block(Protocol):
    """What the parser knows about a block (parse._Block): kind heading|paragraph|fence."""

    kind: str
    line: int
    level: int
    text: str  # heading: plain text; paragraph: inline markdown; fence: its content


@dataclass(frozen=True)
class _Section:
    ref: str
    title: str
    level: int


def extract_criteria(
    blocks: Iterable[Block], path: Path, plain: Callable[[str], str]
) -> list[Criterion]:
    """Criteria from the numbered sections of ``blocks``; ``plain`` strips inline markup."""
    blocks = list(blocks)
    if any(b.kind == "fence" and _METHOD_KEY.search(b.text) for b in blocks):
        return []
    criteria: list[Criterion] = []
    counters: dict[str, int] = {}
    stack: list[_Section] = []
    for block in blocks:
        if block.kind == "heading":
            _enter(stack, block)
        elif block.kind == "paragraph" and stack:
            for line, statement, priority in _statements(block, plain):
                section = stack[-1]
                counters[section.ref] = counters.get(section.ref, 0) + 1
                ident = f"S{section.ref}-{counters[section.ref]}"
                criteria.append(_criterion(ident, section, statement, priority, path, line))
    return criteria


def section_ref(heading: str) -> str | None:
    """``3.2`` for "3.2 Title", "§3.2 Title" or "Title (§3.2-3.4)"; None when unnumbered."""
    found = _LEADING_NUMBER.match(heading) or _SECTION_REF.search(heading)
    return found["ref"] if found else None


def _enter(stack: list[_Section], heading: Block) -> None:
    while stack and stack[-1].level >= heading.level:
        stack.pop()
    ref = section_ref(heading.text)
    if ref is not None:
        stack.append(_Section(ref, heading.text, heading.level))


def _statements(block: Block, plain: Callable[[str], str]) -> Iterator[tuple[int, str, Priority]]:
    for offset, sentence in _sentences(block.text):
        keywords = _KEYWORD.findall(_CODE_SPAN.sub("", sentence))
        if not keywords:
            continue
        statement = plain(sentence)
        if statement:
            line = block.line + block.text.count("\n", 0, offset)
            priority = min((_PRIORITY[k] for k in keywords), key=_STRENGTH.index)
            yield line, statement, priority


def _sentences(text: str) -> Iterator[tuple[int, str]]:
    """(offset, sentence) pairs of a paragraph's inline markdown."""
    start = 0
    for boundary in _SENTENCE_END.finditer(text):
        before = text[start : boundary.start()]
        if before.rstrip("\"')]*_").endswith(_ABBREVIATIONS):
            continue
        yield start, before
        start = boundary.end()
    yield start, text[start:]


def _criterion(
    ident: str, section: _Section, statement: str, priority: Priority, path: Path, line: int
) -> Criterion:
    title = statement if len(statement) <= TITLE_LIMIT else statement[: TITLE_LIMIT - 1] + "…"
    return Criterion(
        id=ident,
        title=title,
        method=Method.SUBAGENT,
        location=Location(path, line),
        verification_line=line,
        description=f"Requirement of section {section.title}: {statement}",
        category=section.title,
        checks=(statement,),
        priority=priority,
    )
