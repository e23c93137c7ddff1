"""Pass conditions under hostile input: a catastrophic regex ends at the criterion's
timeout, long conditions parse to the same clauses as short ones, and shapes that used to
backtrack quadratically are parsed correctly."""

from __future__ import annotations

import concurrent.futures
import re
import signal
from pathlib import Path

import pytest

from pytest_acceptance.model import Criterion, Location, Method, RunContext, Status
from pytest_acceptance.run.bash import run_criterion
from pytest_acceptance.run.conditions import (
    Condition,
    ConditionError,
    FileAt,
    NaturalLanguage,
    OutputContains,
    parse_condition,
)
from pytest_acceptance.run.regex_deadline import RegexTimeout, search_within

EVIL = parse_condition("output matches ^(a+)+$")
EVIL_INPUT = "a" * 40 + "b"  # 2**40 ways to split the a's: hours of backtracking


def test_a_catastrophic_regex_fails_at_its_deadline(tmp_path: Path) -> None:
    assert isinstance(EVIL, Condition)
    check = EVIL.check(0, EVIL_INPUT, tmp_path, 0.5)
    assert not check.passed
    assert "did not finish within 0.5 s" in check.actual


def searches() -> list[object]:
    pattern = re.compile(r"^\d+ passed$", re.MULTILINE)
    answers: list[object] = [
        search_within(pattern, "x\n3 passed\n", 30),
        search_within(pattern, "3 passed, 1 failed\n", 30),
    ]
    try:
        search_within(re.compile("^(a+)+$"), EVIL_INPUT, 0.2)
    except RegexTimeout as timeout:
        answers.append(str(timeout))
    return answers


EXPECTED = [True, False, "did not finish within 0.2 s"]


def test_the_search_under_an_alarm_answers_like_re_search() -> None:
    """The main thread, SIGALRM unused: the search runs in process, interrupted."""
    assert searches() == EXPECTED
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL  # left as found


def test_the_search_in_a_forked_child_answers_like_re_search() -> None:
    """Another thread cannot use signals: the search runs in a child killed at the
    deadline."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(searches).result() == EXPECTED


def test_a_project_alarm_handler_is_left_alone() -> None:
    """pytest-timeout and the like own SIGALRM: the child process is used instead."""
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        assert searches() == EXPECTED
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert fired == []


def test_a_bash_criterion_with_a_catastrophic_regex_fails_within_its_timeout(
    tmp_path: Path,
) -> None:
    criterion = Criterion(
        id="AC-1",
        title="regex",
        method=Method.BASH,
        location=Location(tmp_path / "spec.md", 3),
        command=f"printf '{EVIL_INPUT}'",
        pass_condition="output matches ^(a+)+$",
        timeout=2,
        retries=0,
    )
    result = run_criterion(criterion, RunContext(tmp_path))
    assert result.status is Status.FAILED
    assert "did not finish within 2 s" in result.message


def test_quoted_ands_in_a_long_condition_stay_one_argument() -> None:
    argument = " and output contains y" * 400  # each "and" would have rescanned the prefix
    condition = parse_condition(f'output contains "{argument.strip()}"')
    assert isinstance(condition, Condition)
    assert condition.clauses[1] == OutputContains(argument.strip())


@pytest.mark.parametrize(
    ("text", "clause"),
    [
        ("file a" + " " * 5_000 + "exists", FileAt("a")),
        ("file a" + " " * 5_000 + "does not exist", FileAt("a", negated=True)),
        ("output contains a" + " " * 5_000 + "and output contains b", OutputContains("b")),
    ],
)
def test_long_blank_runs_parse_to_the_same_clauses(text: str, clause: object) -> None:
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    assert clause in condition.clauses


@pytest.mark.parametrize(
    "text", ["file a" + " " * 5_000 + "x", "exit code " + " " * 5_000 + "1 and more"]
)
def test_long_blank_runs_outside_the_vocabulary_are_an_error_quickly(text: str) -> None:
    with pytest.raises(ConditionError, match="is not in the vocabulary"):
        parse_condition(text)


def test_many_quoted_ors_are_read_in_linear_time() -> None:
    text = 'output contains "' + "a or output " * 800 + '"'
    condition = parse_condition(text)
    assert isinstance(condition, Condition)
    assert not isinstance(condition, NaturalLanguage)


def test_an_exit_code_beyond_any_process_is_an_error_not_a_crash() -> None:
    with pytest.raises(ConditionError, match="not a number a process can exit with"):
        parse_condition("exit code " + "9" * 5_000)


def test_checks_on_a_large_output_answer_as_on_a_small_one(tmp_path: Path) -> None:
    big = "line\n" * 2_000_000 + "needle at the end\n"
    for text, passes in [
        ("output contains needle", True),
        ("output does not contain needle", False),
        ("output is not empty", True),
        ("output is empty", False),
        ("output matches ^needle", True),
    ]:
        condition = parse_condition(text)
        assert isinstance(condition, Condition)
        check = condition.check(0, big, tmp_path, 60)
        assert check.passed is passes, (text, check.actual)
    found = parse_condition("output does not contain needle")
    assert isinstance(found, Condition)
    assert "(line 2000001)" in found.check(0, big, tmp_path, 60).actual
