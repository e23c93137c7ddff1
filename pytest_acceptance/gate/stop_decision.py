"""The decisions of the Stop hook and of the /done and /escalate gate, as the library's.

The hook scripts (``hooks/stop_implement_hook.py``, ``hooks/pretool_gate_hook.py``) parse the
event, make one call here and write one answer. The stop's decision matrix, over the flow
pinned at /implement (pin.py) and our skills that really ran after it:

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
or reuses the result it stored for this tree (the PreToolUse gate of /done ran it). A spec
changed since /implement, or a criterion's tests weakened, block /done. Extra layers after
a good /done: no unfinished task-list items, and a last message that does not admit manual
or incomplete work.

The /done and /escalate gate (PreToolUse on the Skill tool): no /implement in progress ->
deny /escalate; no /verify since the pinned /implement -> deny. Then the gate runs the
pinned spec on the current tree itself: /done is let through only when every pinned
criterion passes there, /escalate when that run really ran the criteria (any status).

The pin is the reference (pinned_flow.py): a transcript that no longer shows the open pinned
flow, or shows an /implement the plugin never pinned, blocks. Inside a flow, nothing fails
open: an unreadable transcript, a damaged state, an internal error or the hook's own
deadline block with the reason. Never a trap: the block caps of caps.py let a stop through,
FORCED and recorded. Switches: ACCEPTANCE_HOOK_TODOS=0, ACCEPTANCE_HOOK_CONTRADICTIONS=0
turn the extra layers off.

What a decision consults besides the transcript and the pin (the gate's run, the scan for
processes the session left) is a field of :class:`Checks`, so the matrix is tested in
process with stand-ins for them.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

from pytest_acceptance.gate import agent_verdict as evidence
from pytest_acceptance.gate import (
    background,
    caps,
    concurrent_work,
    gate,
    hook_io,
    isolation,
    pinned_flow,
)
from pytest_acceptance.gate.flow_state import Flow as PinnedFlow
from pytest_acceptance.gate.gate_result import CriterionOutcome
from pytest_acceptance.gate.hosts import HostContract
from pytest_acceptance.gate.transcript import (
    BLOCK_TAG,
    ImplementFlow,
    SkillEvent,
    Transcript,
    format_epoch,
    gated_skill,
)

DEADLINE = hook_io.GATE_HOOK_DEADLINE
GATE_TAG = "[pytest-acceptance gate]"
# (why refused or None, the tree fingerprint the decision was made on): gate.judge's shape.
GateJudge = Callable[[PinnedFlow, str, float, bool], Tuple[Optional[str], Optional[str]]]


@dataclass(frozen=True)
class Checks:
    """What a decision consults besides the transcript and the pin: the gate's own run
    (gate.judge) and the scan for processes of the session that left the CLI's tree."""

    gate_judge: GateJudge = gate.judge
    escaped: Callable[[str], list[str]] = background.escaped

    def gate_run(self, pin: PinnedFlow, skill: str, reuse: bool) -> tuple[str | None, str | None]:
        """The gate's judgement, its run ending a minute before the hook's own deadline (so
        that the hook still answers, and in time)."""
        deadline_at = time.monotonic() + min(gate.deadline_seconds(), DEADLINE - 60)
        return self.gate_judge(pin, skill, deadline_at, reuse)


REAL = Checks()
Seen = Dict[str, Any]  # what a hook learnt before it failed, for its fail-closed handler


# --- the Stop hook ---------------------------------------------------------------------------


def stop(payload: dict[str, Any], started: float, seen: Seen, checks: Checks = REAL) -> None:
    """The Stop hook's whole decision on `payload`, written as the hook's one answer.
    `started`: when the hook began (a tool call noted after it is not covered)."""
    seen["payload"] = payload
    session_id = hook_io.session_id(payload)
    pin = PinnedFlow.load(session_id) if session_id else None
    seen["pin"] = pin
    try:
        # Once it holds the message that ended this turn: the /done or /escalate just
        # before it is on disk too.
        transcript = Transcript.load_for(payload)
    except hook_io.HookInputError as error:
        if pin is not None and pin.is_open:
            raise  # inside a flow: the fail-closed handler blocks with the reason
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        return
    situation = pinned_flow.resolve(pin, transcript)
    if situation.flow is None:
        return  # not in an /implement flow
    isolation.tell_if_open()
    reason: str | None
    message: str | None
    if situation.tamper is not None:
        reason, message = situation.tamper, None
    else:
        reason, message = judge(situation.flow, situation.pin, transcript, payload, checks)
    if pin is not None and pin.is_open:  # also writes the terminal the gate let through
        pin.record_stop("allow" if reason is None else "block", started)
    if reason is not None:
        repo = Path(situation.pin.repo) if situation.pin is not None else None
        caps.block_or_force(reason, situation.flow, transcript, payload, repo)
    elif message is not None:
        hook_io.tell_user(message)


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


def _unverifiable(pin: PinnedFlow) -> tuple[str | None, str | None]:
    """A flow whose /implement pinned no spec ends only on the /escalate that hands it to
    a human (pretool_gate_hook records it): never as a verified completion."""
    if pin.terminal is not None:
        return None, f"pytest-acceptance: {pin.problem}; the flow was escalated."
    return (
        f"This /implement flow has no pinned spec to verify ({pin.problem}): it cannot end "
        "as done. Call /pytest-acceptance:escalate with what you found; the user starts a "
        "new /implement with the right spec."
    ), None


