"""Markdown spec -> ``Spec``: criteria headings, descriptions and yaml verification blocks.

Structure comes from markdown-it-py block tokens and their line maps (so a heading inside a
code fence is never a criterion); values come from ``yamlload`` (YAML 1.2 core typing).
Every problem is a ``SpecError`` naming ``file:line``, what is wrong and what to write
instead. Nothing here knows about pytest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_acceptance.extract import extract_criteria
from pytest_acceptance.model import Criterion, Location, Spec, SpecError
from pytest_acceptance.yamlload import (
    FieldError,
    YamlProblem,
    criterion_fields,
    key_lines,
    load_block,
)

# "AC-1: Title", "REQ-12 — Title", "US-3a - Title". An id alone ("### UTF-8") is not one.
_CRITERION_HEADING = re.compile(
    r"(?P<id>[A-Za-z][A-Za-z0-9_]*-\d[^\s:]*)(?:\s*:\s*|\s+[\u2014\u2013-]\s+)(?P<title>.*)\Z"
)
_CATEGORY_HEADING = re.compile(r"category\s*:\s*(?P<name>.*)\Z", re.IGNORECASE)
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# "**Description:**", "**Description**:", "_Description:_", "Description:" (inline markdown).
_LABEL = re.compile(
    r"[*_]{0,3}\s*(?P<name>description|verification)\s*[*_]{0,3}\s*:\s*[*_]{0,3}", re.I
)
_CRITERION_SHAPE = (
    'a heading like "#### AC-1: Title" followed by a fenced ```yaml block with '
    '"method: bash | subagent | manual"'
)

_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<>&!]")

# One parser for the process (building one compiles its rule chains). Block rules only:
# inline markup is parsed on demand by ``_plain``, for the few texts the spec model keeps.
_MARKDOWN = MarkdownIt("commonmark").disable(["inline", "text_join"])


def parse_spec(path: Path) -> Spec:
    """Read ``path`` (any extension) as UTF-8 markdown and parse it."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SpecError(path, 1, f"cannot read the spec: {reason}; check the path") from None
    return parse_spec_text(decode(data, path), path)


def parse_spec_text(text: str, path: Path) -> Spec:
    """Parse spec ``text``; ``path`` is only used in locations and messages."""
    text = text.removeprefix("\ufeff")
    _reject_unusable(text, path)
    env: dict[str, Any] = {}  # link reference definitions, for ``_plain``
    blocks = list(_blocks(_MARKDOWN.parse(text, env), env))
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    criteria = _Walker(path, env).walk(blocks)
    if not criteria:  # no AC blocks: the MUST/SHOULD/COULD statements of numbered sections
        criteria = extract_criteria(blocks, path, lambda markdown: _plain(markdown, env))
    if not criteria:
        raise SpecError(
            path,
            1,
            f"no acceptance criteria found: a criterion is {_CRITERION_SHAPE} (without such "
            "blocks, each sentence saying MUST/SHOULD/COULD under a numbered heading like "
            '"## 3.2 Title" becomes one)',
        )
    return Spec(path=path, criteria=tuple(criteria), title=title)


def decode(data: bytes, path: Path) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(path, 1, "the spec is UTF-16 encoded: save it as UTF-8")
    bad = data.find(b"\x00")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        line = data.count(b"\n", 0, bad) + 1
        raise SpecError(
            path, line, f"not a text file (byte {bad} is not UTF-8 text): a spec is UTF-8 markdown"
        )
    return text


def _reject_unusable(text: str, path: Path) -> None:
    if not text.strip():
        raise SpecError(
            path, 1, f"the spec is empty: add acceptance criteria, each {_CRITERION_SHAPE}"
        )
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise SpecError(path, line, "not a text file (NUL character): a spec is UTF-8 markdown")


@dataclass(slots=True)
class _Block:
    """The few block-level facts the parser needs, with a 1-based line."""

    kind: str  # heading | paragraph | fence
    line: int
    level: int = 0  # heading level 1-6
    text: str = ""  # heading: plain text; paragraph: inline markdown; fence: content
    info: str = ""  # fence language: the first word of its info string, lower case
    hidden: bool = False  # paragraph of a tight list item


