"""PreToolUse hook on the Skill tool: /escalate only after a verification run in the flow.

Seed 000: no /implement in progress -> deny; no /verify since the last /implement -> deny.
Evidence over claims: the /verify must also have left a verdict of `pytest --acceptance`
for the flow's spec, finished after the flow started (any status: failing is fine, being
stuck is what /escalate is for).

The "Skill" matcher fires for every skill, so everything but our escalate passes untouched.
A bare "escalate" may resolve to ours (the CLI resolves bare names when unambiguous): it is
gated inside an /implement flow of ours and left alone outside of one.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also under -I / -P
import evidence
import hook_io
from transcript import Flow, Transcript, skill_name


def main() -> int:
    try:
        payload = hook_io.read_payload(sys.stdin.buffer.read())
    except hook_io.HookInputError as error:
        hook_io.tell_user(f"pytest-acceptance escalate gate: {error}. Tool call not checked.")
        return 0
    parsed = _requested_skill(payload)
    if parsed is None or parsed[0] != "escalate":
        return 0
    qualified = parsed[1]
    try:
        transcript = Transcript.load(payload.get("transcript_path"))
    except hook_io.HookInputError as error:
        if qualified:
            deny(f"{error}: cannot confirm that /pytest-acceptance:verify ran in this flow.")
        else:
            hook_io.tell_user(f"pytest-acceptance escalate gate: {error}. Not checked.")
        return 0
    flow = transcript.current_flow()
    if flow is None:
        if qualified:
            deny(
                "No /implement in progress: /pytest-acceptance:escalate escalates an /implement "
                "flow, after /pytest-acceptance:verify. The user starts one with "
                "/pytest-acceptance:implement <spec>."
            )
        return 0
    problem = _problem(flow, payload)
    if problem is not None:
        deny(problem)
    return 0


def _requested_skill(payload: dict[str, Any]) -> tuple[str, bool] | None:
    if payload.get("tool_name") != "Skill":
        return None
    tool_input = payload.get("tool_input")
    skill = tool_input.get("skill") if isinstance(tool_input, dict) else None
    return skill_name(skill) if isinstance(skill, str) else None


def _problem(flow: Flow, payload: dict[str, Any]) -> str | None:
    cwd = hook_io.text_field(payload, "cwd")
    spec = flow.spec_path(cwd)
    if not flow.called("verify") or spec is None:
        return evidence.escalation_evidence_problem(flow, spec, None, [])
    verdict, problems = evidence.find_verdict(spec, evidence.evidence_roots(cwd, flow, spec))
    return evidence.escalation_evidence_problem(flow, spec, verdict, problems)


def deny(reason: str) -> None:
    hook_io.emit(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": f"[pytest-acceptance escalate gate] {reason}",
            }
        }
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # a hook bug must not crash the session
        hook_io.tell_user(f"pytest-acceptance escalate gate failed ({error!r}); call not checked.")
        sys.exit(0)
