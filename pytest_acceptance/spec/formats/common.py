"""What every format parser shares: one ``Builder`` per spec that turns what an author wrote
(an id, a title, the text, scenario steps, a stated command or a yaml verification block)
into ``Criterion`` data, keeps ids unique and safe as file names, and collects every
problem so the author sees them all at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_acceptance.model import (
    Criterion,
    Location,
    Method,
    Priority,
    Requirement,
    Spec,
    SpecError,
    one_line,
    raise_all,
)
from pytest_acceptance.spec.extract import PRIORITY, STRENGTH
from pytest_acceptance.spec.formats.document import (
    NOT_INDENTED,
    Block,
    Document,
    children,
    item_left_above,
)

TITLE_LIMIT = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KEYWORD = re.compile(r"\b(MUST|SHALL|SHOULD|COULD|MAY)\b")
_CODE_SPAN = re.compile(r"(`+)(?P<code>(?:(?!\1).)+?)\1", re.DOTALL)
# "- AC-1.1: ...", "- **AC-001**: ...", "- [ ] AC-2.1 — ...": an item that names itself.
_OWN_ID = re.compile(
    r"(?:\[[ xX]\]\s+)?[*_`]*(?P<id>[A-Z][A-Z0-9]*-\d[\w.-]*?)[*_`]*\s*[:\u2014\u2013)-]\s*[*_]*\s*"
    r"(?P<rest>.*)",
    re.S,
)


# What an author heads a list of criteria with: "#### Acceptance Criteria", "### ✅ Acceptance
# Scenarios", a bold "**Acceptance Criteria:**" label.
CRITERIA_HEADING = re.compile(
    r"\W*acceptance\s+(?:criteria|scenarios)\b[^\w\u2192]*(?:\(.*\))?\s*\Z", re.IGNORECASE
)
_CRITERIA_LABEL = re.compile(
    r"[*_]{1,3}\s*acceptance\s+(?:criteria|scenarios)\b[^*_\n]*[*_]{1,3}\s*:?\s*(?:\n|\Z)",
    re.IGNORECASE,
)


def safe_id(raw: str) -> str:
    """An author's id as a file-safe id: ``US1/AC2`` -> ``US1-AC2``, spaces -> ``-``."""
    return _UNSAFE.sub("-", raw.strip()).strip("-._")


def keyword_priority(text: str, default: Priority = Priority.MUST) -> Priority:
    """The strongest RFC 2119 / MoSCoW keyword of ``text`` (MUST/SHALL > SHOULD > COULD/MAY)."""
    found = [PRIORITY[k] for k in _KEYWORD.findall(text)]
    return min(found, key=STRENGTH.index) if found else default


def matching_items(
    blocks: Sequence[Block], pattern: re.Pattern[str]
) -> Iterator[tuple[int, re.Match[str], str]]:
    """``(index, match, category)`` of each list item whose text matches ``pattern``;
    category: the text of the last heading above it."""
    category = ""
    for index, block in enumerate(blocks):
        if block.kind == "heading":
            category = block.text
        elif block.kind == "item" and (found := pattern.match(block.text)):
            yield index, found, category


def code_spans(markdown: str) -> list[str]:
    """The inline code spans of ``markdown``, in order, trimmed."""
    return [m["code"].strip() for m in _CODE_SPAN.finditer(markdown) if m["code"].strip()]


def nested_text(document: Document, blocks: Sequence[Block]) -> list[str]:
    """Paragraphs and list items under a criterion as plain lines, nested items indented."""
    lines: list[str] = []
    base = min((b.depth for b in blocks), default=0)
    for block in blocks:
        if block.kind == "paragraph":
            text = document.plain(block.text)
            if text:
                lines.append("  " * max(block.depth - base, 0) + text)
    return lines


def add_listed(
    builder: Builder,
    blocks: Sequence[Block],
    index: int,
    *,
    fallback_id: str,
    context: str,
    category: str,
    requirement: str,
) -> None:
    """A list item that is one acceptance criterion of ``requirement``: with its own id
    (``- **AC-001**: ...``) or ``fallback_id``; its nested paragraphs are steps, and a check
    it states itself is run."""
    document, block = builder.document, blocks[index]
    owned = children(blocks, index)
    own = _OWN_ID.match(block.text)
    raw = own["rest"] if own else block.text
    statement = document.plain(raw)
    paragraphs = [b for b in owned if b.kind == "paragraph"]
    builder.add(
        own["id"] if own else fallback_id,
        block.line,
        title=statement,
        text=statement,
        steps=nested_text(document, paragraphs),
        context=context,
        category=category,
        priority=keyword_priority(statement),
        owned=owned,
        prose=[raw, *(b.text for b in paragraphs)],
        requirement=requirement,
    )


