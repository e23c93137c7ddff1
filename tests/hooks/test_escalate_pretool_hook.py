"""The PreToolUse gate on /escalate (and /done): only after /verify within the pinned flow, and
on the gate's own verification run of the pinned spec -- never on the agent's verdict.json.

The transcript ends, as in the real CLI, with the escalate call itself (a tool_use whose
result does not exist yet) when the hook runs.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from hook_transcripts import (
    NO_SETTLING,
    TranscriptBuilder,
    criterion,
    make_fail,
    make_pass,
    pretool_payload,
    run_hook,
    write_verdict,
)

from pytest_acceptance.gate import isolation

ESCALATE = "pytest-acceptance:escalate"


def gate(builder: TranscriptBuilder, repo: Path, tmp_path: Path, skill: str = ESCALATE) -> object:
    call = builder.skill(skill, "AC-1 /tmp/implement-log-1.md", outcome="pending")
    transcript = builder.write(tmp_path / "session.jsonl")
    return run_hook("PreToolUse", pretool_payload(transcript, repo, skill, "AC-1", call))


def let_through_saying_the_level(result: object) -> None:
    """An allowed /done or /escalate: the answer only says the isolation level (what the
    gate's run saw at full, what is left open below it)."""
    assert getattr(result, "raw", None) == {"systemMessage": isolation.current().said}


def flow(repo: Path) -> TranscriptBuilder:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.tool("Bash", {"command": "make"}, "")
    return builder


def test_blocks_without_verify(repo: Path, tmp_path: Path) -> None:
    result = gate(flow(repo), repo, tmp_path)
    assert result.denied
    assert "Must call /pytest-acceptance:verify before /pytest-acceptance:escalate" in (
        result.deny_reason
    )


def test_allows_after_verify(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = flow(repo)
    builder.verify(spec)
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    result = gate(builder, repo, tmp_path)
    assert not result.denied, result.deny_reason
    let_through_saying_the_level(result)


def test_waits_until_the_transcript_holds_the_call(repo: Path, spec: Path, tmp_path: Path) -> None:
    """The CLI writes its transcript lazily: under load the PreToolUse hook for /escalate
    can start before the /verify just before it (and the call itself) are on disk. The hook
    waits until the transcript holds the call it judges, instead of denying "Must call
    /verify" on a stale file; with no wait, the same stale file is denied."""
    builder = flow(repo)
    stale = builder.write(tmp_path / "stale.jsonl")
    builder.verify(spec)
    call = builder.skill(ESCALATE, "AC-1", outcome="pending")
    later = builder.write(tmp_path / "later.jsonl")
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    path = tmp_path / "session.jsonl"
    path.write_bytes(stale.read_bytes())
    payload = pretool_payload(path, repo, ESCALATE, "AC-1", call)

    writer = threading.Thread(target=lambda: (time.sleep(0.4), os.replace(later, path)))
    writer.start()
    result = run_hook("PreToolUse", payload)
    writer.join()
    assert not result.denied, result.deny_reason

    # A transcript only grows: the stale copy is another file, not this one cut back (the
    # hooks pin what they read of each transcript, and a shorter one is tampering).
    again = tmp_path / "session-again.jsonl"
    again.write_bytes(stale.read_bytes())
    payload = pretool_payload(again, repo, ESCALATE, "AC-1", call)
    quick = run_hook("PreToolUse", payload, NO_SETTLING)
    assert "Must call /pytest-acceptance:verify" in quick.deny_reason


def test_denies_without_an_implement_flow(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.prompt("escalate something")
    result = gate(builder, repo, tmp_path)
    assert result.denied
    assert "No /implement in progress" in result.deny_reason


def test_verify_from_a_previous_flow_does_not_count(repo: Path, spec: Path, tmp_path: Path) -> None:
    """A /verify before the current /implement is not this flow's (the first flow named a
    missing spec, so the second /implement replaced it)."""
    builder = TranscriptBuilder(repo)
    builder.implement("specs/missing.md")
    builder.verify(spec)
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    builder.implement("specs/feature.md")
    result = gate(builder, repo, tmp_path)
    assert result.denied
    assert "Must call /pytest-acceptance:verify" in result.deny_reason


@pytest.mark.parametrize("outcome", ["denied", "refused", "pending"])
def test_verify_that_never_ran_does_not_count(
    repo: Path, spec: Path, tmp_path: Path, outcome: str
) -> None:
    builder = flow(repo)
    builder.verify(spec, outcome=outcome)
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    assert gate(builder, repo, tmp_path).denied


def test_verify_in_a_sidechain_does_not_count(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = flow(repo)
    builder.verify(spec, sidechain=True)
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    assert gate(builder, repo, tmp_path).denied


def test_escalation_needs_no_verdict_file(repo: Path, spec: Path, tmp_path: Path) -> None:
    """The evidence is the gate's own run of the pinned spec on this (failing) tree."""
    builder = flow(repo)
    builder.verify(spec)
    assert not (repo / ".acceptance" / "verdict.json").exists()
    assert not gate(builder, repo, tmp_path).denied


def test_escalation_on_a_tree_that_passes_is_denied_whatever_verdict_json_says(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """A forged failing verdict does not make an escalation: every criterion passes in the
    gate's own run, so the way out is /done."""
    builder = flow(repo)
    builder.verify(spec)
    make_pass(repo)
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    result = gate(builder, repo, tmp_path)
    assert result.denied
    assert "every criterion pinned at /implement passes" in result.deny_reason
    assert "/pytest-acceptance:done" in result.deny_reason


def test_done_is_denied_with_the_failing_criteria(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = flow(repo)
    builder.verify(spec)
    make_pass(repo)  # the agent's verdict.json says pass ...
    make_fail(repo)  # ... but the tree fails
    result = gate(builder, repo, tmp_path, skill="pytest-acceptance:done")
    assert result.denied
    assert "AC-1 works (failed" in result.deny_reason


def test_done_on_a_passing_tree_is_allowed(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = flow(repo)
    builder.verify(spec)
    make_pass(repo)
    let_through_saying_the_level(gate(builder, repo, tmp_path, skill="pytest-acceptance:done"))


@pytest.mark.parametrize("status", ["pass", "fail", "manual", "error"])
def test_any_verification_status_allows_escalation(
    repo: Path, spec: Path, tmp_path: Path, status: str
) -> None:
    builder = flow(repo)
    builder.verify(spec)
    write_verdict(repo, spec, status, [criterion(spec, "AC-1", "manual")], complete=False)
    assert not gate(builder, repo, tmp_path).denied


def test_leading_slash_is_gated_too(repo: Path, tmp_path: Path) -> None:
    assert gate(flow(repo), repo, tmp_path, skill="/pytest-acceptance:escalate").denied


def test_bare_escalate_is_gated_inside_our_flow(repo: Path, tmp_path: Path) -> None:
    assert gate(flow(repo), repo, tmp_path, skill="escalate").denied


def test_bare_escalate_outside_our_flow_is_left_alone(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.prompt("escalate the ticket")
    assert gate(builder, repo, tmp_path, skill="escalate").output is None


@pytest.mark.parametrize(
    "skill",
    [
        "pytest-acceptance:verify",
        "pytest-acceptance:implement",
        "other-plugin:escalate",
        "pytest-acceptance:escalate-later",
        "dataviz",
    ],
)
def test_other_skills_pass_untouched(repo: Path, tmp_path: Path, skill: str) -> None:
    assert gate(flow(repo), repo, tmp_path, skill=skill).output is None


def test_other_tools_pass_untouched(repo: Path, tmp_path: Path) -> None:
    transcript = flow(repo).write(tmp_path / "session.jsonl")
    payload = pretool_payload(transcript, repo, ESCALATE)
    payload["tool_name"] = "Bash"
    payload["tool_input"] = {"command": "echo pytest-acceptance:escalate"}
    assert run_hook("PreToolUse", payload).output is None


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        ("", "empty stdin"),
        ("{oops", "not JSON"),
        ("[]", "expected an object"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_garbage_input_exits_zero_with_a_message(stdin: str | bytes, words: str) -> None:
    result = run_hook("PreToolUse", stdin)
    assert not result.denied
    assert words in result.message


@pytest.mark.parametrize(
    "tool_input", [None, "pytest-acceptance:escalate", {"skill": 7}, {"skill": None}, []]
)
def test_wrong_tool_input_types_pass_untouched(tmp_path: Path, tool_input: object) -> None:
    payload = {"tool_name": "Skill", "tool_input": tool_input, "transcript_path": str(tmp_path)}
    assert run_hook("PreToolUse", payload).output is None


@pytest.mark.parametrize("transcript", [None, 12, "/nonexistent/session.jsonl"])
def test_unreadable_transcript_denies_our_escalate(repo: Path, transcript: object) -> None:
    payload = pretool_payload(Path("x"), repo, ESCALATE)
    payload["transcript_path"] = transcript
    result = run_hook("PreToolUse", payload)
    assert result.denied
    assert "cannot confirm that /pytest-acceptance:verify ran" in result.deny_reason


def test_garbage_transcript_lines_are_skipped(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = flow(repo)
    builder.raw("\x00 not json at all")
    builder.raw('{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Skill",')
    builder.verify(spec)
    builder.raw("[]")
    write_verdict(repo, spec, "fail", [criterion(spec, "AC-1", "failed")])
    assert not gate(builder, repo, tmp_path).denied
