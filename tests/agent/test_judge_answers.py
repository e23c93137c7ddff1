"""Judge answers are strict JSON: a repeated key, NaN, a huge number, excessive nesting or
size is a malformed answer (re-dispatched once, then an error), never a pass and never an
exception outside the contract."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_acceptance.agent.backends import ClaudeBackend, CommandBackend, Dispatch, DispatchError
from pytest_acceptance.agent.prompt import (
    ANSWER_TEXT_LIMIT,
    MalformedVerdict,
    parse_verdict_text,
)
from pytest_acceptance.agent.settings import AgentSettings
from pytest_acceptance.agent.verifier import AgentVerifier
from pytest_acceptance.model import Criterion, Location, Method, RunContext, Status

ISSUE = {"location": "src/a.py:3", "expected": "AppError", "actual": "Error()"}
FAIL_THEN_PASS = (
    '{"status": "fail", "summary": "broken", "issues": [' + json.dumps(ISSUE) + "], "
    '"status": "pass", "issues": []}'
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (FAIL_THEN_PASS, "repeats the key 'status'"),
        ('{"status": "pass", "summary": "a", "summary": "b", "issues": []}', "repeats the key"),
        ('{"status": "fail", "summary": "s", "issues": [' + "[" * 100_000, "levels deep"),
        ("[" * 100_000 + "]" * 100_000, "levels deep"),  # was a RecursionError
        ('{"status": "pass", "summary": "s", "issues": [], "n": NaN}', "NaN"),
        ('{"status": "pass", "summary": "s", "issues": [], "n": ' + "9" * 5_000 + "}", "digits"),
        (
            '{"status": "pass", "summary": "' + "x" * ANSWER_TEXT_LIMIT + '", "issues": []}',
            "at most",
        ),
    ],
)
def test_hostile_answers_are_malformed(text: str, reason: str) -> None:
    with pytest.raises(MalformedVerdict, match=reason):
        parse_verdict_text(text)


def test_brackets_and_escaped_quotes_inside_strings_do_not_count_as_nesting() -> None:
    summary = '[[[[ \\" {{{{ ' * 20
    verdict = parse_verdict_text(f'{{"status": "pass", "summary": "{summary}", "issues": []}}')
    assert verdict.passed


def test_a_judge_answering_fail_then_pass_in_one_object_is_an_error_never_a_pass(
    tmp_path: Path,
) -> None:
    """The command backend, for real: a judge process prints the duplicate-key answer on
    both dispatches; the criterion ends in an error after one re-dispatch."""
    answer = tmp_path / "answer.json"
    answer.write_text(FAIL_THEN_PASS)
    calls = tmp_path / "calls.log"
    script = (
        "import sys; sys.stdin.read(); "
        f"open({str(calls)!r}, 'a').write('call\\n'); print(open({str(answer)!r}).read())"
    )
    settings = AgentSettings(
        backend=CommandBackend([sys.executable, "-c", script]),
        unavailable="",
        model=None,
        wave=1,
        cache=False,
        log_path=None,
    )
    criterion = Criterion(
        id="AC-1",
        title="judged",
        method=Method.SUBAGENT,
        location=Location(tmp_path / "spec.md", 3),
        checks=("no raw Error()",),
        timeout=60,
    )
    result = AgentVerifier(settings).pytest_acceptance_run(criterion, RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert "repeats the key 'status'" in result.message
    assert calls.read_text().count("call") == 2


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        ('{"type": "result", "x": ' + "[" * 50_000 + "]" * 50_000 + "}", "levels deep"),
        ('{"type": "result", "subtype": "success", "type": "x"}', "repeats the key"),
    ],
)
def test_the_claude_backend_reads_its_result_as_strict_json(
    tmp_path: Path, stdout: str, reason: str
) -> None:
    """A stand-in executable in place of `claude` prints a hostile result object (the
    real CLI cannot be made to print one); the dispatch fails cleanly, it never raises
    RecursionError or takes the last repeated key."""
    printed = tmp_path / "stdout.json"
    printed.write_text(stdout)
    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\ncat {printed}\n")
    fake.chmod(0o755)
    request = Dispatch(prompt="p", cwd=tmp_path, timeout=60)
    with pytest.raises(DispatchError, match=reason):
        ClaudeBackend(str(fake)).dispatch(request)
