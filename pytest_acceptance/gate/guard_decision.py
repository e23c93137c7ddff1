"""The guard's decision on one Claude Code tool call: protected paths during a flow.

Outside an /implement flow it allows everything. Inside one it denies, with a reason the
model can act on, the writes protect.py finds to the spec, the plugin, its state, the
evidence, Claude Code's settings and transcripts, and git's internals; and it takes the
flow's settings snapshot that the ConfigChange hook compares against. Bash is checked by a
heuristic (see protect.py); the README says what stops an agent that obfuscates.

Before any of that, a part of the gate rather than of the guard (so it runs with the guard
switched off): a tool call after the gate let /done or /escalate through is noted.

Standard library only, Python 3.8: hooks/pretool_protect_hook.py runs it before every tool
call, so it imports what it needs inside a flow only once it is inside one.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_acceptance.gate import flow_end, hook_io, session_flow
from pytest_acceptance.gate.flow_state import Flow as PinnedFlow
from pytest_acceptance.gate.flow_state import data_dir

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any

LEAVES_SANDBOX = (
    "Inside an /implement flow, Bash stays in Claude Code's sandbox: a command that asks to "
    "run outside it (dangerouslyDisableSandbox) could reach the plugin's hooks, its state or "
    "the environment the gate pins. Run it inside the sandbox; if the work needs it outside, "
    "/pytest-acceptance:escalate so a human decides."
)


def judge(payload: dict[str, Any]) -> str | None:
    """Why this tool call is refused, or None when it goes through."""
    pin = session_flow.pin_of(payload)
    note_tool_call(pin)
    if not hook_io.env_enabled("ACCEPTANCE_HOOK_GUARD"):
        return None  # switched off by whoever started Claude Code (to test the gate behind it)
    flow = session_flow.open_flow(payload, pin)
    if flow is None:
        return None
    # Only inside a flow: outside one, the call goes through without this import.
    from pytest_acceptance.gate import protect

    cwd = Path(hook_io.text_field(payload, "cwd") or os.getcwd())
    _snapshot_settings(flow, cwd)
    tool_name = str(payload.get("tool_name"))
    tool_input = payload.get("tool_input")
    if protect.leaves_sandbox(tool_name, tool_input):
        return LEAVES_SANDBOX
    protected = protect.protected_set(
        flow.spec,
        hook_io.PLUGIN_ROOT,
        str(data_dir()),
        hook_io.text_field(payload, "transcript_path"),
        Path.home(),
        cwd,
    )
    try:
        found = protect.violations(
            tool_name, tool_input if isinstance(tool_input, dict) else {}, cwd, protected
        )
    except protect.UnreadableCommand as error:
        return (
            f"This command cannot be read ({error}), so it cannot be checked against the paths "
            "protected during an /implement flow. Write it with balanced quotes."
        )
    if not found:
        return None
    return (
        f"{protect.describe(found)}. These paths are protected while the /implement flow "
        f"for {flow.spec} is open. Work on the code instead; to verify, run "
        "/pytest-acceptance:verify; if the spec or the setup itself is wrong, "
        "/pytest-acceptance:escalate with the evidence so a human decides."
    )


def note_tool_call(pin: PinnedFlow | None) -> None:
    """A tool that can change files, called after the gate let /done or /escalate through,
    means the gate's stored result must not stand in for a new run at the next stop -- the
    transcript says so too, but the transcript is the agent's to edit. Besides the file tools
    and Bash, hooks.json sends Skill (a skill's inline shell runs inside it, no Bash call),
    Agent/Task (subagents) and MCP tools here. Raises FlowStateError when the note cannot be
    written: the hook then denies the call (fails closed)."""
    if pin is not None and pin.is_open:
        flow_end.note_agent_acted(pin)  # no interrupt can release the flow from now on
        pin.note_tool_after_terminal()


def _snapshot_settings(flow: session_flow.OpenFlow, cwd: Path) -> None:
    from pytest_acceptance.gate import settings_guard

    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    path = settings_guard.snapshot_path(flow.key)
    try:
        settings_guard.ensure_snapshot(path, settings_guard.settings_files(project, Path.home()))
    except OSError as error:
        hook_io.tell_user(f"pytest-acceptance guard: cannot snapshot settings ({error}).")
