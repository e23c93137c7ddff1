"""Requirement extraction: a spec without AC blocks, written as numbered prose sections.

A numbered section — a heading that starts with ``N.M`` (``## 3.2 Verification``) or holds a
``§N.M`` reference (``## §3 Requirements``, ``### Fragments (§4.2-4.3)``) — contributes one
agent-judged criterion per sentence that says MUST, MUST NOT, SHALL, SHALL NOT, SHOULD,
SHOULD NOT, COULD or MAY (upper case, outside code spans, as in RFC 2119 and MoSCoW; a
keyword in a list like "MUST/SHOULD" or a formula like "= MUST +" is only mentioned).

- id: ``S<ref>-<words>`` (``S3.2-entries-append-only``): the section's number and the
  first words of the statement (without filler words), so an id stays the same when text
  above it changes, in its section or another; ``-2`` tells two alike apart;
  unnumbered sub-headings stay in the enclosing numbered section;
- check and description: the statement; category: the section heading; title: the
  statement, shortened; priority: the strongest keyword (MUST/SHALL > SHOULD > COULD/MAY);
- location: the line the statement starts on.

Also:

- an unnumbered heading named like "Requirements", "Functional Requirements",
  "Acceptance Criteria" or "Definition of Done" is a section too; its ids start with its
  initials (``FR-...``, ``DOD-...``);
- a checklist item (``- [ ] The parser accepts ...``, ticked or not) is one requirement,
  whatever its words, and so is a table row with a checkbox cell
  (``| Simple file creation | [ ] | [ ] |``): a definition of done lists what must hold;
- a paragraph that opens with a clause number (``§2.1 The exporter MUST ...``) is one
  criterion, ``S2.1``, whatever its sentences;
- a paragraph or list item that starts with the author's id (``**FR-0.3**: ...``,
  ``REQ-7: ...``, ``[INV-2] ...``) is one criterion with that id, whatever its sentences
  (under a "Requirements" / "Acceptance Criteria" heading even without a keyword: MUST);
- a statement that introduces a list (it ends with ":" or says "the following ...") takes
  the list under it, and each item of that list is a requirement of its own, read with the
  lead-in's words ("The system MUST send notifications for: password changes"); under an
  author's id or a checklist item the nested list stays part of that one requirement;
- under a heading named "Acceptance Criteria" or "Definition of Done", each list item,
  paragraph (not an introduction: "...:", "... below") and table row is one requirement whatever
  its words; inside a numbered section it takes that number;
- keyword definitions ("SHALL: indicates a mandatory requirement", the RFC 2119
  boilerplate) are not requirements;
- a requirement that states its own check ("`make lint` exits 0") is a bash criterion
  running it (``formats.stated_check``); any other is judged by an agent.

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
    Priority,
    SpecError,
    one_line,
    raise_all,
)
from pytest_acceptance.spec.formats.stated_check import StatedCheckError, choose
from pytest_acceptance.spec.formats.table import Table, read_table, table_criteria

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
    r"[^\w\s]*\s*"
    r"(?P<name>(?:[\w-]+\s+){0,3}?(?:requirements|acceptance criteria|definition of done))\b"
    r"[^\w]*(?:\(.*\))?\s*\Z",
    re.IGNORECASE,
)
_CHECKBOX = re.compile(r"\[[ xX]\]\s+(?=\S)")
# A heading over a list of criteria: each item is one, whatever its words.
_LISTED_HEADING = re.compile(
    r"\bacceptance\s+(?:criteria|scenarios)\b|\bdefinition of done\b", re.IGNORECASE
)
_CHECKBOX_CELL = re.compile(r"\[[ xX]\]\Z")
# Words an id leaves out: they make ids long and say nothing about the requirement.
_FILLER_WORDS = (
    "a an the of to in on for with and or is are be been it its this that by as at from must "
    "shall should could may can will not"
)
_FILLER = frozenset(_FILLER_WORDS.split())
ID_WORDS = 5
# "**FR-0.3**: ", "REQ-7 - ", "[INV-2] ", "`AC-1.2`: ", "2.4.1 " (two parts at least); an
# upper-case prefix, so that "Python-3.10 or newer" in a README is not an id.
_AUTHOR_ID = re.compile(
    r"(?:\[[ xX]\]\s+)?[\s*_`\\\[]*"
    r"(?P<id>[A-Z][A-Z0-9_]*-(?=[A-Za-z0-9_.-]*\d)[A-Za-z0-9_.-]*[A-Za-z0-9]"
    r"|\d{1,3}(?:\.\d{1,3})+"
    r"|[A-Z]{1,5}\d{1,4}(?:\.\d{1,3})*(?=[\]`*_]*\s*:))"  # "AC1: ...": with its colon only
    r"\\?[\]`*_]*\s*(?:[:)\u2014\u2013-]\s*)?[*_]*\s+(?=\S)"
)
# "SHALL: indicates ...", "MUST NOT — means ...", the RFC 2119 boilerplate: definitions.
_DEFINITION = re.compile(
    r"\W*(?:MUST|SHALL|SHOULD|COULD|MAY|REQUIRED|RECOMMENDED|OPTIONAL)(?:\s+NOT)?[\W_]*"
    r"(?::|\u2014|\u2013|-|=|\bmeans\b|\bindicates\b|\bis used\b|\bdenotes\b)"
)
# "§2.1 The exporter MUST ...": a paragraph the author numbered is one clause, id ``S2.1``.
_CLAUSE = re.compile(r"[\s*_]*§\s*(?P<ref>\d{1,3}(?:\.\d{1,3})*)\.?[*_]*\s+(?=\S)")
# A statement that introduces a list: "... MUST send notifications for:", "... MUST support
# the following channels".
_LEADS_A_LIST = re.compile(r"(?::[*_]*|\b(?:following\b[^.:;!?]{0,40}|as follows\W*))\Z")
# A paragraph that introduces the criteria under it, not one of them: "... when every item
# below holds.", "The export is done when:".
_INTRODUCTION = re.compile(r":[*_]*\s*\Z|\b(?:below|following|as follows)\b", re.IGNORECASE)
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


class ProseBlock(Protocol):
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
    listed: bool = False  # "Acceptance Criteria", "Definition of Done": every item is one


@dataclass
class _Draft:
    """A requirement before its id is final: ``ident`` is the author's or None."""

    section: _Section
    statement: str
    priority: Priority
    line: int
    ident: str | None = None
    raw: str = ""  # its inline markdown: where a stated check's backticks are
    clause: str = ""  # "S2.1" for a paragraph the author opened with "§2.1"


