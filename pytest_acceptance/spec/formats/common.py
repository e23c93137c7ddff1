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
    item_left_above,
)

TITLE_LIMIT = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KEYWORD = re.compile(r"\b(MUST|SHALL|SHOULD|COULD|MAY)\b")
_CODE_SPAN = re.compile(r"(`+)(?P<code>(?:(?!\1).)+?)\1", re.DOTALL)


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


class Builder:
    """The criteria and problems of one spec, in document order."""

    def __init__(self, path: Path, document: Document) -> None:
        self.path = path
        self.document = document
        self.criteria: list[Criterion] = []
        self.errors: list[SpecError] = []
        self.seen: dict[str, tuple[str, int]] = {}
        self.consumed: set[int] = set()  # lines of verification blocks a criterion owns

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
    ) -> None:
        """One criterion. A yaml verification block among ``owned`` (the blocks under it)
        decides how it is verified; else ``command`` makes it a bash criterion run verbatim;
        else an agent judges it against ``text`` and ``steps``."""
        ident = self.take_id(raw_id, line)
        if ident is None:
            return
        steps = tuple(s for s in steps if s.strip())
        description = "\n".join(part for part in (text, *steps, context) if part.strip())
        if fields is None:
            checks = tuple(c for c in (text, *steps) if c.strip()) or (title or ident,)
            fields = {"method": Method.SUBAGENT, "checks": checks}
        if command is not None:
            fields = {"method": Method.BASH, "command": command}
        fence = self._verification_block(owned)
        if fence is not None:
            from_block = self._fields(ident, fence, priority)
            if from_block is None:
                return
            fields = from_block
        fields = {"priority": priority, **fields}
        self.criteria.append(
            Criterion(
                id=ident,
                title=one_line(title or text, TITLE_LIMIT) or ident,
                location=Location(self.path, line),
                verification_line=fence.line if fence is not None else line,
                description=description,
                category=category,
                **fields,
            )
        )

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

    def spec(self, shape: str) -> Spec:
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
        raise_all(self.errors)
        if not self.criteria:
            raise SpecError(self.path, 1, f"no acceptance criteria found: {shape}")
        return Spec(self.path, tuple(self.criteria), self.document.title)
