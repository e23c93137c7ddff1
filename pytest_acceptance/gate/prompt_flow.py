"""The decisions of a flow pinned from the user's own prompt, on a host whose agent has no
skill tool (so no /done or /escalate call the gate could judge as it is made).

The prompt: a prompt that starts a flow (the host's adapter reads its arguments,
``HostAdapter.flow_prompt``) pins a new one (pin.py), unless the session's flow is open and
not finished: that prompt is refused with the reason. While the host would skip a hook of
ours (``HostAdapter.skipped_hooks``), a prompt that would start or resume a flow is refused,
so that no flow runs ungated; any other prompt goes through with the warning.

The stop: every stop of the flow is a claim of done, or an escalation when the agent's last
message has a line starting with ``ESCALATE:``. The gate (gate.py) runs the spec pinned at
the prompt on the current tree: done needs every criterion to pass (and the spec and the
criteria's tests as pinned), an escalation needs a real run. A refusal blocks with the
reason, said in the host's words (``HostAdapter.words``). The gate counts its own blocks in
the pin (caps.StopCount) and past the cap lets the stop through FORCED, NOT verified,
recorded; where the host caps blocks itself (its contract's ``block_cap``), the gate's cap
is never above the host's, so the stop the host would let through is recorded as forced.
Inside a flow an error blocks too (counted the same); a stop whose state cannot be
read blocks as caps.block_unknown says for the host.

How each flow ended (verified, escalated, forced) or why one was refused is recorded per
event (:func:`record_outcome`): a host that runs its agent headless may show no hook's
message, and this is where a wrapper or CI job looks.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Callable

from pytest_acceptance.gate import caps, gate, hook_io, hosts, isolation, pin
from pytest_acceptance.gate.flow_state import Flow, data_dir
from pytest_acceptance.gate.hosts import HostAdapter, HostContract, Reader, Recogniser
from pytest_acceptance.gate.stop_decision import REAL, Checks, Seen
from pytest_acceptance.gate.transcript import BLOCK_TAG

ESCALATE_MARK = "ESCALATE:"
_ESCALATION = re.compile(rf"^\s*{re.escape(ESCALATE_MARK)}", re.MULTILINE)
VERIFIED, ESCALATED, FORCED, REFUSED = "verified", "escalated", "forced", "refused"
OUTCOMES_FILE = "outcomes.jsonl"  # under the state folder; the project's copy is below


def escalates(last_message: str | None) -> bool:
    """The agent's last message asks for an escalation (a line starting with ESCALATE:)."""
    return bool(_ESCALATION.search(last_message or ""))


def in_flow_words(reason: str) -> str:
    """The gate's reasons name Claude Code's slash commands; in a flow pinned from the
    user's prompt the same steps are a command, a stop and a message."""
    for command, steps in (
        ("/pytest-acceptance:implement", "the flow's prompt"),
        (gate.VERIFY, "`python -m pytest --acceptance <spec>`"),
        (gate.DONE, "finishing your turn (a claim of done)"),
        (gate.ESCALATE, f"a message whose first line starts with {ESCALATE_MARK}"),
    ):
        reason = reason.replace(command, steps)
    return reason


def adapter(
    contract: HostContract,
    recognises: Recogniser,
    read: Reader,
    home: Callable[[], Path],
    skipped_hooks: Callable[[str | None], str | None],
    **host_specific: Any,
) -> HostAdapter:
    """The adapter of a host with no skill tool, whose flow is pinned from the user's own
    prompt: the prompt that starts a flow (hosts.implement_args), the gate's reasons in the
    steps its agent can take (in_flow_words), the flow's state in the host's `home`, the
    warning when it would skip a hook of ours; the rest as the host says."""
    return HostAdapter(
        contract,
        recognises,
        read,
        flow_prompt=hosts.implement_args,
        skipped_hooks=skipped_hooks,
        words=in_flow_words,
        home=home,
        **host_specific,
    )


def outcomes_relative(host: HostAdapter) -> Path:
    return Path(".acceptance") / f"{host.contract.name}-outcomes.jsonl"


def record_outcome(
    host: HostAdapter, payload: dict[str, Any], outcome: str, detail: str, repo: Path
) -> None:
    """How a flow ended (verified, escalated, forced) or why one was refused, one JSON line
    per event: in the gate's state, which the agent's sandboxed commands cannot write (the
    one to trust), and in the project's .acceptance/ for the people reading the project."""
    record = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": host.contract.name,
        "outcome": outcome,
        "session_id": payload.get("session_id"),
        "cwd": payload.get("cwd"),
        "detail": detail,
    }
    for path in (data_dir() / OUTCOMES_FILE, repo / outcomes_relative(host)):
        caps.append_record(path, record)