def extract_criteria(
    blocks: Iterable[ProseBlock], path: Path, plain: Callable[[str], str]
) -> list[Criterion]:
    """Criteria from the requirement sections of ``blocks``; ``plain`` strips inline markup."""
    drafts: list[_Draft] = []
    stack: list[_Section] = []
    lead: _Lead | None = None  # a statement that introduces the list under it
    for block in blocks:
        if block.kind == "item":
            continue  # its paragraph follows
        if lead and block.kind == "paragraph" and block.depth > lead.depth:
            drafts += lead.take(block, plain)
            continue
        lead = None
        if block.kind == "heading":
            _enter(stack, block)
        elif block.kind == "paragraph" and stack:
            found = list(_drafts(block, stack[-1], plain))
            drafts += found
            whole_item = (
                bool(found)
                and block.item
                and (found[-1].ident or _CHECKBOX.match(block.text) or stack[-1].listed)
            )
            if whole_item:
                lead = _Lead(found[-1], block.depth, split=False)
            elif found and _LEADS_A_LIST.search(block.text):
                # the list belongs to the paragraph's last sentence: split it only when
                # that sentence is the statement ("Reports MUST be signed. They cover:")
                last = block.text.rstrip().endswith(found[-1].raw.rstrip())
                lead = _Lead(found[-1], block.depth, split=last)
    return _criteria(drafts, path)


