"""The reference format: ``#### AC-1: Title`` criteria with yaml verification blocks.

Structure comes from markdown-it-py block tokens and their line maps (``document``: a
heading inside a code fence is never a criterion); values come from ``yamlload`` (YAML 1.2
core typing).

Nothing is dropped in silence: a heading, bold line or list item that starts with an id
and is followed by a verification block is a criterion, and a verification block that
belongs to no criterion is an error. Every problem is a ``SpecError`` naming ``file:line``,
what is wrong and what to write instead; all problems of a spec are reported together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Location, Spec, SpecError, raise_all
from pytest_acceptance.spec.formats.document import Block, Document, item_left_above
from pytest_acceptance.spec.yamlload import (
    FieldError,
    YamlProblem,
    criterion_fields,
    key_lines,
    load_block,
)

# An id: letters, a dash, then letters/digits/"."/"_"/"-" with a digit somewhere ("AC-1",
# "FR-001", "INV-G1", "AC-US1-01", "US-3.2"); "UTF-8" is one, "Follow-up" is not. The tail
# takes anything up to a space or colon, so an unsafe id ("AC-1/2") is reported, not cut.
_ID = r"(?P<id>[A-Za-z][A-Za-z0-9_]*-(?=[^\s:]*\d)[^\s:]+)"
# "AC-1: Title", "REQ-12 — Title", "US-3a - Title": a criterion heading, block or not.
_CRITERION_HEADING = re.compile(_ID + r"(?:\s*:\s*|\s+[\u2014\u2013-]\s+)(?P<title>.*)\Z")
# "AC-2 Title", "**AC-4: Title**", "- AC-5 — Title": a criterion when a verification block
# follows it (an id alone, "### UTF-8", is not one).
_ID_LEAD = re.compile(_ID + r"(?:\s*[:\u2014\u2013]\s*|\s+-\s+|\s+)(?P<title>\S.*)\Z")
_MAYBE_ID_LEAD = re.compile(r"[\s*_`\[]*[A-Za-z][A-Za-z0-9_]*-")  # cheap test before ``plain``
_CATEGORY_HEADING = re.compile(r"category\s*:\s*(?P<name>.*)\Z", re.IGNORECASE)
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_METHOD_KEY = re.compile(r"^method\s*:", re.MULTILINE)
_VERIFICATION_KEY = re.compile(r"^(?:method|command|pass_condition|checks|agent)\s*:", re.M)
# "**Description:**", "**Description**:", "_Description:_", "Description:" (inline markdown).
_LABEL = re.compile(
    r"[*_]{0,3}\s*(?P<name>description|verification)\s*[*_]{0,3}\s*:\s*[*_]{0,3}", re.I
)
CRITERION_SHAPE = (
    'a heading like "#### AC-1: Title" followed by a fenced ```yaml block with '
    '"method: bash | subagent | manual"'
)


_YAML_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*ya?ml\b", re.MULTILINE | re.IGNORECASE)
_METHOD = re.compile(r"^method[ \t]*:", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+[`*_]*[A-Za-z][A-Za-z0-9_]*-\S*?\d\S*?[`*_]*[ \t]*:", re.M)


class ReferenceFormat:
    name = "acceptance"

    def detect(self, text: str) -> float:
        blocks = _METHOD.search(text) is not None and _YAML_FENCE.search(text) is not None
        headings = _HEADING.search(text) is not None
        return 1.0 if blocks and headings else 0.8 if blocks else 0.5 if headings else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        return parse_reference(text, path)


FORMAT = ReferenceFormat()


def parse_reference(text: str, path: Path) -> Spec:
    """The reference format: ``#### AC-1: Title`` criteria with yaml verification blocks."""
    document = Document(text)
    criteria = _Walker(path, document).walk(document.blocks)
    if not criteria:
        raise SpecError(
            path,
            1,
            f"no acceptance criteria found: a criterion is {CRITERION_SHAPE}; other formats "
            "(spec-kit, Kiro, OpenSpec, BMAD, task lists with Verify commands, MUST/SHOULD "
            'sentences under a numbered heading like "## 3.2 Title") are read when '
            "recognised (see --acceptance-format)",
        )
    return Spec(path=path, criteria=tuple(criteria), title=document.title)


