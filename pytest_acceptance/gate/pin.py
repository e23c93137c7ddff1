"""Pinning a flow when the user runs /pytest-acceptance:implement SPEC, and ending it.

Claude Code 2.1.328 sends ``UserPromptExpansion`` (``command_name``, ``command_args``,
``prompt_id``) when a typed slash command expands, after ``UserPromptSubmit`` for the same
prompt. Only a user types a prompt: the model's own Skill calls never pin anything.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import flow_end, gate, gate_runtime, hook_io, transcript_pin
from pytest_acceptance.gate.flow_state import (
    Flow,
    FlowStateError,
    OlderFlowError,
    sha256_bytes,
    start,
)
from pytest_acceptance.gate.hook_io import project_top, text_field
from pytest_acceptance.gate.transcript import first_word, skill_name
from pytest_acceptance.tree.hostile import read_regular_or_none

PROBE_BUDGET = 60.0  # the pin hook's timeout in hooks.json is 120 s
HASH_BUDGET = 30.0  # what is left of it for filling the gate's hash cache
# The parser refuses a spec over 16 MiB; a larger file is no spec to pin.
SPEC_LIMIT = 16 << 20


def on_prompt(payload: dict[str, Any]) -> None:
    """Claude Code's prompt events, the prompt hook's whole decision. UserPromptSubmit (every
    prompt the user types): a finished flow ends here. UserPromptExpansion of
    /pytest-acceptance:implement SPEC: a new flow is pinned, unless the session's flow is
    open and not finished (one flow per session, whatever the process): that /implement is
    refused with the reason, and the open flow stays as it is. No other prompt is refused: a
    pin that fails is told to the user, and the Stop hook then blocks the flow it cannot
    check."""
    session_id = hook_io.session_id(payload)
    if session_id is None:
        raise hook_io.HookInputError("the payload has no session_id")
    event = payload.get("hook_event_name")
    if event == "UserPromptSubmit":
        end_finished_flow(session_id, payload)
        return
    args = implement_args(payload) if event == "UserPromptExpansion" else None
    if args is None:
        return
    held = held_flow(session_id)
    if held is not None:  # the command never expands, nor reaches the transcript
        hook_io.emit({"decision": "block", "reason": refusal(held, args)})
        return
    flow = pin_implement(session_id, payload, args)
    from pytest_acceptance.gate import installation

    notice = installation.implement_notice(hook_io.PLUGIN_ROOT)
    for line in ([notice] if notice is not None else []) + notices(flow):
        hook_io.tell_user(line)


def notices(flow: Flow) -> list[str]:
    """What whoever typed /implement must know of the pin just taken, on every host: the
    declared inputs that could not be pinned, or no Python with pytest-acceptance found (the
    gate then refuses every /done of the flow)."""
    from pytest_acceptance.gate.pins import declared_inputs

    told = []
    undeclarable = declared_inputs.refusal(flow)
    if undeclarable is not None:
        told.append(undeclarable)
    if flow.problem is None and flow.pin_pending:
        told.append(
            "pytest-acceptance: the spec is pinned, but no Python with pytest-acceptance "
            f"was found ({flow.pin_pending}). The gate never pins one later: "
            "/done cannot be verified in this flow (only /escalate). Install the package "
            "(or set ACCEPTANCE_GATE_PYTHON), end this flow with /pytest-acceptance:escalate, "
            "then start /implement again (or start it in a new session)."
        )
    return told


def implement_args(payload: dict[str, Any]) -> str | None:
    """The arguments of a typed /pytest-acceptance:implement, None for any other prompt."""
    name = text_field(payload, "command_name")
    parsed = skill_name(name) if name else None
    if parsed is None or parsed[0] != "implement":
        return None
    if not parsed[1] and payload.get("command_source") != "plugin":
        return None  # a bare /implement that is some other command
    args = payload.get("command_args")
    return args if isinstance(args, str) else ""


def held_flow(session_id: str) -> Flow | None:
    """The session's flow that a new /implement must leave as it is: open, pinned to a spec,
    and not finished (Flow.finished). Whichever process sends the /implement -- the user's,
    or another CLI resuming the session -- it cannot close, replace or re-pin that flow. A
    flow whose /implement named no readable spec holds nothing, and may be replaced; one the
    user interrupted before any work was ended by the prompt hook at the prompt that carried
    this /implement (flow_end.py). Raises FlowStateError when the state cannot be read (the
    caller then pins nothing); a flow an older version pinned is replaced (its records
    cannot be checked, so it holds nothing)."""
    try:
        flow = Flow.load(session_id)
    except OlderFlowError:
        return None
    if flow is None or not flow.is_open or flow.problem is not None or flow.finished():
        return None
    return flow


def refusal(flow: Flow, args: str) -> str:
    """Why a new /implement was not started, for whoever typed it."""
    return (
        f"pytest-acceptance: /implement {args.strip()} was not started. The /implement flow "
        f"for {flow.spec_path or flow.args} is still open in this session and not "
        "finished: it stays pinned as it is. Finish it first with /pytest-acceptance:done "
        "(when every criterion passes) or /pytest-acceptance:escalate (with the evidence, "
        "for a human decision); or start a new session."
    )


def pin_implement(session_id: str, payload: dict[str, Any], args: str) -> Flow:
    """Record the new flow: the spec's bytes, the repository, the criteria, the settings and
    the interpreter the gate will verify with. A spec that cannot be read is pinned as a
    problem (the flow then has nothing to enforce, as before)."""
    cwd = text_field(payload, "cwd") or os.getcwd()
    argument = first_word(args)
    data: dict[str, Any] = {
        "status": "open",
        "prompt_id": text_field(payload, "prompt_id"),
        "pinned_at": time.time(),
        "cwd": cwd,
        "args": args,
        "spec_argument": argument,
        "criteria": None,
    }
    repo = project_top(Path(cwd)) or Path(cwd)
    data["repo"] = str(repo)
    if argument is None:
        data["problem"] = "the /implement named no spec file"
        return _started(session_id, data, None, repo, payload)
    elsewhere = honest_rootdir_elsewhere(Path(cwd), repo)
    if elsewhere is not None:
        data["problem"] = elsewhere
        return _started(session_id, data, None, repo, payload)
    spec = os.path.realpath(os.path.join(cwd, os.path.expanduser(argument)))
    data.update(spec_path=spec, spec_name=os.path.basename(spec) or "spec.md")
    spec_bytes = read_regular_or_none(spec, SPEC_LIMIT)
    if spec_bytes is None:
        data["problem"] = f"the spec {spec} named by /implement does not exist"
        return _started(session_id, data, None, repo, payload)
    data["spec_sha256"] = sha256_bytes(spec_bytes)
    flow = _started(session_id, data, spec_bytes, repo, payload)
    try:
        gate_runtime.complete_pin(flow, PROBE_BUDGET)
    except gate_runtime.GateError as error:  # not installed: /done is refused (never_pinned)
        flow.note_pin_pending(str(error))
        flow.save()
    _fill_hash_cache(flow)
    return flow


def honest_rootdir_elsewhere(cwd: Path, repo: Path) -> str | None:
    """Why the session's folder is a subproject whose honest ``pytest --acceptance`` would not
    run as the gate's run does, or None. The gate's run is the honest run from the project's
    top (its rootdir, its configuration); a folder between the session's and the top that
    holds a configuration file of its own (or setup.py) is where pytest would put the
    rootdir of a run started there: its criteria would run there, with its settings. Any
    file of those names counts, whatever it holds: a flow refused at /implement, never one
    verified elsewhere."""
    from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES

    top = os.path.realpath(repo)
    folder = os.path.realpath(cwd)
    if not folder.startswith(os.path.join(top, "")):
        return None
    names = (*PYTEST_CONFIG_FILES, "setup.py")
    start = folder
    while folder != top:
        found = [name for name in names if os.path.lexists(os.path.join(folder, name))]
        if found:
            return (
                f"the session runs in {start}, below the repository's top {top}, and "
                f"{os.path.join(folder, found[0])} makes {folder} the rootdir of an honest "
                "`pytest --acceptance` started there (where its criteria run, with its "
                "settings); the gate's run is the one from the top. Start the session in "
                f"{top} and name the spec from there"
            )
        folder = os.path.dirname(folder)
    return None


def _started(
    session_id: str, data: dict[str, Any], spec: bytes | None, repo: Path, payload: dict[str, Any]
) -> Flow:
    """The new pin, with what the hooks have read of the transcript so far: all of it."""
    flow = start(session_id, data, spec, repo)
    transcript_pin.take(flow.folder, payload.get("transcript_path"))
    return flow


def _fill_hash_cache(flow: Flow) -> None:
    """One fingerprint now fills the gate's hash cache, so that its first /done reads only
    the files the flow changed. A tree that cannot be fingerprinted is the gate's to report
    at /done (it fails closed there); here it only leaves the cache empty."""
    with contextlib.suppress(gate_runtime.GateError):
        gate.fingerprint(flow.repo, time.monotonic() + HASH_BUDGET, flow.hashes_file)


def end_finished_flow(session_id: str, payload: dict[str, Any]) -> None:
    """The user typed a new prompt: a flow whose /done or /escalate was let through ends, and
    so does one the user interrupted before any work (flow_end.py). Nothing else the session
    does or writes ends a flow."""
    try:
        flow = Flow.load(session_id)
    except FlowStateError:
        return  # the Stop hook reports a damaged state; a prompt is never refused for it
    if flow is None or not flow.is_open or not _typed_by_the_user(flow, payload):
        return
    if flow.finished():
        flow.close("the user typed a new prompt after the flow's /done or /escalate")
    elif flow_end.released_by_interrupt(flow, payload):
        flow.close(flow_end.RELEASED)
    else:  # later prompts never release it: only the first, before any work, could
        flow.note_prompt(text_field(payload, "prompt_id"))
        flow.save()


def _typed_by_the_user(flow: Flow, payload: dict[str, Any]) -> bool:
    """Not every UserPromptSubmit is the user's: CLI 2.1.328 also sends one when it hands the
    agent a subagent's result (a ``<task-notification>`` prompt, with the prompt id of the
    turn it lands in). A prompt id this flow already saw is the same turn, not a new one; the
    agent can start subagents, so neither may end its flow or count as the user's."""
    prompt = text_field(payload, "prompt") or ""
    if prompt.lstrip().startswith("<task-notification>"):
        return False
    prompt_id = text_field(payload, "prompt_id")
    return not prompt_id or prompt_id not in (flow.prompt_id, flow.last_prompt_id)
