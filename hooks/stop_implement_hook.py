"""Stop hook: in an /implement flow, the session stops only on the gate's own evidence.

The decision matrix of specs/implement-skill-system.md, over the flow pinned at /implement
(pin.py) and our skills that really ran after it:

    /implement  /verify  /done  /escalate   decision
    no          -        -      -           allow (not in a flow)
    yes         no       no     no          block: verify first
    yes         yes      no     no          block: the agent's last verdict says what is next
    yes         yes      yes    -           allow, if the gate's own run passes (below)
    yes         yes      -      yes         allow, if the gate's own run is a real run
    yes         no       yes    -           block (suspicious: /done without /verify)
    yes         no       -      yes         block (/escalate without /verify)

Evidence after /done (the later of /done and /escalate decides) is never a file of the
project: the gate (gate.py) runs the spec pinned at /implement on the current tree itself,
or reuses the result it stored for this tree fingerprint (the PreToolUse gate of /done ran
it). A spec changed since /implement, or a criterion's tests weakened, block /done. Extra
layers after a good /done: no unfinished task-list items, and a last message that does not
admit manual or incomplete work.

The pin is the reference (pinned_flow.py): a transcript that no longer shows the open pinned
flow, or shows an /implement the plugin never pinned, blocks. A flow ends once the user
types a new prompt after a /done or /escalate that was let through (prompt_hook.py).

Inside a flow, nothing fails open: an unreadable transcript, a damaged state, an internal
error or the hook's own deadline block with the reason. Never a trap: the block caps of
caps.py let a stop through, FORCED and recorded.
Switches: ACCEPTANCE_HOOK_TODOS=0, ACCEPTANCE_HOOK_CONTRADICTIONS=0 turn the extra layers off.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.claude import agent_verdict as evidence
from pytest_acceptance.claude import background, caps, gate, hook_io, isolation, pinned_flow
from pytest_acceptance.claude.flow_state import Flow as PinnedFlow
from pytest_acceptance.claude.gate_result import CriterionOutcome
from pytest_acceptance.claude.transcript import (
    BLOCK_TAG,
    ImplementFlow,
    SkillEvent,
    Transcript,
    format_epoch,
)

# Phrases that contradict a claim of completion, and their common variants.
CONTRADICTIONS = (
    "requires manual",
    "cannot be automated",
    "could not complete",
    "needs human",
    "manual intervention",
    "needs manual",
    "requires human",
    "couldn't complete",
    "could not be completed",
    "unable to complete",
)
VERIFY, DONE, ESCALATE, LISTED = gate.VERIFY, gate.DONE, gate.ESCALATE, gate.LISTED
DEADLINE = 840  # seconds (ACCEPTANCE_HOOK_DEADLINE); the hook's timeout in hooks.json is 900
_SEEN: dict[str, Any] = {}  # what main() learnt, for the fail-closed handler


def main() -> int:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", DEADLINE))
    started = time.time()  # a tool call noted after this moment is not covered by this stop
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    _SEEN["payload"] = payload
    session_id = hook_io.session_id(payload)
    pin = PinnedFlow.load(session_id) if session_id else None
    _SEEN["pin"] = pin
    try:
        # Once it holds the message that ended this turn: the /done or /escalate just
        # before it is on disk too.
        transcript = Transcript.load_for(payload)
    except hook_io.HookInputError as error:
        if pin is not None and pin.is_open:
            raise  # inside a flow: the fail-closed handler blocks with the reason
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        return 0
    situation = pinned_flow.resolve(pin, transcript)
    if situation.flow is None:
        return 0  # not in an /implement flow
    isolation.tell_if_open()
    reason: str | None
    message: str | None
    if situation.tamper is not None:
        reason, message = situation.tamper, None
    else:
        reason, message = judge(situation.flow, situation.pin, transcript, payload)
    if pin is not None and pin.is_open:  # also writes the terminal the gate let through
        pin.record_stop("allow" if reason is None else "block", started)
    if reason is not None:
        repo = Path(situation.pin.repo) if situation.pin is not None else None
        caps.block_or_force(reason, situation.flow, transcript, payload, repo)
    elif message is not None:
        hook_io.tell_user(message)
    return 0


def _unverifiable(pin: PinnedFlow) -> tuple[str | None, str | None]:
    """A flow whose /implement pinned no spec ends only on the /escalate that hands it to
    a human (pretool_gate_hook records it): never as a verified completion."""
    if isinstance(pin.get("terminal"), dict):
        return None, f"pytest-acceptance: {pin.problem}; the flow was escalated."
    return (
        f"This /implement flow has no pinned spec to verify ({pin.problem}): it cannot end "
        "as done. Call /pytest-acceptance:escalate with what you found; the user starts a "
        "new /implement with the right spec."
    ), None


def judge(
    flow: ImplementFlow, pin: PinnedFlow | None, transcript: Transcript, payload: dict[str, Any]
) -> tuple[str | None, str | None]:
    """(block reason, None) to keep the session going, or (None, message or None) to allow."""
    if pin is None:
        return None, "pytest-acceptance: the flow is not pinned; nothing to enforce."
    if pin.problem is not None:
        return _unverifiable(pin)
    spec = Path(str(pin.spec_path))
    left_running = background.left_running(payload)
    left_running += background.escaped(hook_io.session_id(payload) or "")
    if left_running:
        return background.reason(left_running), None
    terminal = flow.terminal()
    if not flow.called("verify"):
        return _unverified_reason(terminal, spec), None
    if terminal is None:
        cwd = hook_io.text_field(payload, "cwd")
        roots = evidence.evidence_roots(cwd, flow, spec, Path(pin.repo))
        verdict, problems = evidence.find_verdict(spec, roots)
        return _unfinished_reason(flow, spec, verdict, problems), None
    tools_after = pin.tool_after_terminal() or _tools_after(transcript, terminal)
    reason = _gate_refusal(pin, terminal.skill, tools_after)
    if reason is not None:
        prefix = f"{ESCALATE} needs evidence. " if terminal.skill == "escalate" else ""
        return prefix + reason, None
    if terminal.skill == "done":
        return _extra_layers(flow, transcript, payload), None
    return None, None


def _tools_after(transcript: Transcript, terminal: SkillEvent) -> bool:
    """A tool call after the accepted /done or /escalate: it may have changed a git-ignored
    file a criterion reads, which the tree fingerprint does not see."""
    line_end = transcript.data.find(b"\n", terminal.offset)
    if line_end < 0:
        return False
    return transcript.tool_call_between(line_end + 1, len(transcript.data))


def _gate_refusal(pin: PinnedFlow, skill: str, tools_after: bool = False) -> str | None:
    """The gate's decision on /done or /escalate; what it lets through is noted on the pin
    (main's record_stop writes it). After tool calls that followed it, the stored result
    for the same fingerprint is not reused."""
    if skill == "escalate" and _gate_let_escalate_through(pin):
        return None
    deadline_at = time.monotonic() + min(gate.deadline_seconds(), DEADLINE - 60)
    reason, fingerprint = gate.judge(pin, skill, deadline_at, reuse=not tools_after)
    if reason is None:
        pin.note_terminal(skill, fingerprint)
    return reason


def _gate_let_escalate_through(pin: PinnedFlow) -> bool:
    """The PreToolUse gate judged this flow's /escalate on a real run and let it through. An
    /escalate only the transcript shows (the agent can write it) is judged here instead, on a
    run of the current tree: an earlier run of another tree backs nothing."""
    recorded = pin.get("terminal")
    return isinstance(recorded, dict) and recorded.get("skill") == "escalate"


def _unverified_reason(terminal: SkillEvent | None, spec: Path) -> str:
    run_verify = (
        f'run {VERIFY} {spec} (Skill tool, skill "pytest-acceptance:verify", with the spec and '
        "your implementation log as args): it runs `pytest --acceptance` on the spec"
    )
    if terminal is None:
        return (
            f"You are in an /implement flow for {spec} and have not verified it. Keep working "
            f"toward the criteria; when you think they are met, {run_verify} and calls {DONE} "
            f"when every criterion passes. If you are genuinely stuck, run {VERIFY} first, then "
            f"{ESCALATE}."
        )
    if terminal.skill == "done":
        return f"{DONE} was called in this /implement flow without {VERIFY}. Do that: {run_verify}."
    return f"{ESCALATE} was called in this /implement flow without {VERIFY}. First {run_verify}."


def _unfinished_reason(
    flow: ImplementFlow, spec: Path, verdict: evidence.AgentVerdict | None, problems: list[str]
) -> str:
    gap = _evidence_gap(flow, spec, verdict, problems)
    if gap is None:
        return f"The last verification of {spec} passed on the current tree: call {DONE} to finish."
    return f"You ran {VERIFY} but neither {DONE} nor {ESCALATE} followed. {gap}"


def _evidence_gap(
    flow: ImplementFlow, spec: Path, verdict: evidence.AgentVerdict | None, problems: list[str]
) -> str | None:
    """What the verdict lacks for /done, as an instruction; None when it proves the work."""
    missing = evidence.missing_verdict(flow, spec, verdict, problems)
    if missing is not None or verdict is None:
        return missing
    errors = verdict.collection_errors(spec)
    if errors:
        return (
            f"The spec {spec} could not be collected: {'; '.join(errors[:3])}. Fix what it "
            f"names, then run {VERIFY} again; if the spec itself is wrong, {ESCALATE}."
        )
    if verdict.status != "pass":
        return _not_passing(spec, verdict)
    if not verdict.complete:
        return (
            f"The last verification of {spec} ({verdict.path}) was partial: only some criteria "
            f"were selected (-k, -m or node ids). Run {VERIFY} on the whole spec."
        )
    return _tree_changed(verdict, spec)


def _not_passing(spec: Path, verdict: evidence.AgentVerdict) -> str:
    items = [CriterionOutcome.from_json(item) for item in verdict.not_passing(spec)]
    failing = [item for item in items if item.status in ("failed", "error")]
    manual = [item for item in items if item.status == "manual"]
    where = f"(verification of {format_epoch(verdict.finished)}, {verdict.path})"
    if failing:
        return (
            f"These criteria of {spec} still fail {where}: {gate.named_criteria(failing)}. "
            f"Work on exactly those, then run {VERIFY} again."
        )
    if manual:
        return (
            f"The automated criteria of {spec} pass but manual criteria remain {where}: "
            f"{gate.named_criteria(manual)}. {DONE} is not possible: call {ESCALATE} with them "
            "so a human checks them."
        )
    return (
        f"The last verification run {where} ended with status {verdict.status!r} (exit code "
        f"{verdict.data.get('exit_code')}). Run {VERIFY} again and fix what it reports."
    )


def _tree_changed(verdict: evidence.AgentVerdict, spec: Path) -> str | None:
    try:
        now = gate.fingerprint(verdict.rootdir, time.monotonic() + 60)
    except Exception as error:  # an unusable fingerprint must not pass as "unchanged"
        return f"Cannot fingerprint the working tree {verdict.rootdir} ({error!r}). Run {VERIFY}."
    if now in verdict.fingerprints:
        return None
    return (
        f"Files changed since the last verification of {spec} (working tree {now}, verified "
        f"{', '.join(sorted(verdict.fingerprints)) or 'no fingerprint'}). Run {VERIFY} again: "
        "only a verification of the current tree counts."
    )


def _extra_layers(
    flow: ImplementFlow, transcript: Transcript, payload: dict[str, Any]
) -> str | None:
    if hook_io.env_enabled("ACCEPTANCE_HOOK_TODOS"):
        unfinished = transcript.unfinished_todos(flow.offset)
        if unfinished:
            return (
                f"Your task list still has {len(unfinished)} unfinished item(s): "
                f"{', '.join(unfinished[:LISTED])}. Finish them (or update the list if an item no "
                "longer applies) before stopping. (Switch: ACCEPTANCE_HOOK_TODOS=0.)"
            )
    if hook_io.env_enabled("ACCEPTANCE_HOOK_CONTRADICTIONS"):
        last = hook_io.text_field(payload, "last_assistant_message")
        last = last or transcript.last_assistant_text()
        said = " ".join(last.lower().replace("\u2019", "'").split())
        phrase = next((p for p in CONTRADICTIONS if p in said), None)
        if phrase is not None:
            return (
                f'Your last message says "{phrase}" while {DONE} claims the work is complete. If '
                f"anything still needs manual work or could not be completed, do not claim done: "
                f"keep working, or call {ESCALATE} with the evidence. If it is complete, write a "
                "completion summary that says so. (Switch: ACCEPTANCE_HOOK_CONTRADICTIONS=0.)"
            )
    return None


def fail_closed(error: BaseException) -> None:
    """An error or the deadline: inside a flow (or when the state cannot tell) the stop is
    blocked with the reason -- the block caps still let a stuck session out; outside any
    flow the stop goes through with a message."""
    hook_io.cancel_deadline()
    payload = _SEEN.get("payload") or {}
    pin = pinned_flow.inside_flow_in_doubt(_SEEN)
    if pin is None:
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        return
    reason = f"The stop hook could not check this stop ({error}), so it is not let through."
    empty = Transcript(b"", str(payload.get("transcript_path") or ""))
    try:
        if not isinstance(pin, PinnedFlow):
            raise ValueError("no pinned flow to count blocks against")
        stand_in = ImplementFlow(pinned_flow.stand_in_event(pin), [])
        caps.block_or_force(reason, stand_in, empty, payload, Path(pin.repo))
    except Exception:
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})


if __name__ == "__main__":
    hook_io.run(main, fail_closed)  # inside a flow, never fail open