def is_verification_block(block: Block) -> bool:
    """A yaml fence with a top-level ``method:``: a criterion's verification block."""
    return block.info in ("yaml", "yml") and _METHOD_KEY.search(block.text) is not None


@dataclass
class _Section:
    """A criterion (or a block that becomes one if a verification block follows it) and
    what of its section matters, before validation."""

    heading: Block
    id: str
    title: str
    level: int
    category: str
    description: str | None = None
    first_paragraph: str | None = None
    fence: Block | None = None
    untagged: Block | None = None  # a fence holding "method:" but not marked yaml
    rejected: bool = False  # its id is unusable (reported): checked, never a criterion


class _Walker:
    """Walks the blocks once, tracking the current category and criterion section.

    ``section`` is a criterion heading ("AC-1: Title"); ``pending`` is a heading, bold line
    or list item that starts with an id and becomes a criterion when a verification block
    follows it before the next heading. Problems are collected, not raised one by one.
    """

    def __init__(self, path: Path, document: Document) -> None:
        self.path = path
        self.document = document
        self.category = ""
        self.category_level = 0
        self.section: _Section | None = None
        self.pending: _Section | None = None
        self.criteria: list[Criterion] = []
        self.errors: list[SpecError] = []
        self.seen: dict[str, tuple[str, int]] = {}  # casefolded id -> (id, heading line)

    def walk(self, blocks: list[Block]) -> list[Criterion]:
        for index, block in enumerate(blocks):
            if block.kind == "heading":
                self._heading(block)
            elif block.kind == "fence":
                self._fence(block, item_left_above(blocks, index))
            elif block.kind == "paragraph":
                self._paragraph(block)
        self._close()
        raise_all(self.errors)
        return self.criteria

    def _heading(self, block: Block) -> None:
        category = _CATEGORY_HEADING.match(block.text)
        criterion = None if category else _CRITERION_HEADING.match(block.text)
        if self.section and (category or criterion or block.level <= self.section.level):
            self._close()
        self.pending = None
        if category:
            self.category, self.category_level = category["name"].strip(), block.level
        elif criterion:
            self._open(block, criterion["id"], criterion["title"].strip())
        else:
            if self.category and block.level <= self.category_level:
                self.category = ""
            lead = _ID_LEAD.match(block.text)
            if lead:
                self.pending = self._section(block, lead, block.level)

    def _paragraph(self, block: Block) -> None:
        if _MAYBE_ID_LEAD.match(block.text):
            lead = _ID_LEAD.match(self.document.plain(block.text))
            if lead and not (self.section and self.section.fence is None):
                # A bold line or list item ends at the next heading of any level.
                self.pending = self._section(block, lead, 7)
                return
        target = self.pending or self.section
        if target is not None:
            self._content(target, block)

    def _fence(self, block: Block, item_above: Block | None) -> None:
        section = self.section
        if section is not None and section.fence is None and block.info in ("yaml", "yml"):
            section.fence = block
        elif section is not None and section.fence is None and _METHOD_KEY.search(block.text):
            section.untagged = section.untagged or block  # named if no yaml block follows
        elif self.pending is not None and _VERIFICATION_KEY.search(block.text):
            self._close()
            self._promote(self.pending, block)
        elif is_verification_block(block):
            self._stray(block, item_above)

    def _stray(self, block: Block, item_above: Block | None) -> None:
        if self.section is None and item_above is not None:
            message = (
                f"this verification block belongs to no criterion: the list item above it "
                f'(line {item_above.line}) does not start with an id like "AC-1": start it '
                'with one ("- AC-1: Title"), or put the block under a heading like '
                '"#### AC-1: Title"'
            )
        elif self.section is not None:
            message = (
                f"a second verification block in {self.section.id} (its block is at line "
                f"{self.section.fence.line if self.section.fence else '?'}): a criterion has "
                'one; give this one its own heading like "#### AC-2: Title"'
            )
        else:
            message = (
                "this verification block belongs to no criterion: put it under a heading like "
                '"#### AC-1: Title" (a heading, bold line or list item that starts with an id)'
            )
        self.errors.append(SpecError(self.path, block.line, message))

    def _section(self, block: Block, lead: re.Match[str], level: int) -> _Section:
        return _Section(block, lead["id"], lead["title"].strip(), level, self.category)

    def _content(self, section: _Section, block: Block) -> None:
        label = _LABEL.match(block.text)
        if label is None:
            if section.first_paragraph is None and not block.hidden:
                section.first_paragraph = self.document.plain(block.text)
        elif label["name"].lower() == "description" and section.description is None:
            section.description = self.document.plain(block.text[label.end() :])

    def _open(self, block: Block, criterion_id: str, title: str) -> None:
        self._promote(_Section(block, criterion_id, title, block.level, self.category), None)

    def _promote(self, section: _Section, fence: Block | None) -> None:
        self.pending = None
        section.fence = fence
        self.section = section
        criterion_id, line = section.id, section.heading.line
        if not _SAFE_ID.match(criterion_id):
            self.errors.append(
                SpecError(
                    self.path,
                    line,
                    f"criterion id {criterion_id!r} cannot name a file: use only letters, "
                    'digits, ".", "_" and "-", starting with a letter or digit (no "/", "\\" '
                    "or spaces)",
                )
            )
            section.rejected = True
            return
        first = self.seen.get(criterion_id.casefold())
        if first is not None:
            self.errors.append(
                SpecError(
                    self.path,
                    line,
                    f"duplicate criterion id {criterion_id}: {first[0]} is already defined at "
                    f"line {first[1]} (ids are compared ignoring case); give each criterion "
                    "its own id",
                )
            )
            section.rejected = True
            return
        self.seen[criterion_id.casefold()] = (criterion_id, line)

    def _close(self) -> None:
        if self.section is not None:
            try:
                criterion = _criterion(self.section, self.path)
                if not self.section.rejected:
                    self.criteria.append(criterion)
            except SpecError as error:
                self.errors.append(error)
            self.section = None


