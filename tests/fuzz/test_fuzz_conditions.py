"""Fuzzing pass conditions: any text parses to a ``Condition``, ``NaturalLanguage`` or a
``ConditionError``; any output is checked to a ``Check`` — never another exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.run.conditions import (
    Check,
    Condition,
    ConditionError,
    NaturalLanguage,
    parse_condition,
)

_PHRASES = st.sampled_from(
    [
        "exit code",
        "exit code is",
        "exits with",
        "exits with code",
        "output contains",
        "output does not contain",
        "output matches",
        "output is empty",
        "output is not empty",
        "file exists",
        "file",
        "does not exist",
        "exists",
        "and",
    ]
)
_ARGUMENTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["0", "-1", "9" * 5000, "'", '"', "''", "'a and output x'", "(", "(a+)+$"]),
    st.sampled_from(["^ok$", "\\d+ passed", "[", "(?P<x>", "a{99999}", "\\", "don't", "x'"]),
    st.from_regex(r"[a-z]{0,3}", fullmatch=True),
)
_WHITE = st.sampled_from([" ", "  ", "\t", "\n", " \u00a0", "\u2028", ""])


@st.composite
def conditions(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        parts += [draw(_PHRASES), draw(_WHITE), draw(_ARGUMENTS), draw(_WHITE)]
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from([" and ", " AND ", "and", " and  "])))
    return "".join(parts)


def outcome(text: str) -> Condition | NaturalLanguage | None:
    parse_condition.cache_clear()
    try:
        return parse_condition(text)
    except ConditionError as error:
        assert str(error).startswith("pass_condition ")
        assert len(str(error)) < 2_000
        return None


@given(st.text(max_size=200))
def test_any_text_is_a_condition_natural_language_or_a_condition_error(text: str) -> None:
    outcome(text)


@given(conditions())
def test_vocabulary_like_text_parses_cleanly(text: str) -> None:
    outcome(text)


@given(
    conditions(),
    st.integers(min_value=-300, max_value=300),
    st.text(max_size=300) | st.sampled_from(["a" * 40 + "b", "\x00", "\n\n", "ok\r\n"]),
)
def test_any_output_is_checked_to_a_check(text: str, exit_code: int, stdout: str) -> None:
    condition = outcome(text)
    if not isinstance(condition, Condition):
        return
    check = condition.check(exit_code, stdout, Path("/nonexistent-root"), 2.0)
    assert isinstance(check, Check)
    assert isinstance(check.expected, str) and isinstance(check.actual, str)
    if check.passed:  # a passing condition always required its exit code
        codes = [c.code for c in condition.clauses if hasattr(c, "code")]
        assert codes == [exit_code]