def judge(
    flow: ImplementFlow,
    pin: PinnedFlow | None,
    transcript: Transcript,
    payload: dict[str, Any],
    checks: Checks = REAL,
) -> tuple[str | None, str | None]:
    """(block reason, None) to keep the session going, or (None, message or None) to allow."""
    if pin is None:
        return None, "pytest-acceptance: the flow is not pinned; nothing to enforce."
    if pin.problem is not None:
        return _unverifiable(pin)
    spec = Path(str(pin.spec_path))
    left_running = background.left_running(payload)
    left_running += checks.escaped(hook_io.session_id(payload) or "")
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
    beside = concurrent_work.beside_the_conversation(transcript, terminal, payload)
    reason = _gate_refusal(pin, terminal.skill, checks, reuse=not tools_after and beside is None)
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


def _gate_refusal(pin: PinnedFlow, skill: str, checks: Checks, reuse: bool) -> str | None:
    """The gate's decision on /done or /escalate; what it lets through is noted on the pin
    (stop's record_stop writes it). `reuse`: nothing of the session could have acted since
    the gate's run that let it through, whose stored result may then stand for this stop."""
    if skill == "escalate" and _gate_let_escalate_through(pin):
        return None
    reason, fingerprint = checks.gate_run(pin, skill, reuse)
    if reason is None:
        pin.note_terminal(skill, fingerprint)
    return reason


def _gate_let_escalate_through(pin: PinnedFlow) -> bool:
    """The PreToolUse gate judged this flow's /escalate on a real run and let it through. An
    /escalate only the transcript shows (the agent can write it) is judged here instead, on a
    run of the current tree: an earlier run of another tree backs nothing."""
    recorded = pin.terminal
    return recorded is not None and recorded.skill == "escalate"


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


def stop_failed(error: BaseException, seen: Seen, host: HostContract) -> None:
    """An error or the deadline: inside a flow (or when the state cannot tell) the stop is
    blocked with the reason -- the block caps still let a stuck session out; outside any
    flow the stop goes through with a message."""
    hook_io.cancel_deadline()
    payload = seen.get("payload") or {}
    pin = pinned_flow.inside_flow_in_doubt(seen)
    if pin is None:
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        return
    reason = f"The stop hook could not check this stop ({error}), so it is not let through."
    if not isinstance(pin, PinnedFlow):  # the state cannot be read: blocked, as the host caps
        forced = caps.block_unknown(reason, payload, host)
        if forced is not None:
            hook_io.tell_user(f"pytest-acceptance: {forced}")
        return
    empty = Transcript(b"", str(payload.get("transcript_path") or ""))
    try:
        stand_in = ImplementFlow(pinned_flow.stand_in_event(pin), [])
        caps.block_or_force(reason, stand_in, empty, payload, Path(pin.repo))
    except Exception:
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})


# --- the /done and /escalate gate --------------------------------------------------------------


def skill_call(payload: dict[str, Any], seen: Seen, checks: Checks = REAL) -> None:
    """The PreToolUse decision on a Skill call, written as the hook's one answer: every
    skill but our done/escalate passes untouched. A bare "done"/"escalate" may resolve to
    ours (the CLI resolves bare names when unambiguous): it is gated inside a flow of ours
    and left alone outside of one."""
    seen["payload"] = payload
    parsed = gated_skill(payload)
    if parsed is None:
        return
    skill, qualified = parsed
    session_id = hook_io.session_id(payload)
    pin = PinnedFlow.load(session_id) if session_id else None
    seen["pin"] = pin
    try:
        transcript = Transcript.load_for(payload)  # once it holds this very call
    except hook_io.HookInputError as error:
        if pin is not None and pin.is_open:
            raise
        if qualified and skill == "escalate":
            deny(f"{error}: cannot confirm that /pytest-acceptance:verify ran in this flow.")
        return
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
        isolation.tell()
        _unverifiable_call(skill, situation.pin)
    else:
        isolation.tell()
        verified = situation.flow.called("verify")
        problem = _problem(skill, verified, situation.pin, checks, session_id or "")
        if problem is not None:
            deny(problem)


def _unverifiable_call(skill: str, pin: PinnedFlow) -> None:
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


def _problem(
    skill: str, verified: bool, pin: PinnedFlow, checks: Checks, session_id: str
) -> str | None:
    if not verified:
        return (
            f"Must call /pytest-acceptance:verify before /pytest-acceptance:{skill}: {skill} "
            "only with the evidence of a verification run of the spec in this /implement flow."
        )
    # A process of the session alive beside the run could make the tree pass only while the
    # run reads it, and be gone by the stop that reuses the result: none may run now. One
    # started later (a call beside this one in its message) makes the stop run the gate
    # again (concurrent_work.py), and that stop scans first.
    escaped = checks.escaped(session_id)
    if escaped:
        return background.running_during_the_run(escaped, skill)
    # Never a stored result: whatever the agent did since, outside any fingerprint too (a file
    # outside the project, an empty folder), this decision is made on a run of this moment.
    reason, fingerprint = checks.gate_run(pin, skill, False)
    if reason is None:
        pin.record_terminal(skill, fingerprint)
    return reason


def deny(reason: str) -> None:
    hook_io.deny_tool_call(f"{GATE_TAG} {reason}")


def skill_call_failed(error: BaseException, seen: Seen) -> None:
    """Inside a flow (or when the state cannot tell), an error denies the call; outside any
    flow it goes through with a message. Unreadable input names no tool: the session's pin
    (CLAUDE_CODE_SESSION_ID) decides."""
    hook_io.cancel_deadline()
    payload = seen.get("payload")
    if payload is not None and gated_skill(payload) is None:
        return
    if pinned_flow.inside_flow_in_doubt(seen) is None:
        hook_io.tell_user(f"pytest-acceptance gate: {error}. The tool call was not checked.")
        return
    deny(f"The gate could not check this call ({error}), so it is not let through.")