@dataclass
class _Lead:
    """A statement and the list under it. The list is part of the statement's text; when
    ``split`` (a MUST/SHOULD/COULD sentence ending in ":"), each of its items is also a
    requirement of its own, the lead-in's words before it: "The system MUST send
    notifications for: password changes". An author's id or a checklist item keeps its
    list as one requirement: the author chose the grain."""

    draft: _Draft
    depth: int
    split: bool
    last: _Draft | None = None  # the item taking the paragraphs nested deeper

    def take(self, block: ProseBlock, plain: Callable[[str], str]) -> list[_Draft]:
        text = plain(block.text)
        self.draft.statement += "\n- " + text
        if not self.split:
            return []
        if block.depth > self.depth + 1 or not block.item:
            if self.last is not None:
                self.last.statement += "\n- " + text
            return []
        lead = self.draft.statement.split("\n", 1)[0].rstrip().rstrip(":").rstrip()
        keywords = _KEYWORD.findall(_CODE_SPAN.sub("", block.text))
        priority = (
            min((PRIORITY[k] for k in keywords), key=STRENGTH.index)
            if keywords
            else self.draft.priority
        )
        self.last = _Draft(
            self.draft.section, f"{lead}: {text}", priority, block.line, raw=block.text
        )
        return [self.last]


def section_ref(heading: str) -> str | None:
    """``3.2`` for "3.2 Title", "§3.2 Title" or "Title (§3.2-3.4)"; None when unnumbered."""
    found = _LEADING_NUMBER.match(heading) or _SECTION_REF.search(heading)
    return found["ref"] if found else None


def _enter(stack: list[_Section], heading: ProseBlock) -> None:
    while stack and stack[-1].level >= heading.level:
        stack.pop()
    ref = section_ref(heading.text)
    listed = _LISTED_HEADING.search(heading.text) is not None
    if ref is not None:
        stack.append(_Section(f"S{ref}", heading.text, heading.level, listed, listed))
        return
    named = _REQUIREMENTS_HEADING.match(heading.text)
    if named is not None and listed and stack and stack[-1].ref.startswith("S"):
        # "#### Acceptance criteria" of "### 2. Export": the criteria of section 2
        enclosing = stack[-1].ref
        stack.append(_Section(enclosing, heading.text, heading.level, True, True))
    elif named is not None:
        words = re.split(r"[\s-]+", named["name"])
        initials = "".join(w[0] for w in words if w[:1].isascii() and w[:1].isalnum())
        ref = initials.upper() or "REQ"
        stack.append(_Section(ref, heading.text, heading.level, True, listed))


def _drafts(block: ProseBlock, section: _Section, plain: Callable[[str], str]) -> Iterator[_Draft]:
    table = read_table(block.text) if block.text.lstrip().startswith("|") else None
    if table is not None and section.listed:  # a table of criteria: each row is one
        for line, number, text in table_criteria(block, table):
            ident = number if not number or not number[0].isdigit() else f"{section.ref}-{number}"
            yield _Draft(section, plain(text), Priority.MUST, line, ident, raw=text)
        return
    if table is not None:
        yield from _table_drafts(block, table, section, plain)
        return
    author = _AUTHOR_ID.match(block.text)
    statements = list(_statements(block, plain))
    strongest = min((s[2] for s in statements), key=STRENGTH.index, default=Priority.MUST)
    if author is not None and (statements or section.named):
        raw = block.text[author.end() :]
        yield _Draft(section, plain(raw), strongest, block.line, author["id"], raw)
        return
    clause = _CLAUSE.match(block.text)
    if clause is not None and (statements or section.named):
        raw = block.text[clause.end() :]
        ref = f"S{clause['ref']}"
        yield _Draft(section, plain(raw), strongest, block.line, raw=raw, clause=ref)
        return
    checkbox = _CHECKBOX.match(block.text) if block.item else None
    if checkbox is not None:  # a checklist item: one requirement, whatever its words
        raw = block.text[checkbox.end() :]
        yield _Draft(section, plain(raw), strongest, block.line, raw=raw)
        return
    listed = section.listed and (block.item or not _INTRODUCTION.search(block.text))
    if listed:  # an item or a paragraph under "Acceptance Criteria": one criterion
        yield _Draft(section, plain(block.text), strongest, block.line, raw=block.text)
        return
    for line, statement, priority, raw in statements:
        yield _Draft(section, statement, priority, line, raw=raw)


