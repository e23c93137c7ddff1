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

A host with no cap of its own (its contract's ``block_cap`` is None) would loop for ever on
a hook that always blocks: for the flows pinned from the prompt (prompt_flow.py), the gate
counts its own blocks in the pin (:class:`StopCount`: all of them, and the last run on one
unchanged tree), and the blocks of a stop whose state cannot be read beside the state
(:func:`count_fault_block`). A host with a cap of its own lets the stop through after it
whatever the hook answers: the gate's cap for its flows is never above the host's
(:func:`force_reason`), so that stop is the one recorded as forced.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_acceptance.gate.flow_state import Flow, data_dir, session_key
from pytest_acceptance.gate.hook_io import emit, env_int, project_top, session_id, text_field
from pytest_acceptance.gate.hosts import HostContract
from pytest_acceptance.gate.transcript import BLOCK_TAG, ImplementFlow, Transcript

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
        repo = (project_top(Path(cwd)) or Path(cwd)) if cwd else Path.cwd()
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


# --- the gate's own count, on a host that does not cap stop blocks --------------------------

STOP_COUNT_KEY = "stop_count"  # in the pin
FAULT_BLOCKS_FOLDER = "fault-blocks"  # under the state folder, one counter per session


@dataclass(frozen=True)
class StopCount:
    """The Stop blocks of one flow: all of them, and the last run of blocks on one tree."""

    blocks: int
    idle: int
    fingerprint: str | None

    @classmethod
    def of(cls, pin: Flow) -> StopCount:
        """The pin's count, read in its exact shape. A damaged one counts again from zero:
        the count only caps blocks, so that reading blocks longer and never lets a stop
        through; refusing on it instead would trap the session (a stop that cannot be
        checked is blocked and counted with this same record)."""
        raw = pin.data.get(STOP_COUNT_KEY)
        if not isinstance(raw, dict) or set(raw) != {"blocks", "idle", "fingerprint"}:
            return cls(0, 0, None)
        blocks, idle, fingerprint = raw["blocks"], raw["idle"], raw["fingerprint"]
        if not (_is_count(blocks) and _is_count(idle)):
            return cls(0, 0, None)
        if not (fingerprint is None or isinstance(fingerprint, str)):
            return cls(0, 0, None)
        return cls(blocks, idle, fingerprint)

    def after_block(self, fingerprint: str | None) -> StopCount:
        """One more block; a block on the same tree as the last one made no progress."""
        same = fingerprint is not None and fingerprint == self.fingerprint
        return StopCount(self.blocks + 1, self.idle + 1 if same else 1, fingerprint)

    def save(self, pin: Flow) -> None:
        pin.data[STOP_COUNT_KEY] = {
            "blocks": self.blocks,
            "idle": self.idle,
            "fingerprint": self.fingerprint,
        }
        pin.save()


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def force_reason(count: StopCount, host_cap: int | None = None) -> str | None:
    """Why this block is one too many (the stop then goes through, FORCED), or None.
    `host_cap`: the host's own cap on blocks (its contract's), past which it lets the stop
    through whatever the hook answers: the gate's cap is never above it, so the stop the
    host would force is the one the gate records as forced."""
    cap = max(1, env_int("ACCEPTANCE_HOOK_MAX_BLOCKS", DEFAULT_MAX_BLOCKS))
    if host_cap is not None and host_cap < cap:
        cap = host_cap
    if count.blocks > cap:
        setting = f"the host's own cap of {cap} blocks" if cap == host_cap else None
        setting = setting or f"ACCEPTANCE_HOOK_MAX_BLOCKS={cap}"
        return f"{count.blocks - 1} stops of this flow were already blocked ({setting})"
    idle_cap = max(1, env_int("ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS", DEFAULT_MAX_IDLE_BLOCKS))
    if count.idle > idle_cap:
        return (
            f"the last {count.idle - 1} blocks left the working tree as it was "
            f"(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS={idle_cap})"
        )
    return None


def count_fault_block(session_id: str | None) -> int | None:
    """One more block of a stop whose flow state could not be read: the count so far for
    the session, kept beside the state (None when it cannot be kept either)."""
    key = session_key(session_id or "no session id")
    path = data_dir() / FAULT_BLOCKS_FOLDER / f"{key}.json"
    try:
        previous = json.loads(path.read_bytes()).get("blocks")
    except (OSError, ValueError, AttributeError):
        previous = 0
    count = (previous if isinstance(previous, int) and previous >= 0 else 0) + 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"blocks": count}), encoding="utf-8")
    except OSError:
        return None
    return count


def fault_force_reason(
    count: int | None, stop_hook_active: bool, host_cap: int | None = None
) -> str | None:
    """Why a stop the gate cannot check goes through after all, or None to block it. The
    gate's cap is never above the host's own: the stop the host would force unrecorded is
    one the gate forces, and says so."""
    cap = max(1, env_int("ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS", DEFAULT_MAX_IDLE_BLOCKS))
    setting = f"ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS={cap}"
    if host_cap is not None and host_cap < cap:
        cap, setting = host_cap, f"the host's own cap of {host_cap} blocks"
    if count is None:
        return "its blocks cannot be counted either" if stop_hook_active else None
    if count > cap:
        return f"{count - 1} stops were already blocked ({setting})"
    return None


def block_unknown(reason: str, payload: dict[str, Any], host: HostContract) -> str | None:
    """Block a stop whose flow state cannot be read (whether a flow is open is unknown). The
    block is counted beside the state and, past the cap (never above the host's own, which
    would end the session with nothing recorded), the stop goes through: the FORCED message
    is returned, for the caller to record and tell (None: blocked)."""
    count = count_fault_block(session_id(payload))
    active = payload.get("stop_hook_active") is True
    why = fault_force_reason(count, active, host.block_cap)
    if why is None:
        emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
        return None
    return f"{FORCED_PREFIX}: {why}. {reason}"
