"""An exact reader for flat markdown: headings, paragraphs and fenced blocks at the margin.

A big spec is mostly the same few shapes, line after line::

    #### AC-12: Export keeps the order
    **Description:** rows come out in the order they went in.

    ```yaml
    method: bash
    command: "pytest -q tests/test_export.py"
    ```

markdown-it tries each of its block rules on each such line (about 40 µs a criterion), and
importing it costs as much as reading a thousand criteria. ``read_blocks`` reads a text
whose every line is unmistakable without it: a blank line, an ATX heading, a fence opened
and closed at the margin with only its markers, or a paragraph line that starts with a
letter, a digit (not a list number), ``**`` and a word, or a single backtick. Any other line
(a list, a quote, an indent, a setext underline, HTML, a link reference, a tab outside a
fence, a CR, a trailing ``#``, an ambiguous fence line) makes it answer None, and
markdown-it reads the whole text. Where it answers, the blocks are markdown-it's
(tests/fuzz/test_fast_paths.py checks this against it).
"""

from __future__ import annotations

import re
from typing import Any

from pytest_acceptance.spec.formats.document import Block, plain

# A line that can only continue or start a paragraph: nothing else in CommonMark starts with
# a letter; a digit only starts an ordered list as "12." or "12)"; "**" then a word is
# neither a list nor a thematic break; a single backtick is no fence.
_PARAGRAPH = re.compile(r"[^\W\d_]|\d(?!\d*[.)])|\*\*[^\s*]|`(?!``)")
_HEADING = re.compile(r"(#{1,6}) +(\S.*)\Z")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)\Z")


def read_blocks(text: str, env: dict[str, Any]) -> list[Block] | None:
    """The blocks of ``text`` as ``document`` makes them from markdown-it's tokens, or None
    when some line needs markdown-it."""
    if "\r" in text or "\0" in text:
        return None  # markdown-it normalises them first
    lines = text.split("\n")
    blocks: list[Block] = []
    paragraph: list[str] = []  # lines of the open paragraph
    start = 0  # its first line's index
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip(" \t"):
            kind = "blank"
        elif _PARAGRAPH.match(line) and "\t" not in line:
            if not paragraph:
                start = index
            paragraph.append(line)
            index += 1
            continue
        elif line.startswith("#"):
            kind = "heading"
        elif line.startswith(("```", "~~~")):
            kind = "fence"
        else:
            return None
        if paragraph:
            block = _paragraph(paragraph, start)
            if block is None:
                return None
            blocks.append(block)
            paragraph = []
        if kind == "heading":
            heading = _heading(line, index, env)
            if heading is None:
                return None
            blocks.append(heading)
        elif kind == "fence":
            fence = _fence(lines, index)
            if fence is None:
                return None
            blocks.append(fence[0])
            index = fence[1]
        index += 1
    if paragraph:
        block = _paragraph(paragraph, start)
        if block is None:
            return None
        blocks.append(block)
    return blocks


def _paragraph(lines: list[str], start: int) -> Block | None:
    """markdown-it trims the paragraph's ends; this reader only keeps one whose last line
    ends in no other white space than spaces and tabs, which both trims agree on."""
    last = lines[-1].rstrip(" \t")
    if _unclear_end(last):
        return None
    text = "\n".join([*lines[:-1], last])
    return Block("paragraph", start + 1, text=text)


def _heading(line: str, index: int, env: dict[str, Any]) -> Block | None:
    found = _HEADING.match(line)
    if found is None or "\t" in line:
        return None
    content = found[2].rstrip(" ")
    if content.endswith("#") or _unclear_end(content):
        return None  # a closing sequence of #, or white space markdown-it trims its own way
    return Block("heading", index + 1, len(found[1]), plain(content, env))


def _fence(lines: list[str], index: int) -> tuple[Block, int] | None:
    """The fence opened at ``lines[index]`` and the index of its closing line; None unless
    it is closed by a line of only its markers, and no line inside it starts with them."""
    opening = _FENCE.match(lines[index])
    if opening is None:
        return None
    markers, info = opening[1], opening[2]
    marker = markers[0]
    if marker == "`" and "`" in info:
        return None  # not a fence: a paragraph with code spans
    for end in range(index + 1, len(lines)):
        line = lines[end]
        if not line.lstrip(" \t").startswith(marker):
            continue
        if line.strip(marker) or len(line) < len(markers):
            return None  # indented, followed by text, or too short: markdown-it decides
        content = "".join(f"{inside}\n" for inside in lines[index + 1 : end])
        language = info.split(maxsplit=1)[0].lower() if info.strip() else ""
        return Block("fence", index + 1, text=content, info=language), end
    return None  # never closed


def _unclear_end(text: str) -> bool:
    """An end markdown-it might trim (versions differ on which white space they trim)."""
    return not text or text[0].isspace() or not text[-1].isprintable() or text[-1].isspace()
