"""Markdown as the few block-level facts every spec format reads, with 1-based lines.

Structure comes from markdown-it-py block tokens and their line maps, so a heading or a
list inside a code fence is never structure; a text of only flat headings, paragraphs and
fences is read the same way without markdown-it (``flat_markdown``). Blocks come out flat, in
document order; list items carry their nesting depth so a format can take an item with
everything nested under it (``children``). Inline markup is parsed on demand (``plain``), for
the few texts a spec keeps. Nothing here knows about criteria.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<>&!]")


@functools.cache
def markdown() -> MarkdownIt:
    """One parser for the process (building one compiles its rule chains), built on first
    use so that a cached spec never imports markdown-it. Block rules only: inline markup is
    parsed on demand by ``plain``, for the few texts the spec model keeps."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


@dataclass(slots=True)
class Block:
    """One block with a 1-based line.

    kind: ``heading`` | ``paragraph`` | ``fence`` | ``item`` (a list item; its own text is
    repeated by the paragraph that follows it).
    """

    kind: str
    line: int
    level: int = 0  # heading level 1-6
    text: str = ""  # heading: plain text; paragraph/item: inline markdown; fence: content
    info: str = ""  # fence language: the first word of its info string, lower case
    hidden: bool = False  # paragraph of a tight list item
    depth: int = 0  # how many lists enclose the block
    number: str = ""  # item of an ordered list: its number as written
    item: bool = False  # a paragraph that opens a list item (its ``number`` is the item's)


class Document:
    """The blocks of one markdown text and the link references ``plain`` needs."""

    def __init__(self, text: str) -> None:
        self.env: dict[str, Any] = {}
        self.blocks: list[Block] = read_blocks(text, self.env)

    def plain(self, markdown: str) -> str:
        return plain(markdown, self.env)

    @property
    def title(self) -> str:
        return next((b.text for b in self.blocks if b.kind == "heading" and b.level == 1), "")


def read_blocks(text: str, env: dict[str, Any]) -> list[Block]:
    """The blocks of ``text``: by the flat reader when every line is one it reads exactly (most
    of a big spec, without markdown-it's tokenizer or even its import), else by markdown-it.
    ``env`` receives the link references ``plain`` needs."""
    from pytest_acceptance.spec.formats import flat_markdown

    flat = flat_markdown.read_blocks(text, env)
    if flat is not None:
        return flat
    return markdown_blocks(text, env)


def markdown_blocks(text: str, env: dict[str, Any]) -> list[Block]:
    """The blocks of ``text`` from markdown-it's block tokens."""
    return list(_blocks(markdown().parse(text, env), env))


def _blocks(tokens: list[Token], env: dict[str, Any]) -> Iterator[Block]:
    depth = 0
    pending_item: Block | None = None  # an item waits for its first paragraph's text
    for index, token in enumerate(tokens):
        if token.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        if token.map is None:
            continue
        line = token.map[0] + 1
        if token.type == "list_item_open":
            pending_item = Block("item", line, depth=depth, number=token.info)
            yield pending_item
            continue
        if token.type == "heading_open":
            yield Block("heading", line, int(token.tag[1]), plain(tokens[index + 1].content, env))
        elif token.type == "paragraph_open":
            text = tokens[index + 1].content
            block = Block("paragraph", line, text=text, hidden=token.hidden, depth=depth)
            if pending_item is not None and pending_item.line == line:
                pending_item.text = text
                block.item, block.number = True, pending_item.number
            yield block
        elif token.type == "fence":
            language = token.info.split(maxsplit=1)[0].lower() if token.info.strip() else ""
            yield Block("fence", line, text=token.content, info=language, depth=depth)
        pending_item = None


def children(blocks: Sequence[Block], index: int) -> list[Block]:
    """The blocks nested under ``blocks[index]`` (an item: its content; a heading: its
    section up to the next heading of the same or a higher level)."""
    owner = blocks[index]
    found: list[Block] = []
    for block in blocks[index + 1 :]:
        if owner.kind == "heading":
            if block.kind == "heading" and block.level <= owner.level:
                break
        elif block.kind == "heading" or block.depth < owner.depth or _sibling(block, owner):
            break
        elif block.item and block.line == owner.line:
            continue  # the item's own first paragraph
        found.append(block)
    return found


def item_left_above(blocks: Sequence[Block], index: int) -> Block | None:
    """The list item a block comes right after without being inside it (a fence written
    at the margin under ``- item``), or None: the one place a block that should belong to
    an item ends up when it is not indented."""
    if index == 0 or blocks[index - 1].depth <= blocks[index].depth:
        return None
    for block in reversed(blocks[:index]):
        if block.kind == "item" and block.depth > blocks[index].depth:
            return block
    return None


NOT_INDENTED = (
    "this verification block is right under the list item at line {line} but not inside "
    "it: indent the whole block (its ``` lines too) as deep as the item's text, 2 spaces "
    'under "- " or 3 under "1. ", so that it belongs to the item'
)


def _sibling(block: Block, item: Block) -> bool:
    return block.kind == "item" and block.depth <= item.depth


def plain(text: str, env: dict[str, Any]) -> str:
    """Inline markdown as plain text: emphasis, code and link marks stripped, spaces collapsed.

    Most headings and descriptions contain no inline markup; they skip the inline parser,
    which is most of markdown-it's time on a large spec.
    """
    if _INLINE_MARKUP.search(text) is None:
        return " ".join(text.split())
    parts: list[str] = []
    parser = markdown()
    for token in parser.inline.parse(text, parser, env, []):
        if token.type in ("text", "text_special", "code_inline", "html_inline", "image"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())
