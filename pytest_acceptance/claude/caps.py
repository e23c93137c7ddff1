"""Never a trap: when the Stop hook's blocks let a stop through anyway, and the record of it.

After ACCEPTANCE_HOOK_MAX_BLOCKS blocks in one flow (default 8, the CLI's own cap), or
ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS blocks in a row answered without any tool call while
stop_hook_active (default 3), the stop goes through — FORCED, NOT verified — in a way machines
see: the hook answers `{"continue": false, "stopReason": "FORCED, NOT verified: ..."}`, which
the CLI reports as `"terminal_reason": "stop_hook_prevented"` in `claude -p --output-format
json` (a verified end says "completed"). The forced stop is recorded, with its reason, in
$CLAUDE_PLUGIN_DATA/forced-stops.jsonl (the plugin's own state, out of the agent's reach while
a flow is open) and in <repo>/.acceptance/forced-stops.jsonl (for the people and CI reading
the project).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pytest_acceptance.claude.flow_state import data_dir
from pytest_acceptance.claude.hook_io import emit, env_int, git_toplevel, text_field
from pytest_acceptance.claude.transcript import BLOCK_TAG, ImplementFlow, Transcript

DEFAULT_MAX_BLOCKS = 8  # Claude Code overrides a 9th consecutive block by itself
DEFAULT_MAX_IDLE_BLOCKS = 3
FORCED_STOPS_RELATIVE = Path(".acceptance") / "forced-stops.jsonl"
FORCED_STOPS_STATE = "forced-stops.jsonl"  # under $CLAUDE_PLUGIN_DATA
FORCED_PREFIX = "FORCED, NOT verified"


def block_or_force(
    reason: str,
    flow: ImplementFlow,
    transcript: Transcript,
    payload: dict[str, Any],
    repo: Path | None = None,
) -> None:
    """Block the stop with `reason`, or, past a cap, let it through FORCED and record it in
    `repo` (the pinned repository; None: the git top level of the payload's cwd)."""
    why = _force_reason(flow, transcript, payload)
    if why is None:
        emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
        return
    spec = flow.spec_path(text_field(payload, "cwd"))
    record = forced_stop_record(payload, spec, why, reason)
    where = " ".join(append_record(path, record) for path in _record_paths(payload, repo))
    message = (
        f"{FORCED_PREFIX}: {why}. The /implement flow for {spec} did not end with verified "
        f"evidence. Still open: {reason} {where}"
    )
    # continue: false ends the session as "stop_hook_prevented" (not "completed"), so a
    # wrapper or CI job reading the CLI's JSON result sees that nothing was verified.
    emit(
        {"continue": False, "stopReason": message, "systemMessage": f"pytest-acceptance: {message}"}
    )


def _force_reason(
    flow: ImplementFlow, transcript: Transcript, payload: dict[str, Any]
) -> str | None:
    blocks = transcript.our_block_offsets(flow.offset)
    cap = max(1, env_int("ACCEPTANCE_HOOK_MAX_BLOCKS", DEFAULT_MAX_BLOCKS))
    # The CLI writes its transcript lazily: the feedback line of the block just before may
    # not be on disk yet. stop_hook_active says that block happened, so it counts too.
    blocked = max(len(blocks), 1 if payload.get("stop_hook_active") is True else 0)
    if blocked >= cap:
        return (
            f"{blocked} stops of this flow were already blocked (ACCEPTANCE_HOOK_MAX_BLOCKS={cap})"
        )
    # stop_hook_active alone never lets a stop through (that would make the guard a one-time
    # speed bump); it marks a retry, and retries without any work in between end the loop.
    if payload.get("stop_hook_active") is not True:
        return None
    idle_cap = max(1, env_int("ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS", DEFAULT_MAX_IDLE_BLOCKS))
    idle = 0
    ends = [*blocks[1:], len(transcript.data)]
    for index in reversed(range(len(blocks))):  # newest first
        start, end = blocks[index], ends[index]
        if transcript.tool_call_between(start, end):
            break
        idle += 1
    if idle >= idle_cap:
        return (
            f"the last {idle} blocks were answered without a single tool call "
            f"(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS={idle_cap})"
        )
    return None


def forced_stop_record(
    payload: dict[str, Any], spec: Path | None, why: str, reason: str
) -> dict[str, Any]:
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "at_epoch": time.time(),
        "session_id": payload.get("session_id"),
        "transcript_path": payload.get("transcript_path"),
        "cwd": payload.get("cwd"),
        "spec": str(spec) if spec else None,
        "forced_because": why,
        "open_reason": reason,
    }


def _record_paths(payload: dict[str, Any], repo: Path | None) -> list[Path]:
    """Where a forced stop is recorded: the plugin's state, then the project's .acceptance/."""
    if repo is None:
        cwd = text_field(payload, "cwd")
        repo = (git_toplevel(Path(cwd)) or Path(cwd)) if cwd else Path.cwd()
    return [data_dir() / FORCED_STOPS_STATE, repo / FORCED_STOPS_RELATIVE]


def append_record(path: Path, record: dict[str, Any]) -> str:
    """Append one JSON line to a record file (a new .acceptance/ folder ignores itself); the
    sentence that says where it went, or why it could not."""
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True)
            if path.parent.name == ".acceptance":
                (path.parent / ".gitignore").write_text("*\n", encoding="utf-8")
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    except OSError as error:
        return f"(Could not record it in {path}: {error}.)"
    return f"(Recorded in {path}.)"
