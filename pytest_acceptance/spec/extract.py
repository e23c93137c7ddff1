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

Also:

- an unnumbered heading named like "Requirements", "Functional Requirements" or
  "Acceptance Criteria" is a section too; its ids are its initials (``FR-1``, ``AC-2``);
- a paragraph or list item that starts with the author's id (``**FR-0.3**: ...``,
  ``REQ-7: ...``, ``[INV-2] ...``) is one criterion with that id, whatever its sentences
  (under a "Requirements" / "Acceptance Criteria" heading even without a keyword: MUST);
- a statement that ends with ":" takes the list nested under it ("The scoped permissions
  MUST be:" and its items are one requirement);
- keyword definitions ("SHALL: indicates a mandatory requirement", the RFC 2119
  boilerplate) are not requirements.

Text outside such sections, headings and code are never requirements. Ids are unique:
generated numbers skip an id the author wrote, and an author's id used twice is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_acceptance.model import (
    Criterion,
    Location,
    Method,
    Priority,
    SpecError,
    one_line,
    raise_all,
)

# "3.2 Title", "3.2. Title", "3) Title", "§3 Title"; at most 3 digits a part (not "2024 plan").
_LEADING_NUMBER = re.compile(r"§?\s*(?P<ref>\d{1,3}(?:\.\d{1,3})*)\.?(?:[)\s]|\Z)")
_SECTION_REF = re.compile(r"§\s*(?P<ref>\d{1,3}(?:\.\d{1,3})*)")
# A keyword listed ("MUST/SHOULD") or in a formula ("= MUST +") is mentioned, not required.
_KEYWORD = re.compile(r"(?<![/=])(?<!= )\b(?:MUST|SHALL|SHOULD|COULD|MAY)\b(?!\s?[/+=])")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# A sentence ends at . ! or ? (and closing marks) before white space and a capital/number.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=[\"'(\[*_`]*[A-Z0-9§])")
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "approx.", "incl.")
# An unnumbered section whose heading names requirements: "Functional Requirements (v2)".
_REQUIREMENTS_HEADING = re.compile(
    r"(?P<name>(?:[\w-]+\s+){0,3}?(?:requirements|acceptance criteria))\b[^\w]*(?:\(.*\))?\s*\Z",
    re.IGNORECASE,
)
# "**FR-0.3**: ", "REQ-7 - ", "[INV-2] ", "`AC-1.2`: ", "2.4.1 " (two parts at least); an
# upper-case prefix, so that "Python-3.10 or newer" in a README is not an id.
_AUTHOR_ID = re.compile(
    r"(?:\[[ xX]\]\s+)?[\s*_`\\\[]*"
    r"(?P<id>[A-Z][A-Z0-9_]*-(?=[A-Za-z0-9_.-]*\d)[A-Za-z0-9_.-]*[A-Za-z0-9]"
    r"|\d{1,3}(?:\.\d{1,3})+)\\?[\]`*_]*\s*(?:[:)\u2014\u2013-]\s*)?[*_]*\s+(?=\S)"
)
# "SHALL: indicates ...", "MUST NOT — means ...", the RFC 2119 boilerplate: definitions.
_DEFINITION = re.compile(
    r"\W*(?:MUST|SHALL|SHOULD|COULD|MAY|REQUIRED|RECOMMENDED|OPTIONAL)(?:\s+NOT)?[\W_]*"
    r"(?::|\u2014|\u2013|-|=|\bmeans\b|\bindicates\b|\bis used\b|\bdenotes\b)"
)
_BOILERPLATE = re.compile(r"RFC\s*2119|RFC\s*8174|BCP\s*14|interpreted as described", re.I)
PRIORITY = {
    "MUST": Priority.MUST,
    "SHALL": Priority.MUST,
    "SHOULD": Priority.SHOULD,
    "COULD": Priority.COULD,
    "MAY": Priority.COULD,
}
STRENGTH = (Priority.MUST, Priority.SHOULD, Priority.COULD)
TITLE_LIMIT = 100


class Block(Protocol):
    """What the parser knows about a block (formats.document.Block)."""

    kind: str  # heading | paragraph | fence | item
    line: int
    level: int
    text: str  # heading: plain text; paragraph: inline markdown; fence: its content
    depth: int  # how many lists enclose it
    item: bool  # a paragraph that opens a list item


@dataclass(frozen=True)
class _Section:
    ref: str  # "S3.2" for a numbered section, "FR" for "Functional Requirements"
    title: str
    level: int
    named: bool = False  # "Requirements", "Acceptance Criteria": an id-led item is one


