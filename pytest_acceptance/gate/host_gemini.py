"""Gemini CLI as a host of the gate: its documented ``AfterAgent`` contract.

Hooks live in ``settings.json`` (``.gemini/settings.json`` in the project,
``~/.gemini/settings.json``), ``timeout`` in milliseconds (default 60000). An
``AfterAgent`` answer ``{"decision": "deny", "reason": ...}`` on stdout with exit 0 rejects
the agent's final response and sends the reason to the agent as a new prompt (exit 2 does
the same with stderr); ``{"continue": false, "stopReason": ...}`` stops the session without
a retry. The payload carries ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``timestamp``, the user's ``prompt``, the agent's final text
``prompt_response`` and ``stop_hook_active`` on a retry. No cap on retries is documented:
the gate counts its own blocks.

The agent has no skill tool the gate could judge, so the /implement flow is the one pinned
from the user's own prompt (prompt_flow.py), with what differs on Gemini here, on its
adapter: the prompt that starts a flow (``$acceptance-implement SPEC``, read by the
``BeforeAgent`` hook), the tools the guard reads (``run_shell_command``, ``write_file``,
``replace``), and where the flow's state lives (``~/.gemini/pytest-acceptance``, outside
the project).

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from pytest_acceptance.gate import hook_io, hosts, prompt_flow, protect
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.hosts import HostContract, StopEvent, claude_style_stop

CONTRACT = HostContract(
    name="gemini-cli",
    title="Gemini CLI",
    stop_event="AfterAgent",
    block_fields=(("decision", "deny"),),
    exit_2="rejects the response and retries with stderr as the prompt",
    timeout_unit="ms",
    default_timeout=60000,
    block_cap=None,
    settings_files=("~/.gemini/settings.json", ".gemini/settings.json"),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    return payload.get("hook_event_name") == CONTRACT.stop_event


def read(payload: Mapping[str, Any]) -> StopEvent:
    return claude_style_stop(CONTRACT.name, payload, "prompt_response")


HOOKS_FILE = Path(".gemini") / "settings.json"  # the project's settings hold our hooks
HOOK_SET = "gemini"  # the hook set's folder under the plugin's hooks/
HOOK_COMMAND = "command"  # the field of a hook that holds its command
IMPLEMENT_PROMPT = hosts.IMPLEMENT_PROMPT
SHELL_TOOL = "run_shell_command"
FILE_TOOLS = {"write_file": "file_path", "replace": "file_path"}
SYSTEM_SETTINGS = Path("/etc/gemini-cli")
HOOK_NAME_PREFIX = "pytest-acceptance-"
# Our hooks: event, matcher, script (hooks/gemini/), timeout in milliseconds, well above the
# scripts' own deadlines (prompt 100 s, stop stop_decision.DEADLINE = 840 s): Gemini drops a
# hook past its timeout and lets the event through.
HOOKS = (
    ("BeforeAgent", None, "prompt.py", 120_000),
    ("BeforeTool", f"^({SHELL_TOOL}|{'|'.join(FILE_TOOLS)})$", "pretool.py", 30_000),
    ("AfterAgent", None, "stop.py", 900_000),
)


def gemini_home() -> Path:
    return Path("~/.gemini").expanduser()


def ours_hook(hook: object) -> bool:
    return isinstance(hook, dict) and str(hook.get("name", "")).startswith(HOOK_NAME_PREFIX)


def ours(group: object) -> bool:
    """A hook group of settings.json that holds a hook of ours (by its name)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(ours_hook(hook) for hook in hooks)


