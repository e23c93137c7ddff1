"""The fast paths of a cold parse against the full parsers they stand in for.

``flat_yaml.read_flat`` reads flat verification blocks without PyYAML and
``flat_markdown.read_blocks`` reads flat markdown without markdown-it. Each may decline (None)
whatever it likes, but where it answers, the answer must be the full parser's: the same
values of the same types, the same blocks, the same link references. And a whole spec parsed
with them must be the spec, or the errors, parsed without them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.model import Spec, SpecError
from pytest_acceptance.spec import flat_yaml
from pytest_acceptance.spec.formats import flat_markdown
from pytest_acceptance.spec.formats.document import Document, markdown_blocks
from pytest_acceptance.spec.load import parse_spec_text
from pytest_acceptance.spec.yaml12 import load_yaml
from pytest_acceptance.spec.yamlload import YamlProblem

PATH = Path("spec.md")


def typed(value: Any) -> Any:
    """A value compared with its type (``1 == 1.0 == True`` in Python) and NaN equal to
    itself."""
    if isinstance(value, dict):
        return [(typed(k), typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    return (type(value), value)


def full_yaml(text: str) -> Any:
    try:
        return typed(load_yaml(text))
    except YamlProblem as problem:
        return ("problem", problem.line, problem.problem)


# --- flat verification blocks -----------------------------------------------------------------

_KEYS = st.sampled_from(
    [
        *["method", "command", "pass_condition", "timeout", "retries", "_", "x", "agent"],
        *["model", "cwd", "votes", "priority", "checks", "K_9", "Yes", "nan", "inf"],
    ]
)
_ODD_KEYS = st.sampled_from(
    ["null", "NULL", "True", "false", "no", "on", "y", "<<", "a b", "k" * 70, "1", "é", " x"]
)
_SEPARATORS = st.sampled_from([":", " : ", ":\t", ": \t", "::", ": : "])
# Values the flat reader reads (each alone), and pieces it must decline or get right.
FLAT_VALUES = [
    *["bash", "true", "True", "TRUE", "false", "no", "yes", "on", "~", "null", "Null"],
    *["0", "7", "007", "0o17", "0O17", "0x1F", "0X1f", "1_000", "1:30", "2001-01-01", "0b1"],
    *["1,000", "1.5", "1.", ".5", "1e5", "1E-3", "1e", ".inf", ".nan", ".NaN", "nan", "90s"],
    *["9" * 99, "5 min", "exit code 0", "make test", "./run.sh", "$HOME", "(a)", "~/x"],
    *[".hidden", "a:b", "a#b", "a,b", "'q'", "'it'", "''", '"q"', '""', '"a: b"', "'#'"],
    *["x'y", 'x"y', "x  y", "a [b] {c}", "é", "\U0001f600", "a\xa0", "9" * 101, "x!"],
]
_FLAT_VALUES = st.sampled_from(FLAT_VALUES)
ODD_VALUES = [
    *["", "-5", "+3", "-.Inf", "+.INF", "a: b", "a #c", "x:", "x :", "[a]", "{a}", "&a"],
    *["*a", "!x", "!!str x", "|", ">", "@x", "`x`", "%x", "?", "-", "- a", ",", "#"],
    *["'it''s'", "'a\"b'", '"a\\nb"', '"a\'b"', '"a" # c', "'a' x", '"a', "'a", '"\t"'],
    *["  ", " ", "\t", "\xa0", "\u2028", "\x85", "\ufeff", "\x1f", "\x7f", "\ud800"],
    *["\\", '"', "'"],
]
_ODD_VALUES = st.sampled_from(ODD_VALUES)
_ANY_VALUES = st.lists(_FLAT_VALUES | _ODD_VALUES | st.text(max_size=3), max_size=3).map("".join)
_OTHER_LINES = st.sampled_from(
    ["", "  ", "# comment", "#", "  # indented", "---", "...", "%YAML 1.2", "- a", "  - a",
     "  key: v", "checks:", "key", "\t", "[a, b]", "{a: 1}", "? a"]
)  # fmt: skip
_FLAT_LINES = st.tuples(_KEYS, st.sampled_from([": ", ":  "]), _FLAT_VALUES).map("".join)
_ANY_LINES = st.one_of(
    _FLAT_LINES,
    st.tuples(_KEYS | _ODD_KEYS, _SEPARATORS | st.just(": "), _ANY_VALUES).map("".join),
    _OTHER_LINES,
)


def blocks_of(lines: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    ends = st.sampled_from(["\n", "", "\n\n", "\r\n"])
    return st.tuples(st.lists(lines, max_size=6).map("\n".join), ends).map("".join)


@given(blocks_of(_FLAT_LINES))
def test_a_flat_block_reads_as_the_full_loader_reads_it(block: str) -> None:
    flat = flat_yaml.read_flat(block)
    if flat is not None:
        assert typed(flat) == full_yaml(block)


@given(blocks_of(_ANY_LINES))
def test_a_block_of_any_lines_reads_as_the_full_loader_reads_it_or_is_declined(
    block: str,
) -> None:
    flat = flat_yaml.read_flat(block)
    if flat is not None:
        assert typed(flat) == full_yaml(block)


@given(st.text(max_size=60))
def test_any_text_reads_as_the_full_loader_reads_it_or_is_declined(block: str) -> None:
    flat = flat_yaml.read_flat(block)
    if flat is not None:
        assert typed(flat) == full_yaml(block)


def test_every_value_piece_alone_reads_as_the_full_loader_reads_it_or_is_declined() -> None:
    """Each piece in every place a value takes, exhaustively (the properties above draw
    only some of them together)."""
    pieces = [*FLAT_VALUES, *ODD_VALUES]
    for piece in pieces:
        for block in (f"key: {piece}\n", f"key:  {piece}", f"a: 1\nkey: {piece}\nb: 2\n"):
            flat = flat_yaml.read_flat(block)
            if flat is not None:
                assert typed(flat) == full_yaml(block), block


def test_the_usual_blocks_are_read_flat() -> None:
    """What nearly every spec writes: the fast path must take it (else it saves nothing)."""
    blocks = {
        'method: bash\ncommand: "true"\npass_condition: "exit code 0"\n': {
            "method": "bash",
            "command": "true",
            "pass_condition": "exit code 0",
        },
        "method: bash\ncommand: make test\ntimeout: 90\nretries: 0\n": {
            "method": "bash",
            "command": "make test",
            "timeout": 90,
            "retries": 0,
        },
        "# the exporter\nmethod: subagent\n\nmodel: sonnet\ntimeout: 1.5\n": {
            "method": "subagent",
            "model": "sonnet",
            "timeout": 1.5,
        },
        "method: manual\npass_condition: no\ncommand: 'a: b'\nagent: ~\n": {
            "method": "manual",
            "pass_condition": "no",
            "command": "a: b",
            "agent": None,
        },
    }
    for block, expected in blocks.items():
        assert typed(flat_yaml.read_flat(block)) == typed(expected) == full_yaml(block)


def test_what_the_flat_reader_is_unsure_of_goes_to_the_full_loader() -> None:
    for block in (
        "method: bash\nmethod: manual\n",  # a duplicate key: the full loader's error
        "method: bash\ncommand: a # b\n",  # a comment after a value
        "checks:\n  - a\n",  # nested
        "timeout: " + "9" * 101 + "\n",  # refused by the full loader
        'command: "a\\tb"\n',  # an escape
        "true: x\n",  # a key that is no string
        "# only a comment\n",  # no mapping at all
    ):
        assert flat_yaml.read_flat(block) is None, block


# --- flat markdown ----------------------------------------------------------------------------

FLAT_MARKDOWN = [
    *["", " ", "# Spec", "#### AC-1: Title", "## Acceptance Criteria", "### Category: A"],
    *["**Description:** d", "**Verification:**", "text", "a  ", "a\t", "2026 plan", "`code`"],
    *["```", "```yaml", "```yml title", "````", "~~~", "~~~yaml", "method: bash", "  - x"],
    *["``x``", "é", "\u00bd half", "#  spaced  ", "** x", "_x_", "&amp;", "a *b* [c](d)"],
    *["```yaml\nmethod: bash\n```", "~~~\n```\n~~~", "````\n```\n````", "```\n\n```"],
]
_FLAT_MARKDOWN = st.sampled_from(FLAT_MARKDOWN)
ODD_MARKDOWN = [
    *["\t", "####### seven", "#hashtag", "## closed ##", "## C#", "#\ttab", "# ", "#"],
    *["# \u00a0nbsp", "# x\u2028", "a\u00a0", "a\x85", "1. item", "1) item", "12.5 s"],
    *["- item", "* x", "+ x", "> quote", "<div>", "[a]: /url", "[a]", "===", "---", "***"],
    *["___", "``` a`b", "  ```", "    code", "  indented", "**", "\u0663. x", "    ```"],
    *["``` ", "\t```", "`` ", "~~", 'command: "true"', "a\rb", "a\x00b", "a\x0cb"],
]
_ODD_MARKDOWN = st.sampled_from(ODD_MARKDOWN)


@given(st.lists(_FLAT_MARKDOWN, max_size=30).map("\n".join), st.sampled_from(["", "\n"]))
def test_flat_markdown_reads_as_markdown_it_reads_it(text: str, end: str) -> None:
    assert_read_alike(text + end)


@given(
    st.lists(_FLAT_MARKDOWN | _ODD_MARKDOWN | st.text(max_size=6), max_size=12).map("\n".join),
    st.sampled_from(["", "\n", "\r\n", "\n\n"]),
)
def test_any_markdown_reads_as_markdown_it_reads_it_or_is_declined(text: str, end: str) -> None:
    assert_read_alike(text + end)


def assert_read_alike(text: str) -> None:
    fast_env: dict[str, Any] = {}
    flat = flat_markdown.read_blocks(text, fast_env)
    if flat is not None:
        full_env: dict[str, Any] = {}
        assert flat == markdown_blocks(text, full_env)
        assert fast_env == full_env


def test_every_markdown_line_in_every_place_reads_as_markdown_it_reads_it_or_is_declined() -> None:
    lines = [*FLAT_MARKDOWN, *ODD_MARKDOWN]
    for line in lines:
        for text in (
            line,
            f"{line}\n",
            f"text\n{line}\nmore\n",
            f"# Title\n{line}\n\npara\n",
            f"```\n{line}\n```\n",
            f"~~~~\n{line}\n~~~~\n",
            f"{line}\nbody\n```\n",
            f"{line}\nbody\n~~~\n",
            f"**Lead:** x\n{line}\n```yaml\nmethod: bash\n```\n",
        ):
            assert_read_alike(text)


def test_the_usual_spec_is_read_flat() -> None:
    text = (
        "# Export\n\nThe exporter writes CSV.\n\n## Acceptance Criteria\n\n### Category: Core\n\n"
        "#### AC-1: Rows keep their order\n**Description:** rows come out as they went in.\n\n"
        '**Verification:**\n```yaml\nmethod: bash\ncommand: "pytest -q"\n```\n\n'
        "#### AC-2: The `--out` flag\nWrites *there*.\n~~~yml\nmethod: manual\n~~~\n"
    )
    env: dict[str, Any] = {}
    flat = flat_markdown.read_blocks(text, env)
    assert flat is not None
    assert flat == markdown_blocks(text, {})
    kinds = "heading paragraph heading heading heading paragraph paragraph fence heading"
    assert [block.kind for block in flat] == [*kinds.split(), "paragraph", "fence"]
    assert Document(text).blocks == flat


# --- whole specs, with and without the fast paths ---------------------------------------------


def parsed(text: str) -> Spec | tuple[str, ...]:
    try:
        return parse_spec_text(text, PATH)
    except SpecError as error:
        return tuple(str(each) for each in error.errors)


def parsed_without_fast_paths(text: str) -> Spec | tuple[str, ...]:
    with (
        mock.patch.object(flat_markdown, "read_blocks", return_value=None),
        mock.patch.object(flat_yaml, "read_flat", return_value=None),
    ):
        return parsed(text)


_IDS = st.sampled_from(["AC-1", "AC-2", "ac-1", "REQ-3", "AC-1/..", "X-9a", "UTF-8"])
_BLOCK_LINES = st.sampled_from(
    [
        *["method: bash", "method: subagent", "method: manual", "method: robot", 'command: "true"'],
        *[
            "command: make test",
            "command:",
            "command: ''",
            "timeout: 90",
            "timeout: 0",
            "retries: x",
        ],
        *["retries: 2", "priority: SHOULD", "priority: maybe", "comand: x", "checks: [a, b]"],
        *["timeout: .nan", "votes: 3", "cwd: /abs", "cwd: app", "pass_condition: no", ""],
    ]
)


@st.composite
def criteria(draw: st.DrawFn) -> str:
    heading = "#" * draw(st.integers(min_value=1, max_value=6))
    title = draw(st.sampled_from([": Title", " — Title", ": **bold** title", " no colon", ":"]))
    description = draw(st.sampled_from(["**Description:** d\n", "Plain text.\n", "", "- item\n"]))
    fence = draw(st.sampled_from(["```yaml", "~~~yaml", "```yml", "```", "```text"]))
    close = "~~~" if fence.startswith("~") else "```"
    body = "\n".join(draw(st.lists(_BLOCK_LINES, max_size=5)))
    tail = draw(st.sampled_from(["\n", "", "\n\n"]))
    return f"{heading} {draw(_IDS)}{title}\n{description}\n{fence}\n{body}\n{close}\n{tail}"


@given(st.lists(criteria(), min_size=1, max_size=4).map("".join))
def test_a_spec_parses_the_same_with_and_without_the_fast_paths(body: str) -> None:
    text = "# Spec\n\n## Acceptance Criteria\n\n### Category: Core\n\n" + body
    assert parsed(text) == parsed_without_fast_paths(text)
