"""Fuzzing pass conditions: any text parses to a ``Condition``, ``NaturalLanguage`` or a
``ConditionError``; any output is checked to a ``Check`` — never another exception."""

from __future__ import annotations

import re
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


_JUDGE_ASKED = re.compile(r"\s*judge\s*:", re.IGNORECASE)


@given(st.text(max_size=200) | conditions())
def test_only_an_explicit_request_reaches_a_judge(text: str) -> None:
    """Nothing is judged by accident: a condition is the vocabulary, ``judge: ...`` or an
    error; whatever an agent is asked to judge was asked for with the prefix."""
    if isinstance(outcome(text), NaturalLanguage):
        assert _JUDGE_ASKED.match(text)


_TYPED = st.sampled_from(
    ["exit code 0", "output contains 3 words", "output is empty", "file build/x exists"]
)


@st.composite
def typos(draw: st.DrawFn) -> str:
    """A vocabulary phrase with one character dropped, doubled or replaced in its words."""
    text = draw(_TYPED)
    words = len(text.split()[0]) + 1 + len(text.split()[1])  # the first two words
    at = draw(st.integers(min_value=0, max_value=words - 1))
    edit = draw(st.sampled_from(["drop", "double", "replace"]))
    if edit == "drop":
        return text[:at] + text[at + 1 :]
    if edit == "double":
        return text[:at] + text[at] + text[at:]
    return text[:at] + draw(st.sampled_from("aeioxz")) + text[at + 1 :]


@given(typos())
def test_a_typo_of_the_vocabulary_is_never_sent_to_a_judge(text: str) -> None:
    condition = outcome(text)
    assert not isinstance(condition, NaturalLanguage)