def _blocks(tokens: list[Token], env: dict[str, Any]) -> Iterator[_Block]:
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        line = token.map[0] + 1
        if token.type == "heading_open":
            text = _plain(tokens[index + 1].content, env)
            yield _Block("heading", line, int(token.tag[1]), text)
        elif token.type == "paragraph_open":
            yield _Block("paragraph", line, text=tokens[index + 1].content, hidden=token.hidden)
        elif token.type == "fence":
            language = token.info.split(maxsplit=1)[0].lower() if token.info.strip() else ""
            yield _Block("fence", line, text=token.content, info=language)


def _plain(markdown: str, env: dict[str, Any]) -> str:
    """Inline markdown as plain text: emphasis, code and link marks stripped, spaces collapsed.

    Most headings and descriptions contain no inline markup; they skip the inline parser,
    which is most of markdown-it's time on a large spec.
    """
    if _INLINE_MARKUP.search(markdown) is None:
        return " ".join(markdown.split())
    parts: list[str] = []
    for token in _MARKDOWN.inline.parse(markdown, _MARKDOWN, env, []):
        if token.type in ("text", "text_special", "code_inline", "html_inline", "image"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


@dataclass
class _Section:
    """A criterion heading and what of its section matters, before validation."""

    heading: _Block
    id: str
    title: str
    level: int
    category: str
    description: str | None = None
    first_paragraph: str | None = None
    fence: _Block | None = None


class _Walker:
    """Walks the blocks once, tracking the current category and criterion section."""

    def __init__(self, path: Path, env: dict[str, Any]) -> None:
        self.path = path
        self.env = env
        self.category = ""
        self.category_level = 0
        self.section: _Section | None = None
        self.criteria: list[Criterion] = []
        self.seen: dict[str, tuple[str, int]] = {}  # casefolded id -> (id, heading line)

    def walk(self, blocks: list[_Block]) -> list[Criterion]:
        for block in blocks:
            if block.kind == "heading":
                self._heading(block)
            elif self.section is not None:
                self._content(self.section, block)
        self._close()
        return self.criteria

    def _heading(self, block: _Block) -> None:
        category = _CATEGORY_HEADING.match(block.text)
        criterion = None if category else _CRITERION_HEADING.match(block.text)
        if self.section and (category or criterion or block.level <= self.section.level):
            self._close()
        if category:
            self.category, self.category_level = category["name"].strip(), block.level
        elif criterion:
            self._open(block, criterion["id"], criterion["title"].strip())
        elif self.category and block.level <= self.category_level:
            self.category = ""

    def _content(self, section: _Section, block: _Block) -> None:
        if block.kind == "fence":
            if section.fence is None and block.info in ("yaml", "yml"):
                section.fence = block
        elif block.kind == "paragraph":
            label = _LABEL.match(block.text)
            if label is None:
                if section.first_paragraph is None and not block.hidden:
                    section.first_paragraph = _plain(block.text, self.env)
            elif label["name"].lower() == "description" and section.description is None:
                section.description = _plain(block.text[label.end() :], self.env)

    def _open(self, block: _Block, criterion_id: str, title: str) -> None:
        if not _SAFE_ID.match(criterion_id):
            raise SpecError(
                self.path,
                block.line,
                f"criterion id {criterion_id!r} cannot name a file: use only letters, digits, "
                '".", "_" and "-", starting with a letter or digit (no "/", "\\" or spaces)',
            )
        first = self.seen.get(criterion_id.casefold())
        if first is not None:
            raise SpecError(
                self.path,
                block.line,
                f"duplicate criterion id {criterion_id}: {first[0]} is already defined at line "
                f"{first[1]} (ids are compared ignoring case); give each criterion its own id",
            )
        self.seen[criterion_id.casefold()] = (criterion_id, block.line)
        self.section = _Section(block, criterion_id, title, block.level, self.category)

    def _close(self) -> None:
        if self.section is not None:
            self.criteria.append(_criterion(self.section, self.path))
            self.section = None


def _criterion(section: _Section, path: Path) -> Criterion:
    fence = section.fence
    if fence is None:
        raise SpecError(
            path,
            section.heading.line,
            f"{section.id} has no verification block: add a fenced yaml block with "
            '"method: bash | subagent | manual" under **Verification:** (or, if this heading '
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


def _validated(section: _Section, fence: _Block, data: Any, path: Path) -> dict[str, Any]:
    try:
        return criterion_fields(data)
    except FieldError as exc:
        lines = key_lines(fence.text) if exc.key is not None else {}
        line = fence.line + lines[exc.key] + 1 if exc.key in lines else fence.line
        raise SpecError(path, line, f"{section.id}: {exc}") from None