@dataclass
class _Draft:
    """A requirement before its id is final: ``ident`` is the author's or None."""

    section: _Section
    statement: str
    priority: Priority
    line: int
    ident: str | None = None


def extract_criteria(
    blocks: Iterable[Block], path: Path, plain: Callable[[str], str]
) -> list[Criterion]:
    """Criteria from the requirement sections of ``blocks``; ``plain`` strips inline markup."""
    drafts: list[_Draft] = []
    stack: list[_Section] = []
    absorbing: tuple[_Draft, int] | None = None  # a statement ending in ":" and its depth
    for block in blocks:
        if block.kind == "item":
            continue  # its paragraph follows
        if absorbing and block.kind == "paragraph" and block.depth > absorbing[1]:
            absorbing[0].statement += "\n- " + plain(block.text)
            continue
        absorbing = None
        if block.kind == "heading":
            _enter(stack, block)
        elif block.kind == "paragraph" and stack:
            found = list(_drafts(block, stack[-1], plain))
            drafts += found
            if found and (block.text.rstrip().endswith(":") or (block.item and found[-1].ident)):
                absorbing = (found[-1], block.depth)
    return _criteria(drafts, path)


def section_ref(heading: str) -> str | None:
    """``3.2`` for "3.2 Title", "§3.2 Title" or "Title (§3.2-3.4)"; None when unnumbered."""
    found = _LEADING_NUMBER.match(heading) or _SECTION_REF.search(heading)
    return found["ref"] if found else None


def _enter(stack: list[_Section], heading: Block) -> None:
    while stack and stack[-1].level >= heading.level:
        stack.pop()
    ref = section_ref(heading.text)
    if ref is not None:
        stack.append(_Section(f"S{ref}", heading.text, heading.level))
        return
    named = _REQUIREMENTS_HEADING.match(heading.text)
    if named is not None:
        words = re.split(r"[\s-]+", named["name"])
        initials = "".join(w[0] for w in words if w[:1].isascii() and w[:1].isalnum())
        stack.append(_Section(initials.upper() or "REQ", heading.text, heading.level, True))


def _drafts(block: Block, section: _Section, plain: Callable[[str], str]) -> Iterator[_Draft]:
    author = _AUTHOR_ID.match(block.text)
    statements = list(_statements(block, plain))
    if author is not None and (statements or section.named):
        statement = plain(block.text[author.end() :])
        priority = min((s[2] for s in statements), key=STRENGTH.index, default=Priority.MUST)
        yield _Draft(section, statement, priority, block.line, author["id"])
        return
    for line, statement, priority in statements:
        yield _Draft(section, statement, priority, line)


def _criteria(drafts: list[_Draft], path: Path) -> list[Criterion]:
    """Final ids: the author's, else ``<ref>-<n>`` numbered within the section, skipping
    numbers whose id the author used; an author's id used twice is an error."""
    taken: dict[str, int] = {}
    errors: list[SpecError] = []
    for draft in drafts:
        if draft.ident is None:
            continue
        first = taken.get(draft.ident.casefold())
        if first is not None:
            errors.append(
                SpecError(
                    path,
                    draft.line,
                    f"duplicate criterion id {draft.ident}: already used at line {first}; "
                    "give each requirement its own id",
                )
            )
        taken.setdefault(draft.ident.casefold(), draft.line)
    raise_all(errors)
    counters: dict[str, int] = {}
    criteria: list[Criterion] = []
    for draft in drafts:
        ident = draft.ident
        while ident is None or (draft.ident is None and ident.casefold() in taken):
            ref = draft.section.ref
            counters[ref] = counters.get(ref, 0) + 1
            ident = f"{ref}-{counters[ref]}"
        criteria.append(
            _criterion(ident, draft.section, draft.statement, draft.priority, path, draft.line)
        )
    return criteria


def _statements(block: Block, plain: Callable[[str], str]) -> Iterator[tuple[int, str, Priority]]:
    for offset, sentence in _sentences(block.text):
        keywords = _KEYWORD.findall(_CODE_SPAN.sub("", sentence))
        if not keywords:
            continue
        statement = plain(sentence)
        if statement and not _DEFINITION.match(statement) and not _BOILERPLATE.search(statement):
            line = block.line + block.text.count("\n", 0, offset)
            priority = min((PRIORITY[k] for k in keywords), key=STRENGTH.index)
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
    title = one_line(statement, TITLE_LIMIT)
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
