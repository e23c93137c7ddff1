"""PreToolUse hook on the Skill tool: /done and /escalate only on the gate's own evidence.

As specs/implement-skill-system.md has it: no /implement in progress -> deny /escalate; no
/verify since the pinned /implement -> deny. Evidence over claims: the gate (gate.py) then
runs the spec pinned at /implement on the current tree itself -- /done is let through only
when every pinned criterion passes there (and the spec and the criteria's tests are as
pinned), /escalate when that run really ran the criteria (any status: being stuck is what
/escalate is for). A denial names the failing criteria and the next step.

The "Skill" matcher fires for every skill, so everything but our done/escalate passes
untouched. A bare "done"/"escalate" may resolve to ours (the CLI resolves bare names when
unambiguous): it is gated inside a flow of ours and left alone outside of one. Inside a
flow an error or the deadline denies with the reason; outside one, the call goes through.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.claude import gate, hook_io, isolation, pinned_flow
from pytest_acceptance.claude.flow_state import Flow as PinnedFlow
from pytest_acceptance.claude.transcript import Transcript, skill_name

DEADLINE = 840  # seconds (ACCEPTANCE_HOOK_DEADLINE); the hook's timeout in hooks.json is 900
TAG = "[pytest-acceptance gate]"
_SEEN: dict[str, Any] = {}


def main() -> int:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", DEADLINE))
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    _SEEN["payload"] = payload
    parsed = _requested_skill(payload)
    if parsed is None or parsed[0] not in ("done", "escalate"):
        return 0
    skill, qualified = parsed
    session_id = hook_io.session_id(payload)
    pin = PinnedFlow.load(session_id) if session_id else None
    _SEEN["pin"] = pin
    try:
        transcript = Transcript.load_for(payload)  # once it holds this very call
    except hook_io.HookInputError as error:
        if pin is not None and pin.is_open:
            raise
        if qualified and skill == "escalate":
            deny(f"{error}: cannot confirm that /pytest-acceptance:verify ran in this flow.")
        return 0
    situation = pinned_flow.resolve(pin, transcript)
    if situation.tamper is not None:
        deny(situation.tamper)
    elif situation.flow is None or situation.pin is None or not situation.pin.is_open:
        if qualified and skill == "escalate":
            deny(
                "No /implement in progress: /pytest-acceptance:escalate escalates an /implement "
                "flow, after /pytest-acceptance:verify. The user starts one with "
                "/pytest-acceptance:implement <spec>."
            )
    elif situation.pin.problem is not None:
        isolation.tell_if_open()
        _unverifiable(skill, situation.pin)
    else:
        isolation.tell_if_open()
        problem = _problem(skill, situation.flow.called("verify"), situation.pin)
        if problem is not None:
            deny(problem)
    return 0


def _unverifiable(skill: str, pin: PinnedFlow) -> None:
    """A flow whose /implement pinned no spec has nothing the gate can verify: /done is
    refused, whatever the spec now holds (it may have been put back since); /escalate,
    which hands the flow to a human, is let through and ends it."""
    if skill == "done":
        deny(
            f"This /implement flow has no pinned spec to verify ({pin.problem}), so "
            "/pytest-acceptance:done cannot be verified in it. Call "
            "/pytest-acceptance:escalate with what you found; the user starts a new "
            "/implement with the right spec."
        )
    else:
        pin.record_terminal(skill, None)


def _requested_skill(payload: dict[str, Any]) -> tuple[str, bool] | None:
    if payload.get("tool_name") != "Skill":
        return None
    tool_input = payload.get("tool_input")
    skill = tool_input.get("skill") if isinstance(tool_input, dict) else None
    return skill_name(skill) if isinstance(skill, str) else None


def _problem(skill: str, verified: bool, pin: PinnedFlow) -> str | None:
    if not verified:
        return (
            f"Must call /pytest-acceptance:verify before /pytest-acceptance:{skill}: {skill} "
            "only with the evidence of a verification run of the spec in this /implement flow."
        )
    deadline_at = time.monotonic() + min(gate.deadline_seconds(), DEADLINE - 60)
    # Never a stored result: whatever the agent did since, outside any fingerprint too (a file
    # outside the project, an empty folder), this decision is made on a run of this moment.
    reason, fingerprint = gate.judge(pin, skill, deadline_at, reuse=False)
    if reason is None:
        pin.record_terminal(skill, fingerprint)
    return reason


def deny(reason: str) -> None:
    hook_io.deny_tool_call(f"{TAG} {reason}")


def fail_closed(error: BaseException) -> None:
    """Inside a flow (or when the state cannot tell), an error denies the call; outside any
    flow it goes through with a message. Unreadable input names no tool: the session's pin
    (CLAUDE_CODE_SESSION_ID) decides."""
    hook_io.cancel_deadline()
    payload = _SEEN.get("payload")
    parsed = _requested_skill(payload) if payload is not None else None
    if payload is not None and (parsed is None or parsed[0] not in ("done", "escalate")):
        return
    if pinned_flow.inside_flow_in_doubt(_SEEN) is None:
        hook_io.tell_user(f"pytest-acceptance gate: {error}. The tool call was not checked.")
        return
    deny(f"The gate could not check this call ({error}), so it is not let through.")


if __name__ == "__main__":
    hook_io.run(main, fail_closed)  # inside a flow, never fail open
