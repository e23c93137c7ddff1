"""Attacks through another host's stop payload: a stop of a flow of ours that carries the
marks of a host that also runs ``.claude/settings.json`` (Copilot CLI, Cursor), hoping
Claude Code's stop hook steps aside for it and the flow ends unjudged.

Closed by host_registry.left_to_its_host: the hook steps aside only when no flow of ours is
open in the session the payload names, read in the sending host's words (Copilot's
``session_id``/``sessionId``, Cursor's ``conversation_id``); a stop in an open flow is judged
as any, fail-closed, and answered in the sending host's shape. An unreadable pin blocks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hook_transcripts import (
    NO_SETTLING,
    SESSION_ID,
    pinned_flow,
    plugin_data,
    run_hook,
    stop_payload,
)

REPRESENTATIVE = "test_a_copilot_stop_in_a_flow_of_ours_is_judged"
# Copilot's adapter reads the last message from a transcript in its own format, waiting for
# the hooks' settle time while it is not written up to the stop: a Claude Code transcript
# never is, and waiting changes nothing the stop decides (NO_SETTLING).


def _flow(repo: Path, tmp_path: Path) -> Path:
    """An open /implement flow pinned by the real prompt hook, never verified."""
    return pinned_flow(repo).write(tmp_path / "session.jsonl")


def _copilot_stop(transcript: Path, repo: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "session_id": SESSION_ID,
        "timestamp": "2026-11-28T11:18:15.130Z",
        "cwd": str(repo),
        "transcript_path": str(transcript),
        "stop_reason": "end_turn",
        "stop_hook_active": False,
    }


def test_an_honest_claude_code_stop_in_the_flow_is_blocked(repo: Path, tmp_path: Path) -> None:
    """The control: Claude Code's own stop of the unverified flow is blocked."""
    run = run_hook("Stop", stop_payload(_flow(repo, tmp_path), repo))
    assert run.blocked and "have not verified" in run.reason


def test_a_copilot_stop_in_a_flow_of_ours_is_judged(repo: Path, tmp_path: Path) -> None:
    run = run_hook("Stop", _copilot_stop(_flow(repo, tmp_path), repo), env=NO_SETTLING)
    assert run.blocked and "have not verified" in run.reason
    assert set(json.loads(run.stdout)) == {"decision", "reason"}  # Copilot's shape


def test_a_cursor_stop_in_a_flow_of_ours_is_judged(repo: Path, tmp_path: Path) -> None:
    """The same class through Cursor's payload: the session is its conversation_id, the
    answer a follow-up (Cursor cannot be refused), never nothing."""
    _flow(repo, tmp_path)
    cursor_stop = {
        "conversation_id": SESSION_ID,
        "generation_id": "g-1",
        "hook_event_name": "stop",
        "workspace_roots": [str(repo)],
        "status": "completed",
        "loop_count": 0,
    }
    run = run_hook("Stop", cursor_stop)
    answer = json.loads(run.stdout)
    assert set(answer) == {"followup_message"}
    assert "not let through" in answer["followup_message"]


def test_a_copilot_stop_with_a_damaged_pin_blocks(repo: Path, tmp_path: Path) -> None:
    """Whether a flow is open cannot be told: in doubt, inside."""
    transcript = _flow(repo, tmp_path)
    (flow_file,) = plugin_data().rglob("flow.json")
    flow_file.write_text("{damaged")
    run = run_hook("Stop", _copilot_stop(transcript, repo), env=NO_SETTLING)
    assert run.blocked, run.stdout
