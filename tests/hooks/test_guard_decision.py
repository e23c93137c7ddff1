"""The guard's decision on one tool call (pytest_acceptance/gate/guard_decision.py), in
process, as one table: a pinned flow in a temporary plugin state, a transcript in the CLI
2.1.328 shape, and the payload PreToolUse sends. The hook script around it, and the real
CLI's calls, are tested in test_guard.py and test_guard_cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import SESSION_ID, TranscriptBuilder, make_repo, pretool
from pinning import open_flow

from pytest_acceptance.gate import flow_state, guard_decision

SPEC = "specs/feature.md"

CASES: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "a write to the code": ("Write", {"file_path": "app.py", "content": "x"}, None),
    "a write to the spec": ("Write", {"file_path": SPEC, "content": "x"}, "protected"),
    "an edit of the spec": (
        "Edit",
        {"file_path": SPEC, "old_string": "a", "new_string": "b"},
        "protected",
    ),
    "a shell write to the spec": ("Bash", {"command": f"echo x > {SPEC}"}, "protected"),
    "a wrapped shell removal of the spec": (
        "Bash",
        {"command": f"timeout 5 rm {SPEC}"},
        "protected",
    ),
    "a shell command that reads": ("Bash", {"command": "pytest -q"}, None),
    "a command that cannot be read": ("Bash", {"command": "echo 'x"}, "cannot be read"),
    "a command asking to leave the sandbox": (
        "Bash",
        {"command": "pytest", "dangerouslyDisableSandbox": True},
        "sandbox",
    ),
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACCEPTANCE_HOOK_GUARD", raising=False)
    return make_repo(tmp_path / "repo")


@pytest.mark.parametrize("name", sorted(CASES))
def test_inside_a_flow_the_guard_decides_by_the_table(
    repo: Path, tmp_path: Path, name: str
) -> None:
    tool, tool_input, refused = CASES[name]
    transcript = open_flow(repo, tmp_path)
    reason = guard_decision.judge(pretool(transcript, repo, tool, tool_input))
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason, reason


@pytest.mark.parametrize("name", sorted(CASES))
def test_outside_a_flow_everything_goes_through(repo: Path, tmp_path: Path, name: str) -> None:
    tool, tool_input, _ = CASES[name]
    transcript = TranscriptBuilder(repo, session_id=SESSION_ID).write(tmp_path / "session.jsonl")
    assert guard_decision.judge(pretool(transcript, repo, tool, tool_input)) is None


def test_switched_off_it_still_notes_a_tool_call_after_the_gate_let_done_through(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note is the gate's, not the guard's: with the guard off, a call after an accepted
    /done still means the stored result may not stand for the next stop."""
    monkeypatch.setenv("ACCEPTANCE_HOOK_GUARD", "0")
    transcript = open_flow(repo, tmp_path)
    flow = flow_state.Flow.load(SESSION_ID)
    assert flow is not None
    flow.note_terminal("done", "tree:1")
    flow.save()
    assert not flow.tool_after_terminal()
    write = ("Write", {"file_path": SPEC, "content": "x"})
    assert guard_decision.judge(pretool(transcript, repo, *write)) is None
    noted = flow_state.Flow.load(SESSION_ID)
    assert noted is not None and noted.tool_after_terminal()
