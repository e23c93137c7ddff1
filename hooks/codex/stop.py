"""Codex Stop hook: in an /implement flow, a stop goes through only on the gate's own run.

Every stop of the flow is a claim of done, or an escalation when the last message has a line
starting with ``ESCALATE:`` (host_codex.py). The gate (gate.py) runs the spec pinned at the
user's prompt on the current tree: done needs every criterion to pass (and the spec and the
criteria's tests as pinned), an escalation needs a real run. A refusal blocks with the
reason; the gate counts its own blocks (Codex has no cap) and past the cap lets the stop
through FORCED, NOT verified, recorded. Inside a flow an error blocks too (counted the same).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.claude import caps, gate, hook_io, host_codex, host_registry
from pytest_acceptance.claude.flow_state import Flow
from pytest_acceptance.claude.transcript import BLOCK_TAG

DEADLINE = 840  # seconds (ACCEPTANCE_HOOK_DEADLINE); the hook's timeout is 900
_SEEN: dict[str, Any] = {}


def main() -> int:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", DEADLINE))
    host_codex.use_codex_state()
    started = time.time()
    payload = host_registry.take(host_codex.ADAPTER, hook_io.read_payload(sys.stdin.buffer.read()))
    if payload is None:  # never: no other host runs Codex's hooks files
        return 0
    _SEEN["payload"] = payload
    session_id = hook_io.session_id(payload)
    flow = Flow.load(session_id) if session_id else None
    _SEEN["pin"] = flow
    problems = host_codex.trust_problems(
        host_codex.hooks_file_of(hook_io.text_field(payload, "cwd"))
    )
    if problems:
        hook_io.tell_user(host_codex.trust_warning(problems))
    if flow is None or not flow.is_open:
        return 0
    escalating = host_codex.escalates(hook_io.text_field(payload, "last_assistant_message"))
    skill = "escalate" if escalating else "done"
    reason, fingerprint = _judge(flow, skill)
    if reason is None:
        flow.note_terminal(skill, fingerprint)
        flow.record_stop("allow", started)
        outcome = host_codex.VERIFIED if skill == "done" else host_codex.ESCALATED
        message = f"pytest-acceptance: the /implement flow for {flow.spec_path} ended {outcome}."
        host_codex.record_outcome(payload, outcome, message, Path(flow.repo))
        hook_io.tell_user(message)
        return 0
    block_or_force(flow, payload, reason, started)
    return 0


def _judge(flow: Flow, skill: str) -> tuple[str | None, str | None]:
    if flow.problem is not None:
        if skill == "escalate":
            return None, None
        return (
            f"This /implement flow has no pinned spec to verify ({flow.problem}): it cannot end "
            f"as done. Escalate: a message whose first line starts with {host_codex.ESCALATE_MARK}"
        ), None
    deadline_at = time.monotonic() + min(gate.deadline_seconds(), DEADLINE - 60)
    # Never a stored result: this decision is made on a run of this moment's tree.
    reason, fingerprint = gate.judge(flow, skill, deadline_at, reuse=False)
    if reason is None:
        return None, fingerprint
    reason = host_codex.in_codex_words(reason)
    if skill == "escalate":
        return reason, None
    return (
        f"{reason} Keep working on exactly that, then finish again. If you are genuinely stuck, "
        f"end with a message whose first line starts with {host_codex.ESCALATE_MARK} and give "
        "the evidence."
    ), None


def block_or_force(flow: Flow, payload: dict[str, Any], reason: str, started: float) -> None:
    """Block the stop, counting the block; past the cap, let it through FORCED and recorded."""
    count = host_codex.StopCount.of(flow).after_block(_fingerprint(flow))
    why = host_codex.force_reason(count)
    if why is None:
        count.save(flow)
        flow.record_stop("block", started)
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
        return
    message = host_codex.record_forced(payload, flow, why, reason)
    flow.data["forced"] = {"at": time.time(), "why": why}
    flow.close(f"forced: {why}")
    hook_io.tell_user(message)


def _fingerprint(flow: Flow) -> str | None:
    try:
        return gate.fingerprint(flow.repo, time.monotonic() + 60, flow.hashes_file)
    except Exception:  # no fingerprint: every block counts as one without progress
        return None


def fail_closed(error: BaseException) -> None:
    """Inside a flow an error blocks (counted, so it never traps); outside, it is told."""
    hook_io.cancel_deadline()
    flow = _SEEN.get("pin")
    reason = f"The stop hook could not check this stop ({error}), so it is not let through."
    if not isinstance(flow, Flow) or not flow.is_open:
        if "pin" in _SEEN:
            hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        else:  # the state could not be read: whether a flow is open is unknown
            _block_unknown(reason)
        return
    try:
        block_or_force(flow, _SEEN.get("payload") or {}, reason, time.time())
    except Exception:
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})


def _block_unknown(reason: str) -> None:
    """Block a stop whose flow state is unknown -- counted too, since Codex has no cap."""
    payload = _SEEN.get("payload") or {}
    count = host_codex.count_fault_block(hook_io.session_id(payload))
    why = host_codex.fault_force_reason(count, payload.get("stop_hook_active") is True)
    if why is None:
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
        return
    cwd = hook_io.text_field(payload, "cwd") or os.getcwd()
    repo = hook_io.git_toplevel(Path(cwd)) or Path(cwd)
    message = f"{caps.FORCED_PREFIX}: {why}. {reason}"
    host_codex.record_outcome(payload, host_codex.FORCED, message, repo)
    hook_io.tell_user(f"pytest-acceptance: {message}")


if __name__ == "__main__":
    hook_io.run(main, fail_closed)