def _table_drafts(
    block: ProseBlock, table: Table, section: _Section, plain: Callable[[str], str]
) -> Iterator[_Draft]:
    """A row with checkbox cells is one requirement: its first cell, for the columns of
    its boxes ("Simple file creation task (OpenAI, Anthropic)")."""
    for offset, cells in table.rows:
        boxes = [i for i, cell in enumerate(cells) if _CHECKBOX_CELL.match(cell)]
        if not boxes or not cells[0] or _CHECKBOX_CELL.match(cells[0]):
            continue
        columns = [table.header[i] for i in boxes if i < len(table.header) and table.header[i]]
        statement = plain(cells[0]) + (f" ({', '.join(columns)})" if columns else "")
        yield _Draft(section, statement, Priority.MUST, block.line + offset, raw=cells[0])


def _criteria(drafts: list[_Draft], path: Path) -> list[Criterion]:
    """Final ids: the author's, else ``<ref>-<words>`` (``-2``, ``-3`` for a repeat, and
    never an id the author used); an author's id used twice is an error."""
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
    criteria: list[Criterion] = []
    for draft in drafts:
        ident = draft.ident
        if ident is None:
            base = draft.clause or f"{draft.section.ref}-{id_words(draft.raw or draft.statement)}"
            ident, repeat = base, 1
            while ident.casefold() in taken:
                repeat += 1
                ident = f"{base}-{repeat}"
            taken[ident.casefold()] = draft.line
        try:
            criteria.append(_criterion(ident, draft, path))
        except StatedCheckError as error:
            errors.append(SpecError(path, draft.line, f"{ident} {error}"))
    raise_all(errors)
    return criteria


def id_words(statement: str) -> str:
    """The first words of a statement that say something, as an id part."""
    words = [w for w in re.findall(r"[a-z0-9]+", statement.lower()) if w not in _FILLER]
    return "-".join(words[:ID_WORDS])[:48].strip("-") or "requirement"


def _statements(
    block: ProseBlock, plain: Callable[[str], str]
) -> Iterator[tuple[int, str, Priority, str]]:
    for offset, sentence in _sentences(block.text):
        keywords = _KEYWORD.findall(_CODE_SPAN.sub("", sentence))
        if not keywords:
            continue
        statement = plain(sentence)
        if statement and not _DEFINITION.match(statement) and not _BOILERPLATE.search(statement):
            line = block.line + block.text.count("\n", 0, offset)
            priority = min((PRIORITY[k] for k in keywords), key=STRENGTH.index)
            yield line, statement, priority, sentence


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


def _criterion(ident: str, draft: _Draft, path: Path) -> Criterion:
    """Raises ``StatedCheckError`` for a "Deterministic gate." without a command."""
    choice = choose([draft.raw or draft.statement])
    section, statement = draft.section, draft.statement
    return Criterion(
        id=ident,
        title=one_line(statement, TITLE_LIMIT),
        method=choice.method,
        location=Location(path, draft.line),
        verification_line=draft.line,
        description=f"Requirement of section {section.title}: {statement}",
        category=section.title,
        command=choice.command,
        pass_condition=choice.pass_condition,
        checks=(statement,),
        priority=draft.priority,
        how=choice.how,
    )