def _criterion(section: _Section, path: Path) -> Criterion:
    fence = section.fence
    if fence is None and section.untagged is not None:
        info = section.untagged.info or "no language"
        raise SpecError(
            path,
            section.untagged.line,
            f"the block under {section.id} is not marked yaml ({info}): open it with ```yaml "
            "so it is read as the criterion's verification block",
        )
    if fence is None:
        raise SpecError(
            path,
            section.heading.line,
            f"{section.id} has no verification block: add a fenced yaml block with "
            '"method: bash | subagent | manual" after the heading (a **Verification:** line '
            "before it is optional; or, if this heading "
            "is not a criterion, reword it so it does not start with an id like AC-1)",
        )
    try:
        data = load_block(fence.text)
    except YamlProblem as exc:
        # libyaml may mark the end of the stream, one past an unclosed fence's last line.
        last = max(len(fence.text.splitlines()) - 1, 0)
        raise SpecError(
            path,
            fence.line + min(exc.line, last) + 1,
            f"malformed YAML in the verification block of {section.id}: {exc.problem}; "
            "fix the YAML (quote values that contain ': ' or ' #')",
        ) from None
    values = _validated(section, fence, data, path)
    return Criterion(
        id=section.id,
        title=section.title,
        location=Location(path, section.heading.line),
        verification_line=fence.line,
        description=section.description or section.first_paragraph or "",
        category=section.category,
        **values,
    )


def _validated(section: _Section, fence: Block, data: Any, path: Path) -> dict[str, Any]:
    try:
        return criterion_fields(data)
    except FieldError as exc:
        lines = key_lines(fence.text) if exc.key is not None else {}
        line = fence.line + lines[exc.key] + 1 if exc.key in lines else fence.line
        raise SpecError(path, line, f"{section.id}: {exc}") from None