# --- the prompt --------------------------------------------------------------------------------


def prompt(payload: dict[str, Any], host: HostAdapter) -> None:
    """The prompt hook's whole decision on `payload`, written as the hook's one answer."""
    hook_io.answer_with(host.render)
    session_id = hook_io.session_id(payload)
    if session_id is None:
        raise hook_io.HookInputError("the payload has no session_id")
    cwd = hook_io.text_field(payload, "cwd") or os.getcwd()
    warning = host.skipped_hooks(cwd)
    args = host.flow_prompt(hook_io.text_field(payload, "prompt"))
    if args is None:
        pin.end_finished_flow(session_id, payload)
        open_flow = Flow.load(session_id)
        if warning is not None and open_flow is not None and open_flow.is_open:
            what = "The open /implement flow was not resumed."
            _refuse_skipped(host, payload, warning, cwd, what)
        elif warning is not None:
            _warn(warning)
        return
    if warning is not None:
        _refuse_skipped(host, payload, warning, cwd, "The /implement flow was not started.")
        return
    held = pin.held_flow(session_id)  # one flow per session, as on every host
    if held is not None:
        _refuse(pin.refusal(held, args))
        return
    _tell_model(pin.pin_implement(session_id, payload, args), host)


def prompt_failed(error: BaseException) -> None:
    """A prompt is never refused for the hook's own error: the user is told the flow is not
    pinned (and a stop of a flow that could not be pinned has nothing to judge)."""
    hook_io.tell_user(f"pytest-acceptance prompt hook failed ({error}); flow not pinned.")


def _tell_model(flow: Flow, host: HostAdapter) -> None:
    if flow.problem is not None:
        note = (
            f"pytest-acceptance: this /implement flow has no spec to verify ({flow.problem}). "
            f"It can only end with an escalation: a message whose first line starts with "
            f"{ESCALATE_MARK}"
        )
    elif flow.collection is not None and flow.collection.error:
        note = (
            f"pytest-acceptance pinned the spec {flow.spec_path}, but the gate cannot verify "
            f"it ({flow.collection.error}). This flow can only end with an escalation: a "
            f"message whose first line starts with {ESCALATE_MARK}"
        )
    else:
        note = (
            f"pytest-acceptance pinned the spec {flow.spec_path}. This session ends only when "
            "the gate's own run of that spec passes on the working tree (every stop is a claim "
            "of done), or with an escalation: a message whose first line starts with "
            f"{ESCALATE_MARK} followed by the evidence."
        )
    answer: dict[str, Any] = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": note}
    }
    notice = _implement_notice(host)
    told = ([notice] if notice is not None else []) + [host.words(n) for n in pin.notices(flow)]
    if told:
        answer["systemMessage"] = " ".join(told)
        answer["hookSpecificOutput"]["additionalContext"] = " ".join([note, *told])
    hook_io.emit(answer)


def _implement_notice(host: HostAdapter) -> str | None:
    """What this machine leaves open (the gate run's isolation level below full), said in
    the flow's first answer; None when all is well. Skipped hooks are checked before."""
    warning = isolation.current().warning
    if warning is None:
        return None
    return f"{warning} {isolation.doctor_pointer(host.contract.name)}"


def _warn(message: str) -> None:
    hook_io.emit(
        {
            "systemMessage": message,
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": message,
            },
        }
    )


def _refuse_skipped(
    host: HostAdapter, payload: dict[str, Any], warning: str, cwd: str, what: str
) -> None:
    """No flow runs while the host would skip one of our hooks: refused, and recorded where
    a headless run's users look (it may show no hook's reason)."""
    reason = f"{warning} {what}"
    repo = hook_io.project_top(Path(cwd)) or Path(cwd)
    record_outcome(host, payload, REFUSED, reason, repo)
    _refuse(reason)


def _refuse(reason: str) -> None:
    hook_io.emit({"decision": "block", "reason": reason})


# --- the stop ----------------------------------------------------------------------------------


def stop(
    payload: dict[str, Any], started: float, seen: Seen, host: HostAdapter, checks: Checks = REAL
) -> None:
    """The Stop hook's whole decision on `payload` (the neutral payload), written as the
    hook's one answer. `started`: when the hook began."""
    seen["payload"] = payload
    session_id = hook_io.session_id(payload)
    flow = Flow.load(session_id) if session_id else None
    seen["pin"] = flow
    warning = host.skipped_hooks(hook_io.text_field(payload, "cwd"))
    if warning is not None:
        hook_io.tell_user(warning)
    if flow is None or not flow.is_open:
        return
    escalating = escalates(hook_io.text_field(payload, "last_assistant_message"))
    skill = "escalate" if escalating else "done"
    reason, fingerprint = judge(flow, skill, host, checks)
    if reason is not None:
        block_or_force(flow, payload, reason, started, host)
        return
    flow.note_terminal(skill, fingerprint)
    flow.record_stop("allow", started)
    outcome = VERIFIED if skill == "done" else ESCALATED
    message = f"pytest-acceptance: the /implement flow for {flow.spec_path} ended {outcome}."
    record_outcome(host, payload, outcome, message, Path(flow.repo))
    hook_io.tell_user(message)