def our_hooks(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Our hook of each event in a settings file, by event."""
    events = settings.get("hooks")
    found: dict[str, dict[str, Any]] = {}
    for event, groups in events.items() if isinstance(events, dict) else ():
        for group in groups if isinstance(groups, list) else []:
            hooks = group.get("hooks") if isinstance(group, dict) else None
            for hook in hooks if isinstance(hooks, list) else []:
                if ours_hook(hook):
                    found[event] = hook
    return found


def _hooks_config(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    config = settings.get("hooksConfig") if settings else None
    return config if isinstance(config, dict) else {}


def hooks_problems(project: Path) -> list[str]:
    """Why Gemini would skip a hook of ours in `project` (empty when none is skipped): our
    hooks missing from its `.gemini/settings.json`, a timeout under the installer's, the
    hooks switched off (``hooksConfig.enabled``, system settings over the project's over the
    user's) or one of ours in a ``hooksConfig.disabled`` list."""
    path = project / HOOKS_FILE
    settings = hosts.json_object(path)
    if settings is None:
        return [f"{path} is missing or unreadable"]
    problems = []
    hooks = our_hooks(settings)
    for event, _, _, timeout in HOOKS:
        hook = hooks.get(event)
        if hook is None:
            problems.append(f"{path} has no {event} hook of ours")
        elif not isinstance(hook.get("timeout"), int) or hook["timeout"] < timeout:
            problems.append(f"the {event} hook's timeout in {path} is under {timeout} ms")
    layers = [
        hosts.json_object(SYSTEM_SETTINGS / "settings.json"),
        settings,
        hosts.json_object(gemini_home() / "settings.json"),
    ]
    switches = [_hooks_config(layer).get("enabled") for layer in layers]
    if next((s for s in switches if isinstance(s, bool)), True) is False:
        problems.append("hooksConfig.enabled is false: Gemini runs no hook")
    ours_named = {str(hook.get(key)) for hook in hooks.values() for key in ("name", "command")}
    for layer in layers:
        disabled = _hooks_config(layer).get("disabled")
        if isinstance(disabled, list) and ours_named & {str(item) for item in disabled}:
            problems.append("a hook of ours is in hooksConfig.disabled")
            break
    return problems


def skipped_hooks(cwd: str | None) -> str | None:
    """The warning to give when Gemini would skip a hook of ours in the project at `cwd`."""
    return hosts.not_fully_gated(HOOK_SET, hooks_problems(Path(cwd or os.getcwd())))


def protected_paths(flow: Flow) -> protect.Protected:
    """The pinned spec, the project's `.gemini/` (its settings hold the hooks), Gemini's
    home (the user's settings, the sessions, the gate's state), the system settings and the
    plugin; plus what protect.py protects by name (.git, .acceptance, ...)."""
    trees = [
        (
            Path(flow.repo) / ".gemini",
            "`.gemini/settings.json` holds the hooks that gate this flow",
        ),
        (gemini_home(), "Gemini's home holds its settings, the sessions and the gate's state"),
        (SYSTEM_SETTINGS, "Gemini CLI's system settings are the administrator's"),
        (PLUGIN_ROOT, protect.PLUGIN_WHY),
    ]
    return protect.protecting(flow.spec_path, trees)


def protected_target(flow: Flow, payload: Mapping[str, Any]) -> str | None:
    """What a shell or file tool call would write among the protected paths, described;
    None when it writes none of them (or is another tool)."""
    tool_name, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool_input, dict) or not isinstance(tool_name, str):
        return None
    cwd = Path(str(payload.get("cwd") or flow.repo))
    protected = protected_paths(flow)
    if tool_name == SHELL_TOOL:
        found = _shell_violations(tool_input, cwd, protected)
    elif tool_name in FILE_TOOLS:
        target = tool_input.get(FILE_TOOLS[tool_name])
        found = protect.named_violations(tool_name, [target], cwd, protected)
    else:
        return None
    return protect.describe(found) if found else None


def _shell_violations(
    tool_input: dict[str, Any], cwd: Path, protected: protect.Protected
) -> list[protect.Violation]:
    command, directory = tool_input.get("command"), tool_input.get("dir_path")
    if isinstance(directory, str) and directory:  # the folder the command runs in
        cwd = cwd / directory
    return protect.bash_violations(command, cwd, protected) if isinstance(command, str) else []


def deny_tool_call(reason: str) -> None:
    """Gemini's BeforeTool refusal: the neutral block, rendered as its deny."""
    hook_io.emit({"decision": "block", "reason": reason})


ADAPTER = prompt_flow.adapter(CONTRACT, recognises, read, gemini_home, skipped_hooks)