def _prose(text: str) -> bool:
    """Text a reader could take for criteria."""
    return bool(text.strip())


def _until_heading(blocks: Sequence[Block], index: int) -> list[Block]:
    found = []
    for block in blocks[index + 1 :]:
        if block.kind == "heading":
            break
        found.append(block)
    return found


def _region_end(blocks: Sequence[Block], region: Sequence[Block]) -> int:
    """The first line after ``region``: the line of the block that follows its last one."""
    if not region:
        return 0
    last = region[-1]
    after = [b.line for b in blocks if b.line > last.line]
    return min(after) if after else 1 << 30


class Builder:
    """The criteria and problems of one spec, in document order."""

    def __init__(self, path: Path, document: Document) -> None:
        self.path = path
        self.document = document
        self.criteria: list[Criterion] = []
        self.errors: list[SpecError] = []
        self.seen: dict[str, tuple[str, int]] = {}
        self.consumed: set[int] = set()  # lines of verification blocks a criterion owns
        # requirement id (casefolded) -> (id, title, line, ids of its criteria)
        self.requirements: dict[str, tuple[str, str, int, list[str]]] = {}

    def error(self, line: int, message: str) -> None:
        self.errors.append(SpecError(self.path, line, message))

    def take_id(self, raw: str, line: int) -> str | None:
        """``raw`` made safe and registered; None (and an error) when it cannot be used."""
        ident = safe_id(raw)
        if not ident:
            self.error(line, f"criterion id {raw!r} has no letter or digit: write an id")
            return None
        first = self.seen.get(ident.casefold())
        if first is not None:
            self.error(
                line,
                f"duplicate criterion id {ident}: {first[0]} is already defined at line "
                f"{first[1]} (ids are compared ignoring case); give each criterion its own id",
            )
            return None
        self.seen[ident.casefold()] = (ident, line)
        return ident

    def requirement(self, raw_id: str, title: str, line: int, criteria: Iterable[str] = ()) -> str:
        """Register a requirement (again: the same one), with ``criteria`` already added;
        returns its id."""
        ident = safe_id(raw_id) or "requirement"
        entry = self.requirements.setdefault(ident.casefold(), (ident, title, line, []))
        entry[3].extend(c for c in criteria if c not in entry[3])
        return entry[0]

    def add(
        self,
        raw_id: str,
        line: int,
        *,
        title: str,
        text: str,
        steps: Iterable[str] = (),
        context: str = "",
        category: str = "",
        priority: Priority = Priority.MUST,
        command: str | None = None,
        owned: Sequence[Block] = (),
        fields: dict[str, Any] | None = None,
        prose: Sequence[str] | None = None,
        how: str = "",
        requirement: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str | None:
        """One criterion; returns its id (None when it could not be added). A yaml
        verification block among ``owned`` (the blocks under it) decides how it is
        verified; else ``command`` makes it a bash criterion run verbatim; else ``fields``;
        else the check its own markdown (``prose``) states (``stated_check``); else an agent
        judges it against ``text`` and ``steps``. ``how`` says why, for the collection line;
        ``requirement`` names the requirement it verifies (``requirement()``)."""
        ident = self.take_id(raw_id, line)
        if ident is None:
            return None
        steps = tuple(s for s in steps if s.strip())
        description = "\n".join(part for part in (text, *steps, context) if part.strip())
        checks = tuple(c for c in (text, *steps) if c.strip()) or (title or ident,)
        if command is not None:
            fields = {"method": Method.BASH, "command": command}
            how = how or f"bash: `{one_line(command)}`, exit code 0"
        elif fields is None:
            chosen = self._stated(ident, line, prose if prose is not None else [text, *steps])
            if chosen is None:
                return None
            fields, how = chosen
            fields.setdefault("checks", checks)
        fence = self._verification_block(owned)
        if fence is not None:
            from_block = self._fields(ident, fence, priority)
            if from_block is None:
                return None
            fields, how = from_block, ""
        fields = {"priority": priority, **fields, **(extra or {})}
        if requirement is not None:
            self.requirements[requirement.casefold()][3].append(ident)
        self.criteria.append(
            Criterion(
                id=ident,
                title=one_line(title or text, TITLE_LIMIT) or ident,
                location=Location(self.path, line),
                verification_line=fence.line if fence is not None else line,
                description=description,
                category=category,
                how=how,
                **fields,
            )
        )
        return ident

    def _stated(
        self, ident: str, line: int, prose: Sequence[str]
    ) -> tuple[dict[str, Any], str] | None:
        from pytest_acceptance.spec.formats.stated_check import StatedCheckError, choose

        try:
            choice = choose(prose)
        except StatedCheckError as error:
            self.error(line, f"{ident} {error}")
            return None
        if choice.method is Method.BASH:
            fields = {"method": Method.BASH, "command": choice.command}
            return {**fields, "pass_condition": choice.pass_condition}, choice.how
        return {"method": Method.SUBAGENT}, choice.how

    def _verification_block(self, owned: Sequence[Block]) -> Block | None:
        from pytest_acceptance.spec.formats.reference import is_verification_block

        for block in owned:
            if block.kind == "fence" and is_verification_block(block):
                self.consumed.add(block.line)
                return block
        return None

    def _fields(self, ident: str, fence: Block, priority: Priority) -> dict[str, Any] | None:
        from pytest_acceptance.spec.yamlload import (
            FieldError,
            YamlProblem,
            criterion_fields,
            key_lines,
            load_block,
        )

        try:
            data = load_block(fence.text)
            if isinstance(data, dict) and "priority" not in data:
                data = {**data, "priority": priority.value}
            return criterion_fields(data)
        except YamlProblem as exc:
            self.error(fence.line + 1 + exc.line, f"malformed YAML in {ident}: {exc.problem}")
        except FieldError as exc:
            lines = key_lines(fence.text) if exc.key is not None else {}
            at = fence.line + lines[exc.key] + 1 if exc.key in lines else fence.line
            self.error(at, f"{ident}: {exc}")
        return None

    def _unread_criteria_sections(self, shape: str) -> None:
        """An "Acceptance Criteria" section that holds text but gave no criterion is an error
        at its first line of text: what looks like criteria is never dropped in silence."""
        blocks = self.document.blocks
        lines = sorted(c.location.line for c in self.criteria)
        for index, block in enumerate(blocks):
            if block.kind == "heading" and CRITERIA_HEADING.match(block.text):
                region = children(blocks, index)
            elif block.kind == "paragraph" and not block.item and block.depth == 0:
                label = _CRITERIA_LABEL.match(block.text)
                if label is None:
                    continue
                rest = block.text[label.end() :]
                inline = [Block("paragraph", block.line + 1, text=rest)] if rest.strip() else []
                region = [*inline, *_until_heading(blocks, index)]
            else:
                continue
            text = [b for b in region if b.kind in ("paragraph", "item") and _prose(b.text)]
            if not text:
                continue
            end = _region_end(blocks, region)
            reported = (e.line for e in self.errors)
            if any(block.line <= line < end for line in (*lines, *reported)):
                continue
            name = one_line(self.document.plain(block.text.split("\n", 1)[0]), 40)
            self.error(
                text[0].line,
                f"{one_line(text[0].text, 60)!r} under {name!r} (line {block.line}) was not "
                f"understood as an acceptance criterion, and no criterion was read from that "
                f"section: write {shape}",
            )

    def spec(self, shape: str, title: str | None = None) -> Spec:
        """The spec, after checking that no verification block was left without a criterion;
        ``shape`` tells the author what a criterion of this format looks like."""
        from pytest_acceptance.spec.formats.reference import is_verification_block

        blocks = self.document.blocks
        for index, block in enumerate(blocks):
            owned = block.line in self.consumed
            if block.kind == "fence" and not owned and is_verification_block(block):
                item = item_left_above(blocks, index)
                self.error(
                    block.line,
                    NOT_INDENTED.format(line=item.line)
                    if item is not None
                    else f"this verification block belongs to no criterion: put it under one "
                    f"({shape})",
                )
        self._unread_criteria_sections(shape)
        raise_all(self.errors)
        if not self.criteria:
            raise SpecError(self.path, 1, f"no acceptance criteria found: {shape}")
        requirements = tuple(
            Requirement(ident, one_line(name, TITLE_LIMIT), Location(self.path, at), tuple(ids))
            for ident, name, at, ids in self.requirements.values()
        )
        title = self.document.title if title is None else title
        return Spec(self.path, tuple(self.criteria), title, requirements)