def judge(
    flow: Flow, skill: str, host: HostAdapter, checks: Checks = REAL
) -> tuple[str | None, str | None]:
    """(why this claim of done or escalation is refused, None) or (None, the fingerprint of
    the tree the gate let it through on)."""
    if flow.problem is not None:
        if skill == "escalate":
            return None, None
        return (
            f"This /implement flow has no pinned spec to verify ({flow.problem}): it cannot end "
            f"as done. Escalate: a message whose first line starts with {ESCALATE_MARK}"
        ), None
    # Never a stored result: this decision is made on a run of this moment's tree.
    reason, fingerprint = checks.gate_run(flow, skill, False)
    if reason is None:
        return None, fingerprint
    reason = host.words(reason)
    if skill == "escalate":
        return reason, None
    return (
        f"{reason} Keep working on exactly that, then finish again. If you are genuinely stuck, "
        f"end with a message whose first line starts with {ESCALATE_MARK} and give "
        "the evidence."
    ), None


def block_or_force(
    flow: Flow, payload: dict[str, Any], reason: str, started: float, host: HostAdapter
) -> None:
    """Block the stop, counting the block; past the cap, let it through FORCED and recorded."""
    count = caps.StopCount.of(flow).after_block(_fingerprint(flow))
    why = caps.force_reason(count, host.contract.block_cap)
    if why is None:
        count.save(flow)
        flow.record_stop("block", started)
        hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
        return
    message = _record_forced(host, payload, flow, why, reason)
    flow.note_forced(why)
    flow.close(f"forced: {why}")
    # continue: false, where the host reads it, ends the session as stopped, not completed:
    # a wrapper reading the CLI's result sees that nothing was verified.
    hook_io.emit({"continue": False, "stopReason": message, "systemMessage": message})


def _fingerprint(flow: Flow) -> str | None:
    try:
        return gate.fingerprint(flow.repo, time.monotonic() + 60, flow.hashes_file)
    except Exception:  # no fingerprint: every block counts as one without progress
        return None


def _record_forced(
    host: HostAdapter, payload: dict[str, Any], flow: Flow, why: str, reason: str
) -> str:
    """Record a forced stop in the gate's state and in the project; the message to show."""
    spec = Path(flow.spec_path) if flow.spec_path else None
    record = {**caps.forced_stop_record(payload, spec, why, reason), "host": host.contract.name}
    where = [
        caps.append_record(path, record)
        for path in (
            data_dir() / caps.FORCED_STOPS_STATE,
            Path(flow.repo) / caps.FORCED_STOPS_RELATIVE,
        )
    ]
    record_outcome(host, payload, FORCED, f"{why}; still open: {reason}", Path(flow.repo))
    return (
        f"{caps.FORCED_PREFIX}: {why}. The /implement flow for {spec} did not end with "
        f"verified evidence. Still open: {reason} {' '.join(where)}"
    )


def stop_failed(error: BaseException, seen: Seen, host: HostAdapter) -> None:
    """Inside a flow an error blocks (counted, so it never traps); outside, it is told; when
    the state could not be read, whether a flow is open is unknown: caps.block_unknown."""
    hook_io.cancel_deadline()
    flow = seen.get("pin")
    reason = f"The stop hook could not check this stop ({error}), so it is not let through."
    if isinstance(flow, Flow) and flow.is_open:
        try:
            block_or_force(flow, seen.get("payload") or {}, reason, time.time(), host)
        except Exception:
            hook_io.emit({"decision": "block", "reason": f"{BLOCK_TAG} {reason}"})
    elif "pin" in seen:
        hook_io.tell_user(f"pytest-acceptance stop hook: {error}. This stop was not checked.")
    else:
        _block_unknown(reason, seen.get("payload") or {}, host)


def _block_unknown(reason: str, payload: dict[str, Any], host: HostAdapter) -> None:
    forced = caps.block_unknown(reason, payload, host.contract)
    if forced is None:
        return
    cwd = hook_io.text_field(payload, "cwd") or os.getcwd()
    repo = hook_io.project_top(Path(cwd)) or Path(cwd)
    record_outcome(host, payload, FORCED, forced, repo)
    hook_io.tell_user(f"pytest-acceptance: {forced}")
