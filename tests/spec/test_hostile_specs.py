"""Hostile spec input: every crash class found by fault injection and by tests/fuzz ends as
a SpecError naming the line, with a bounded message — and end to end as a collection error
(exit code 2), never INTERNALERROR, a traceback or a crashed process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_acceptance.model import SPEC_ERROR_LIMIT, SpecError
from pytest_acceptance.spec.load import parse_spec_text

HEAD = "# Spec\n\n#### AC-1: hostile\n```yaml\nmethod: bash\ncommand: 'true'\n"
LINE = 7  # the first line after HEAD


def spec_with(yaml_tail: str) -> str:
    return f"{HEAD}{yaml_tail}\n```\n"


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse_spec_text(text, Path("spec.md"))
    error = caught.value
    assert len(error.message) <= SPEC_ERROR_LIMIT
    return error


def alias_bomb(levels: int = 9) -> str:
    """The billion-laughs shape: each level lists the previous one nine times."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("tail", "mentions"),
    [
        ("retries: !!int abc", "!!int"),
        ("timeout: !!float x", "!!float"),
        ("retries: !!bool maybe", "!!bool"),
        ("retries: !!timestamp 2001-13-45", "!!timestamp"),
        ("retries: !!timestamp", "!!timestamp"),  # found by tests/fuzz: AttributeError
        ("retries: !!map [a]", "!!map needs a mapping"),
        ("retries: !!set [a]", "!!set needs a mapping"),
        ("retries: !!omap {a: 1}", "!!omap needs a sequence"),
        ("retries: " + "9" * 5000, "5000 digits"),  # over Python's int-str limit
        ("timeout: " + "9" * 5000 + ".5", "characters"),
    ],
)
def test_a_value_that_does_not_fit_its_tag_is_a_yaml_problem_at_its_line(
    tail: str, mentions: str
) -> None:
    error = error_of(spec_with(tail))
    assert error.line == LINE
    assert "malformed YAML" in error.message and mentions in error.message


@pytest.mark.parametrize("opener", ["[", "{a: ", "- "])
def test_nesting_past_the_limit_is_refused_before_it_is_built(opener: str) -> None:
    closer = {"[": "]", "{a: ": "}", "- ": ""}[opener]
    if opener == "- ":  # block nesting: one level per line
        tail = "checks:\n" + "".join(" " * (i + 1) + "-\n" for i in range(1_000))
    else:
        tail = "checks: " + opener * 1_000 + "x" + closer * 1_000
    error = error_of(spec_with(tail))
    # Our own bound (64 levels) or, first, PyYAML's (6.0.4 and newer stop flow nesting
    # themselves): either way the spec is refused at its line, never built or crashed on.
    assert (
        "nested more than 64 levels deep" in error.message
        or "exceeded maximum nesting depth" in error.message
    ), error.message
    assert LINE <= error.line <= LINE + 70


def test_an_alias_bomb_is_counted_not_expanded() -> None:
    error = error_of(spec_with(alias_bomb() + "\nchecks: *l8"))
    assert "more than 10000 values once aliases are expanded" in error.message
    assert "lol" not in error.message


def test_aliases_that_expand_to_a_few_values_still_work() -> None:
    text = "# S\n\n#### AC-1: x\n```yaml\nmethod: subagent\nagent: &a x\nmodel: *a\n```\n"
    assert parse_spec_text(text, Path("s.md")).criteria[0].model == "x"


@pytest.mark.parametrize(
    ("tail", "mentions"),
    [
        ("timeout: 1e306", "at most 604800"),
        ("timeout: .inf", "at most 604800"),
        ("timeout: .nan", "found nan"),
        ("timeout: -5", "found -5"),
        ("timeout: 8d", "found '8d'"),
        ("retries: 101", "at most 100"),
        ("pass_condition: '" + "x" * 10_001 + "'", "more than 10000"),
    ],
)
def test_numbers_and_sizes_are_range_checked(tail: str, mentions: str) -> None:
    error = error_of(spec_with(tail))
    assert error.line == LINE
    assert mentions in error.message


def test_a_week_is_the_longest_timeout() -> None:
    spec = parse_spec_text(spec_with("timeout: 168h"), Path("s.md"))
    assert spec.criteria[0].timeout == 7 * 24 * 3600


@pytest.mark.parametrize(
    "tail",
    [
        "pass_condition: [" + ", ".join(["x"] * 5_000) + "]",  # a list where text belongs
        "method2: '" + "y" * 100_000 + "'",  # a huge unknown key's value
        "'" + "k" * 100_000 + "': 1",  # a huge unknown key
        "priority: '" + "p" * 100_000 + "'",
        "retries: '" + "r" * 100_000 + "'",
    ],
)
def test_messages_quote_a_bounded_excerpt(tail: str) -> None:
    error = error_of(spec_with(tail))
    assert len(error.message) < 1_000


def test_a_huge_heading_id_gives_a_bounded_message() -> None:
    text = "# S\n\n#### AC-1/" + "x" * 200_000 + ": t\n```yaml\nmethod: manual\n```\n"
    error = error_of(text)
    assert error.line == 3 and error.message.endswith("…")


# --- end to end: one pytest run over many hostile specs ---------------------------------------

HOSTILE = {
    "tag": spec_with("retries: !!int abc"),
    "bigint": spec_with("retries: " + "9" * 5_000),
    "deep": spec_with("checks: " + "[" * 1_000 + "]" * 1_000),
    "deeper": spec_with("checks: " + "[" * 25_000 + "]" * 25_000),  # crashed libyaml (rc 139)
    "bomb": spec_with(alias_bomb(10) + "\nchecks: *l9"),  # 45 s and 2 GB before
    "timeout": spec_with("timeout: 1e306"),
    "condition": spec_with("pass_condition: 'output matches (' "),
    "longcondition": spec_with("pass_condition: '" + "output contains x and " * 4_000 + "x'"),
}


def test_hostile_specs_end_as_collection_errors_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    """A subprocess: a crash of libyaml would take an in-process pytester down with it."""
    for name, text in HOSTILE.items():
        pytester.makefile(".md", **{name: text})
    args = [f"--acceptance={name}.md" for name in HOSTILE]
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", timeout=300)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out[-3_000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out
    for name in HOSTILE:
        result.stdout.fnmatch_lines([f"{name}.md:[0-9]*: *"])
    assert len(out) < 40_000  # every message bounded; the bomb's expansion is nowhere
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert verdict["status"] == "error"
    assert len(verdict["problems"]) == len(HOSTILE)


@pytest.mark.parametrize(
    ("block", "line"),
    [
        ("[\u2028\u2028\u2028\u2028", 7),  # found by tests/fuzz: was line 10 of 7 lines
        ("method: bash\u2028\u2028\x85\ncommand: 5", 7),  # a key line after YAML-only breaks
    ],
)
def test_yaml_only_line_breaks_do_not_shift_the_error_line(block: str, line: int) -> None:
    text = f"# Spec\n\n#### AC-1: x\n**Description:** x\n```yaml\n{block}\n```\n"
    error = error_of(text)
    assert error.line == line, error
