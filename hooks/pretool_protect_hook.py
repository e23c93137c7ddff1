"""PreToolUse hook (file tools, Bash, Skill, Agent/Task, MCP tools): protected paths during a flow.

Outside an /implement flow it allows everything. Inside one it denies, with a reason the
model can act on, the writes protect.py finds to the spec, the plugin, its state, the
evidence, Claude Code's settings and transcripts, and git's internals; and it takes the
flow's settings snapshot that the ConfigChange hook compares against. Bash is checked by a
heuristic (see protect.py); the README says what stops an agent that obfuscates.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.claude import flow_end, hook_io, session_flow
from pytest_acceptance.claude.flow_state import Flow as PinnedFlow
from pytest_acceptance.claude.flow_state import data_dir

TAG = "[pytest-acceptance guard]"


def main() -> int:
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    pin = session_flow.pin_of(payload)
    _note_tool_after_terminal(pin)
    if not hook_io.env_enabled("ACCEPTANCE_HOOK_GUARD"):
        return 0  # switched off by whoever started Claude Code (to test the gate behind it)
    flow = session_flow.open_flow(payload, pin)
    if flow is None:
        return 0
    # Only inside a flow: outside one, the call goes through without this import.
    from pytest_acceptance.claude import protect

    cwd = Path(hook_io.text_field(payload, "cwd") or os.getcwd())
    _snapshot_settings(flow, cwd)
    tool_name = str(payload.get("tool_name"))
    tool_input = payload.get("tool_input")
    if protect.leaves_sandbox(tool_name, tool_input):
        deny(
            "Inside an /implement flow, Bash stays in Claude Code's sandbox: a command that "
            "asks to run outside it (dangerouslyDisableSandbox) could reach the plugin's hooks, "
            "its state or the environment the gate pins. Run it inside the sandbox; if the "
            "work needs it outside, /pytest-acceptance:escalate so a human decides."
        )
        return 0
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
        deny(
            f"This command cannot be read ({error}), so it cannot be checked against the paths "
            "protected during an /implement flow. Write it with balanced quotes."
        )
        return 0
    if found:
        deny(
            f"{protect.describe(found)}. These paths are protected while the /implement flow "
            f"for {flow.spec} is open. Work on the code instead; to verify, run "
            "/pytest-acceptance:verify; if the spec or the setup itself is wrong, "
            "/pytest-acceptance:escalate with the evidence so a human decides."
        )
    return 0


def _note_tool_after_terminal(pin: PinnedFlow | None) -> None:
    """Part of the gate, not of the guard (so it runs with the guard switched off): a tool
    that can change files, called after the gate let /done or /escalate through, means the
    gate's stored result must not stand in for a new run at the next stop -- the transcript
    says so too, but the transcript is the agent's to edit. Besides the file tools and Bash,
    hooks.json sends Skill (a skill's inline shell runs inside it, no Bash call), Agent/Task
    (subagents) and MCP tools here. Raises FlowStateError when the note cannot be written:
    the hook then denies the call (fails closed)."""
    if pin is not None and pin.is_open:
        flow_end.note_agent_acted(pin)  # no interrupt can release the flow from now on
        pin.note_tool_after_terminal()


def _snapshot_settings(flow: session_flow.OpenFlow, cwd: Path) -> None:
    from pytest_acceptance.claude import settings_guard

    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    path = settings_guard.snapshot_path(flow.key)
    try:
        settings_guard.ensure_snapshot(path, settings_guard.settings_files(project, Path.home()))
    except OSError as error:
        hook_io.tell_user(f"pytest-acceptance guard: cannot snapshot settings ({error}).")


def deny(reason: str) -> None:
    hook_io.deny_tool_call(f"{TAG} {reason}")


def on_error(error: BaseException) -> None:
    deny(f"the guard failed ({error!r}), so this tool call is refused; try it another way.")


if __name__ == "__main__":
    hook_io.run(main, on_error)  # fail closed: a guard that cannot check does not wave through
