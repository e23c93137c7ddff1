"""Stop hook: in an /implement flow, the session stops only on evidence, never on a claim.

Seed 000's decision matrix, over our skills that really ran after the last /implement:

    /implement  /verify  /done  /escalate   decision
    no          -        -      -           allow (not in a flow)
    yes         no       no     no          block: verify first
    yes         yes      no     no          block: the verdict says what is next
    yes         yes      yes    -           allow, if the evidence holds (below)
    yes         yes      -      yes         allow, if a verification run exists (below)
    yes         no       yes    -           block (suspicious: /done without /verify)
    yes         no       -      yes         block (/escalate without /verify)

Evidence after /done (the later of /done and /escalate decides): the verdict of
`pytest --acceptance` (.acceptance/verdict.json) covers the flow's spec, finished after the
flow started, says "pass" for a complete run, and the working tree still has the fingerprint
it was verified on. /escalate needs a verdict for the spec from within the flow (any status).
Extra layers after a good /done: no unfinished task-list items, and a last message that does
not admit manual or incomplete work.

A flow is over once the user types a new prompt after a /done or /escalate that was let
through; a second /implement starts a fresh flow.

Never a trap: the block caps of caps.py let a stop through, FORCED and recorded.
Switches: ACCEPTANCE_HOOK_TODOS=0, ACCEPTANCE_HOOK_CONTRADICTIONS=0 turn the extra layers off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also under -I / -P
import caps
import evidence
import hook_io
from transcript import Flow, SkillEvent, Transcript, format_epoch

# Seed 004's contradiction phrases, plus their common variants.
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
VERIFY = "/pytest-acceptance:verify"
DONE = "/pytest-acceptance:done"
ESCALATE = "/pytest-acceptance:escalate"
LISTED = 10  # criteria named in one reason; the rest are counted
DEFAULT_SETTLE_SECONDS = 10.0  # well under the hook timeout; an honest flow waits ms


def main() -> int:
    try:
        payload = hook_io.read_payload(sys.stdin.buffer.read())
        # The CLI writes its transcript lazily: wait (bounded) until it holds the message
        # that ended this turn, so the /done or /escalate just before it is on disk too.
        transcript = Transcript.load_settled(
            payload.get("transcript_path"),
            payload.get("last_assistant_message"),
            hook_io.env_float("ACCEPTANCE_HOOK_SETTLE_SECONDS", DEFAULT_SETTLE_SECONDS),
        )
    except hook_io.HookInputError as error:
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
        return 0
    flow = transcript.open_flow()
    if flow is None:
        return 0  # not in an /implement flow
    reason, message = judge(flow, transcript, payload)
    if reason is not None:
        caps.block_or_force(reason, flow, transcript, payload)
    elif message is not None:
        hook_io.tell_user(message)
    return 0


def judge(
    flow: Flow, transcript: Transcript, payload: dict[str, Any]
) -> tuple[str | None, str | None]:
    """(block reason, None) to keep the session going, or (None, message or None) to allow."""
    cwd = hook_io.text_field(payload, "cwd")
    spec = flow.spec_path(cwd)
    verified = flow.called("verify")
    if spec is None:
        return (
            None,
            "pytest-acceptance: the last /implement named no spec file; nothing to enforce.",
        )
    if not spec.is_file() and not verified:
        return None, (
            f"pytest-acceptance: the spec {spec} named by the last /implement does not exist; "
            "nothing was implemented or verified."
        )
    terminal = flow.terminal()
    if not verified:
        return _unverified_reason(terminal, spec), None
    if not spec.is_file():
        return (
            f"The spec {spec} of this /implement flow disappeared after /verify: restore it.",
            None,
        )
    verdict, problems = evidence.find_verdict(spec, evidence.evidence_roots(cwd, flow, spec))
    if terminal is None:
        return _unfinished_reason(flow, spec, verdict, problems), None
    if terminal.skill == "escalate":
        return _escalation_gap(flow, spec, verdict, problems), None
    gap = _evidence_gap(flow, spec, verdict, problems)
    if gap is None:
        gap = _extra_layers(flow, transcript, payload)
    return gap, None


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
    flow: Flow, spec: Path, verdict: evidence.Verdict | None, problems: list[str]
) -> str:
    gap = _evidence_gap(flow, spec, verdict, problems)
    if gap is None:
        return f"The last verification of {spec} passed on the current tree: call {DONE} to finish."
    return f"You ran {VERIFY} but neither {DONE} nor {ESCALATE} followed. {gap}"


def _escalation_gap(
    flow: Flow, spec: Path, verdict: evidence.Verdict | None, problems: list[str]
) -> str | None:
    problem = evidence.escalation_evidence_problem(flow, spec, verdict, problems)
    return None if problem is None else f"{ESCALATE} needs evidence. {problem}"


def _evidence_gap(
    flow: Flow, spec: Path, verdict: evidence.Verdict | None, problems: list[str]
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


def _not_passing(spec: Path, verdict: evidence.Verdict) -> str:
    items = verdict.not_passing(spec)
    failing = [item for item in items if item.get("status") in ("failed", "error")]
    manual = [item for item in items if item.get("status") == "manual"]
    where = f"(verification of {format_epoch(verdict.finished)}, {verdict.path})"
    if failing:
        return (
            f"These criteria of {spec} still fail {where}: {_criteria(failing)}. Work on exactly "
            f"those, then run {VERIFY} again."
        )
    if manual:
        return (
            f"The automated criteria of {spec} pass but manual criteria remain {where}: "
            f"{_criteria(manual)}. {DONE} is not possible: call {ESCALATE} with them so a "
            "human checks them."
        )
    return (
        f"The last verification run {where} ended with status {verdict.status!r} (exit code "
        f"{verdict.data.get('exit_code')}). Run {VERIFY} again and fix what it reports."
    )


def _criteria(items: list[dict[str, Any]]) -> str:
    named = [
        f"{item.get('id', '?')} {item.get('title', '')} ({item.get('status')}"
        + (f": {str(item['message'])[:160]}" if item.get("message") else "")
        + ")"
        for item in items[:LISTED]
    ]
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return "; ".join(named) + more


def _tree_changed(verdict: evidence.Verdict, spec: Path) -> str | None:
    try:
        now = evidence.tree_fingerprint(verdict.rootdir)
    except Exception as error:  # an unusable fingerprint must not pass as "unchanged"
        return f"Cannot fingerprint the working tree {verdict.rootdir} ({error!r}). Run {VERIFY}."
    if now in verdict.fingerprints:
        return None
    return (
        f"Files changed since the last verification of {spec} (working tree {now}, verified "
        f"{', '.join(sorted(verdict.fingerprints)) or 'no fingerprint'}). Run {VERIFY} again: "
        "only a verification of the current tree counts."
    )


def _extra_layers(flow: Flow, transcript: Transcript, payload: dict[str, Any]) -> str | None:
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


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # a hook bug must not crash the session: say so and let it stop
        hook_io.tell_user(f"pytest-acceptance stop hook failed ({error!r}); stop NOT checked.")
        sys.exit(0)
