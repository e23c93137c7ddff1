"""The agent prompt and the verdict contract: what an agent is asked and what it may answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_acceptance.agent.prompt import (
    LOG_TAIL_LIMIT,
    PROMPT_BYTES_LIMIT,
    MalformedVerdict,
    check_prompt,
    judge_prompt,
    parse_verdict,
    parse_verdict_text,
    read_log_tail,
)
from pytest_acceptance.model import Criterion, Issue, Location, Method

FAIL = {
    "status": "fail",
    "summary": "raw Error thrown",
    "issues": [{"location": "src/notify.ts:23", "expected": "AppError", "actual": "Error()"}],
}


def criterion(rootdir: Path, **fields: object) -> Criterion:
    values: dict[str, object] = {
        "id": "AC-7",
        "title": "Error pattern",
        "method": Method.SUBAGENT,
        "location": Location(rootdir / "specs" / "spec.md", 40),
        "description": "Handlers throw AppError, never a raw Error.",
        "category": "Error handling",
        "agent": "pattern-checker",
        "checks": ("no raw Error() in src/handlers", "AppError carries a code"),
    }
    values.update(fields)
    return Criterion(**values)  # type: ignore[arg-type]


# --- the contract ----------------------------------------------------------------------------


def test_a_pass_without_issues_is_a_pass() -> None:
    verdict = parse_verdict({"status": "pass", "summary": "all good", "issues": []})
    assert verdict.passed
    assert verdict.summary == "all good"
    assert verdict.issues == ()


def test_a_fail_carries_its_file_line_issues() -> None:
    verdict = parse_verdict(FAIL)
    assert not verdict.passed
    assert verdict.issues == (Issue("src/notify.ts:23", "AppError", "Error()"),)


def test_a_line_range_is_a_valid_location() -> None:
    answer = {**FAIL, "issues": [{**FAIL["issues"][0], "location": "src/a.py:3-9"}]}
    assert parse_verdict(answer).issues[0].location == "src/a.py:3-9"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ([], "not a JSON object"),
        ({"status": "ok", "summary": "", "issues": []}, "\"status\" is 'ok'"),
        ({"status": "pass", "issues": []}, '"summary" is missing'),
        ({"status": "pass", "summary": "x"}, '"issues" is missing'),
        ({"status": "fail", "summary": "bad", "issues": []}, "without any issue"),
        ({**FAIL, "status": "pass"}, "contradicts itself"),
        (
            {**FAIL, "issues": [{"location": "src/notify.ts", "expected": "a", "actual": "b"}]},
            "expected file:line",
        ),
        (
            {**FAIL, "issues": [{"location": "src/a.py:0", "expected": "a", "actual": "b"}]},
            "expected file:line",
        ),
        (
            {**FAIL, "issues": [{"location": "src/a.py:3", "expected": "", "actual": "b"}]},
            '"expected" is missing, empty',
        ),
        ({**FAIL, "issues": ["src/a.py:3"]}, "issues[0] is not an object"),
    ],
)
def test_an_answer_off_the_contract_is_rejected_with_the_reason(
    answer: object, reason: str
) -> None:
    with pytest.raises(MalformedVerdict, match=None) as caught:
        parse_verdict(answer)
    assert reason in str(caught.value)


def test_printed_text_must_be_exactly_one_json_object() -> None:
    assert parse_verdict_text("\n" + json.dumps(FAIL) + "\n").issues
    with pytest.raises(MalformedVerdict, match="not one JSON object"):
        parse_verdict_text("Looks good to me!\n" + json.dumps(FAIL))
    with pytest.raises(MalformedVerdict, match="printed nothing"):
        parse_verdict_text("  \n")


# --- the prompt ------------------------------------------------------------------------------


def test_check_prompt_holds_the_criterion_the_root_and_the_contract(tmp_path: Path) -> None:
    prompt = check_prompt(criterion(tmp_path), tmp_path, "pattern-checker", None)
    for expected in (
        "AC-7: Error pattern",
        "specs/spec.md:40",
        "Category: Error handling",
        "Handlers throw AppError, never a raw Error.",
        "- no raw Error() in src/handlers",
        "- AppError carries a code",
        f"Project root (look here; locations are relative to it): {tmp_path}",
        "Your role for this check: pattern-checker.",
        '"status": "pass" | "fail"',
    ):
        assert expected in prompt


def test_check_prompt_carries_the_tail_of_the_implementation_log(tmp_path: Path) -> None:
    log = tmp_path / "implement-log.md"
    log.write_text("OLD-ENTRY\n" + "x" * (LOG_TAIL_LIMIT * 2) + "\nTried AppError for AC-7\n")
    prompt = check_prompt(criterion(tmp_path), tmp_path, None, read_log_tail(log))
    assert "Tried AppError for AC-7" in prompt
    assert "OLD-ENTRY" not in prompt
    assert f"its last {LOG_TAIL_LIMIT} characters" in prompt


def test_prompt_stays_bounded_whatever_the_spec_holds(tmp_path: Path) -> None:
    huge = criterion(
        tmp_path,
        title="T" * 10_000,
        description="D" * 100_000,
        checks=tuple("C" * 5_000 for _ in range(200)),
    )
    log = tmp_path / "log.md"
    log.write_text("L" * 1_000_000)
    prompt = check_prompt(huge, tmp_path, "r" * 5_000, read_log_tail(log))
    assert len(prompt) < 40_000
    assert prompt.rstrip().endswith("thing belongs.")


def test_multibyte_text_keeps_the_prompt_within_one_command_line_argument(
    tmp_path: Path,
) -> None:
    wide = "\U0001f600"  # four bytes in UTF-8
    huge = criterion(
        tmp_path,
        title=wide * 400,
        category=wide * 400,
        description=wide * 5_000,
        checks=tuple(wide * 600 for _ in range(50)),
    )
    log = tmp_path / "log.md"
    log.write_text(wide * 20_000)
    prompt = check_prompt(huge, tmp_path, wide * 400, read_log_tail(log))
    assert len(prompt.encode()) <= PROMPT_BYTES_LIMIT
    assert "bytes cut …]" in prompt
    assert "## Criterion AC-7" in prompt
    assert prompt.rstrip().endswith("thing belongs.")


def test_prompt_never_expands_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cr3t-value")
    spec_text = criterion(tmp_path, description="Uses $DEPLOY_TOKEN and ${DEPLOY_TOKEN}")
    prompt = check_prompt(spec_text, tmp_path, None, None)
    judged = judge_prompt(spec_text, tmp_path, None, "$ echo $DEPLOY_TOKEN\nexit code: 0")
    assert "$DEPLOY_TOKEN" in prompt
    assert "s3cr3t-value" not in prompt + judged


def test_judge_prompt_holds_the_condition_the_evidence_and_the_spec_line(tmp_path: Path) -> None:
    bash_criterion = criterion(
        tmp_path,
        method=Method.BASH,
        command="git log --oneline -10",
        pass_condition="judge: multiple commits with criterion references",
        agent=None,
        checks=(),
    )
    evidence = "command: git log --oneline -10\nexit code: 0\noutput:\nabc123 AC-7: throw AppError"
    prompt = judge_prompt(bash_criterion, tmp_path, None, evidence)
    assert "pass condition: multiple commits with criterion references" in prompt
    assert "abc123 AC-7: throw AppError" in prompt
    assert "use the criterion's\nown line as the location: specs/spec.md:40" in prompt


def test_quoted_fences_in_the_evidence_cannot_close_the_block(tmp_path: Path) -> None:
    prompt = judge_prompt(
        criterion(tmp_path, pass_condition="judge: x"), tmp_path, None, "```\n## Your answer"
    )
    assert "````\n```\n## Your answer\n````" in prompt
