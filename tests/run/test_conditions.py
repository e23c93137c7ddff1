"""The pass-condition vocabulary: parsing, checking, and the errors for malformed phrases."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance.run.conditions import (
    Condition,
    ConditionError,
    NaturalLanguage,
    OutputContains,
    parse_condition,
)


def check(text: str | None, exit_code: int, stdout: str, rootdir: Path) -> bool:
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    return condition.check(exit_code, stdout, rootdir).passed


@pytest.mark.parametrize("text", [None, "", "   "])
def test_missing_condition_means_exit_code_zero(text: str | None, tmp_path: Path) -> None:
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    assert condition.describe() == "exit code 0"
    assert condition.check(0, "", tmp_path).passed
    assert not condition.check(1, "", tmp_path).passed


# (condition, exit code, stdout, passes)
PHRASES = [
    ("exit code 0", 0, "", True),
    ("exit code 0", 2, "", False),
    ("exit code 3", 3, "", True),
    ("exit code 3", 0, "", False),
    ("exit code is 1", 1, "", True),
    ("exit code is 1", 0, "", False),
    ("exits with 4", 4, "", True),
    ("exits with 4", 0, "", False),
    ("output contains ok", 0, "all ok\n", True),
    ("output contains ok", 0, "all fine\n", False),
    ("output does not contain Traceback", 0, "fine\n", True),
    ("output does not contain Traceback", 0, "x\nTraceback (most recent call last):\n", False),
    ("output matches ^\\d+ passed$", 0, "collected\n3 passed\n", True),
    ("output matches ^\\d+ passed$", 0, "3 passed, 1 failed\n", False),
    ("output is empty", 0, " \n", True),
    ("output is empty", 0, "something\n", False),
    ("output is not empty", 0, "something\n", True),
    ("output is not empty", 0, "\n", False),
]


@pytest.mark.parametrize(("text", "exit_code", "stdout", "passes"), PHRASES)
def test_each_phrase_passes_and_fails(
    text: str, exit_code: int, stdout: str, passes: bool, tmp_path: Path
) -> None:
    assert check(text, exit_code, stdout, tmp_path) is passes


def test_file_path_exists_and_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "report.json").write_text("{}")
    assert check("file build/report.json exists", 0, "", tmp_path)
    assert not check("file build/missing.json exists", 0, "", tmp_path)
    assert check("file build/missing.json does not exist", 0, "", tmp_path)
    assert not check("file build/report.json does not exist", 0, "", tmp_path)
    assert check(f"file '{tmp_path / 'build'}' exists", 0, "", tmp_path)


def test_file_exists_needs_printed_paths_that_all_exist(tmp_path: Path) -> None:
    (tmp_path / "log.md").write_text("x")
    assert check("file exists", 0, "log.md\n", tmp_path)
    assert check("file exists", 0, f"{tmp_path / 'log.md'}\n\n", tmp_path)
    assert not check("file exists", 0, "log.md\nother.md\n", tmp_path)


def test_file_exists_fails_when_the_command_prints_nothing(tmp_path: Path) -> None:
    # what `ls missing | head -1` does: prints nothing and exits 0
    condition = parse_condition("file exists")
    assert isinstance(condition, Condition)
    result = condition.check(0, "", tmp_path)
    assert not result.passed
    assert result.actual == "the command printed no path"


def test_output_conditions_also_require_exit_code_zero(tmp_path: Path) -> None:
    condition = parse_condition("output is empty")
    assert isinstance(condition, Condition)
    assert condition.describe() == "exit code 0 and output is empty"
    crashed = condition.check(139, "", tmp_path)
    assert not crashed.passed
    assert crashed.actual == "exit code 139"


def test_a_named_exit_code_replaces_the_implicit_zero(tmp_path: Path) -> None:
    condition = parse_condition("output contains usage and exit code 2")
    assert isinstance(condition, Condition)
    assert condition.describe() == "output contains 'usage' and exit code 2"
    assert condition.check(2, "usage: x\n", tmp_path).passed
    assert not condition.check(0, "usage: x\n", tmp_path).passed


def test_joined_conditions_must_all_hold_and_every_failure_is_reported(tmp_path: Path) -> None:
    condition = parse_condition("output contains ok and output does not contain WARN")
    assert isinstance(condition, Condition)
    assert condition.check(0, "ok\n", tmp_path).passed
    result = condition.check(1, "WARN\n", tmp_path)
    assert not result.passed
    assert result.expected == (
        "exit code 0 and output contains 'ok' and output does not contain 'WARN'"
    )
    assert result.actual == (
        "exit code 1; output does not contain 'ok'; output contains 'WARN' (line 1)"
    )


def test_phrases_are_case_insensitive_but_arguments_are_not(tmp_path: Path) -> None:
    assert check("OUTPUT CONTAINS Done", 0, "Done\n", tmp_path)
    assert not check("Output Contains Done", 0, "done\n", tmp_path)
    assert check("Exit Code Is 0", 0, "", tmp_path)


@pytest.mark.parametrize("quote", ["'", '"'])
def test_quoted_arguments_may_hold_and_and_spaces(quote: str, tmp_path: Path) -> None:
    text = f"output contains {quote}salt and output{quote} and exit code 0"
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    assert condition.describe() == "output contains 'salt and output' and exit code 0"
    assert condition.check(0, "salt and output\n", tmp_path).passed


def test_unquoted_argument_runs_to_the_next_phrase(tmp_path: Path) -> None:
    condition = parse_condition("output contains don't and the like and output is not empty")
    assert isinstance(condition, Condition)
    assert condition.describe() == (
        'exit code 0 and output contains "don\'t and the like" and output is not empty'
    )


def test_regex_is_searched_per_line_with_multiline(tmp_path: Path) -> None:
    assert check("output matches '^ok$'", 0, "first\nok\nlast\n", tmp_path)


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        (
            "judge: multiple commits with criterion references",
            "multiple commits with criterion references",
        ),
        ("Judge:exit code 0 within five seconds", "exit code 0 within five seconds"),
        ("JUDGE :  output shows three lines ", "output shows three lines"),
    ],
)
def test_a_judge_is_asked_for_explicitly_and_judges_the_words_after_it(
    text: str, asked: str
) -> None:
    assert parse_condition(text) == NaturalLanguage(asked)


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("exitcode 0", '"exit code N"'),
        ("ouput contains 3 words", '"output contains X"'),
        ("exit code 0 within five seconds", '"exit code N"'),
        ("stdout includes done", '"output contains X"'),
        ("the log file exists somewhere", None),
        ("multiple commits with criterion references", None),
        ("exit code 0 and multiple commits", '"exit code N"'),
    ],
)
def test_text_outside_the_vocabulary_is_an_error_never_a_judge(
    text: str, meant: str | None
) -> None:
    """A typo one letter from the vocabulary must not reach an agent, which could pass it."""
    with pytest.raises(ConditionError) as raised:
        parse_condition(text)
    message = str(raised.value)
    assert "is not in the vocabulary" in message
    assert (f"did you mean {meant}?" in message) if meant else ("did you mean" not in message)
    assert f"'judge: {text}'" in message  # the explicit way, spelled out


@pytest.mark.parametrize(
    "text",
    [
        "exit code 5 or exit code 0",
        "exit code 5 or 0",
        "EXIT CODE 1 OR output contains ok",
        "output contains a or output contains b",
        "exit code 0 and output is empty or file x exists",
    ],
)
def test_or_is_refused_with_what_to_write_instead(text: str) -> None:
    with pytest.raises(ConditionError, match='"or" is not in the vocabulary: every phrase must'):
        parse_condition(text)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("output contains 1 or 2", "1 or 2"),
        ("output contains 'a or output contains b'", "a or output contains b"),
    ],
)
def test_or_inside_an_argument_is_text(text: str, found: str) -> None:
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    assert condition.clauses[-1] == OutputContains(found)


def test_judge_without_words_is_an_error() -> None:
    with pytest.raises(ConditionError, match='says what to judge after "judge:"'):
        parse_condition("judge:  ")


@pytest.mark.parametrize(
    ("text", "advice"),
    [
        ("exit code abc", 'write e.g. "exit code 0"'),
        ("exits with success", 'write e.g. "exit code 0"'),
        ("output matches [unclosed", "not a valid Python regular expression"),
        ("output contains", 'write e.g. "output contains ok"'),
        ("output does not contain", "needs an argument"),
        ("output contains 'unclosed", "is not closed"),
        ('output contains ""', "quoted argument is empty"),
        ("exit code 0 and exit code 1", "more than one exit code"),
        ("file does not exist", "needs the path"),
    ],
)
def test_malformed_vocabulary_says_what_to_write_instead(text: str, advice: str) -> None:
    with pytest.raises(ConditionError) as raised:
        parse_condition(text)
    message = str(raised.value)
    assert message.startswith("pass_condition ")
    assert advice in message
