"""GitHub Copilot CLI as a host of the gate: its documented ``agentStop`` contract.

Hooks live in ``.github/hooks/*.json`` (``{"version": 1, "hooks": {"agentStop": [...]}}``,
``timeoutSec``, default 30 s); the CLI also runs the hooks of ``.claude/settings.json``.
An ``agentStop`` answer ``{"decision": "block", "reason": ...}`` on stdout with exit 0
forces another turn with the reason as its prompt. Exit code 2 is only a warning there, and
a failing or timed-out hook is logged and skipped: the hook fails open, so the gate's own
deadline must stay well under the configured timeout. The CLI ends the turn after 8
consecutive blocks and marks a forced continuation with ``stop_hook_active``.

Two payload shapes, chosen by the event name configured: camelCase for ``agentStop``
(``sessionId``, ``timestamp`` in ms, ``cwd``, ``transcriptPath``, ``stopReason``), and the
VS Code compatible one for ``Stop`` (``hook_event_name``, ``session_id``, ``timestamp`` as
ISO 8601, ``transcript_path``, ``stop_reason``): the second is what a Stop hook written for
Claude Code receives when Copilot CLI runs it, and is recognised here by ``stop_reason``
and ``timestamp``, which Claude Code never sends. Neither shape carries the agent's last
message: the adapter reads it from the transcript (``events.jsonl``, the last
``assistant.message`` with text after the last ``user.message``).

The agent has no skill tool the gate could judge, so the /implement flow is the one pinned
from the user's own prompt (prompt_flow.py), with what differs on Copilot here: the prompt
that starts a flow (``$acceptance-implement SPEC``, read by the ``userPromptSubmitted``
hook, whose ``{"decision": "block"}`` refuses the prompt), the camelCase payloads of the
prompt and tool hooks (``sessionId``, ``toolName``, ``toolArgs``), the answers those hooks
read (``additionalContext`` and ``permissionDecision`` at the top level: a Claude Code style
``hookSpecificOutput`` is ignored there), the tools the guard reads (``bash``, ``create``,
``edit``, ``apply_patch``), and where the flow's state lives (``~/.copilot/pytest-acceptance``,
outside the project). A block is the reason sent back as the next user prompt: the
``userPromptSubmitted`` hook sees it too, and leaves the flow as it is.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

from pytest_acceptance.gate import hosts, prompt_flow, protect
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT, settle_seconds
from pytest_acceptance.gate.hosts import HostContract, StopEvent, text
from pytest_acceptance.tree.hostile import open_regular

CONTRACT = HostContract(
    name="copilot-cli",
    title="GitHub Copilot CLI",
    stop_event="agentStop",
    exit_2="a warning only: the agent stops",
    default_timeout=30,
    block_cap=8,
    message_field=None,
    ends_session=False,
    settings_files=(".github/hooks/*.json", ".claude/settings.json"),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    camel = "sessionId" in payload and isinstance(payload.get("timestamp"), (int, float))
    compatible = payload.get("hook_event_name") == "Stop" and "stop_reason" in payload
    return camel or (compatible and isinstance(payload.get("timestamp"), str))


def read(payload: Mapping[str, Any]) -> StopEvent:
    return StopEvent(
        host=CONTRACT.name,
        session_id=text(payload, "sessionId", "session_id"),
        cwd=text(payload, "cwd"),
        transcript_path=text(payload, "transcriptPath", "transcript_path"),
        loop=payload.get("stop_hook_active") is True or payload.get("stopHookActive") is True,
        last_message=last_message(
            text(payload, "transcriptPath", "transcript_path"), stop_stamp(payload)
        ),
    )


TRANSCRIPT_TAIL = 8 << 20  # bytes: the last message is near the end of events.jsonl
_SETTLE_POLL = 0.05  # seconds between two reads of a transcript not yet written up to the stop


def stop_stamp(payload: Any) -> int | None:
    """The moment a stop payload names, in ms: Copilot writes the same ``timestamp`` into
    the ``hook.start`` of that stop in its transcript, which tells this stop from an earlier
    one. An int in ms (camelCase) or ISO 8601 (the VS Code compatible shape); else None."""
    stamp = payload.get("timestamp") if isinstance(payload, Mapping) else None
    if isinstance(stamp, bool):
        return None
    if isinstance(stamp, (int, float)):
        return int(stamp)
    if isinstance(stamp, str):
        from datetime import datetime

        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            return None
        return int(moment.timestamp() * 1000)
    return None


def last_message(transcript_path: str | None, stamp: int | None = None) -> str | None:
    """The agent's last text of the turn that stopped: the last ``assistant.message`` with
    text after the last ``user.message`` of Copilot's ``events.jsonl``; None when there is
    none or the file cannot be read (the stop is then a claim of done, never an escalation).
    Copilot writes the file lazily (it may not even exist when the first stop's hook
    starts, and a later stop may find the file ending at an earlier stop's ``hook.start``):
    until it shows a text and then the ``hook.start`` of this ``agentStop`` (its ``stamp``,
    when the payload gave one), it is read again, for at most the hooks' settle time. A text
    an earlier stop already judged is never this stop's."""
    if not transcript_path:
        return None
    deadline = time.monotonic() + max(0.0, settle_seconds())
    while True:
        found, complete = _last_text(transcript_path, stamp)
        if complete or time.monotonic() >= deadline:
            return found
        time.sleep(_SETTLE_POLL)


def _last_text(transcript_path: str, stamp: int | None) -> tuple[str | None, bool]:
    """(the last text after the last prompt, whether this stop's hook.start follows it)."""
    try:  # a regular file only: a FIFO planted in its place would block the read
        with os.fdopen(open_regular(transcript_path), "rb") as events:
            events.seek(max(0, os.fstat(events.fileno()).st_size - TRANSCRIPT_TAIL))
            lines = events.read().splitlines()
    except OSError:
        return None, False  # not written yet, or never: waited for as one not written up
    found: str | None = None
    stopped = False
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        data = event.get("data") if isinstance(event, dict) else None
        data = data if isinstance(data, dict) else {}
        if kind == "user.message":
            found, stopped = None, False
        elif kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content.strip():
                found, stopped = content, False
        elif kind == "hook.start" and data.get("hookType") == CONTRACT.stop_event:
            if stamp is None or stop_stamp(data.get("input")) == stamp:
                stopped = True
            else:  # an earlier stop's: its text was judged there, its reply not written yet
                found, stopped = None, False
    return found, stopped and found is not None


# --- the hook set ----------------------------------------------------------------------------

HOOKS_FILE = Path(".github") / "hooks" / "pytest-acceptance.json"
HOOK_SET = "copilot"  # the hook set's folder under the plugin's hooks/
HOOK_COMMAND = "bash"  # the field of a hook that holds its command
HOOKS_VERSION = 1
IMPLEMENT_PROMPT = hosts.IMPLEMENT_PROMPT
SHELL_TOOL = "bash"
FILE_TOOLS = ("create", "edit")  # their target in toolArgs.path
PATCH_TOOL = "apply_patch"  # toolArgs is the patch text itself
HOOKS_FOLDER = Path(".github") / "hooks"
# Our hooks: event, script (hooks/copilot/), timeoutSec, well above the scripts' own
# deadlines (prompt 100 s, stop stop_decision.DEADLINE = 840 s): Copilot drops a hook past
# its timeout and lets the event through.
HOOKS = (
    ("userPromptSubmitted", "prompt.py", 120),
    ("preToolUse", "pretool.py", 30),
    (CONTRACT.stop_event, "stop.py", 900),
)
SCRIPTS_FOLDER = ("hooks", "copilot")


def copilot_home() -> Path:
    return Path("~/.copilot").expanduser()


def neutral_payload(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A prompt or tool hook's camelCase payload in the field names the shared modules read
    (``session_id``, ``tool_name``, ``tool_input``); Copilot's own fields kept."""
    payload = dict(raw)
    for camel, neutral in (
        ("sessionId", "session_id"),
        ("toolName", "tool_name"),
        ("toolArgs", "tool_input"),
        ("transcriptPath", "transcript_path"),
    ):
        if camel in raw and neutral not in raw:
            payload[neutral] = raw[camel]
    return payload


def specific_output(specific: Mapping[str, Any]) -> dict[str, Any]:
    """Copilot reads a prompt hook's context and a tool hook's decision at the top level."""
    return {
        key: specific[key]
        for key in ("additionalContext", "permissionDecision", "permissionDecisionReason")
        if key in specific
    }


def ours_hook(hook: object) -> bool:
    """A hook of ours: its command runs one of the plugin's Copilot scripts."""
    command = hook.get(HOOK_COMMAND) if isinstance(hook, dict) else None
    return isinstance(command, str) and any(
        f"/{SCRIPTS_FOLDER[0]}/{SCRIPTS_FOLDER[1]}/{script}" in command for _, script, _ in HOOKS
    )


def our_hooks(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Our hook of each event in a hooks file, by event."""
    events = config.get("hooks")
    found: dict[str, dict[str, Any]] = {}
    for event, hooks in events.items() if isinstance(events, dict) else ():
        for hook in hooks if isinstance(hooks, list) else []:
            if ours_hook(hook):
                found[event] = hook
    return found


def hooks_problems(project: Path) -> list[str]:
    """Why Copilot would skip a hook of ours in `project` (empty when none is skipped): our
    hooks file missing or not version 1, a hook of ours missing or with a timeout under the
    installer's, or ``disableAllHooks`` in that file or the user's settings."""
    path = project / HOOKS_FILE
    config = hosts.json_object(path)
    if config is None:
        return [f"{path} is missing or unreadable"]
    problems = []
    if config.get("version") != HOOKS_VERSION:
        problems.append(f"{path} is not a version {HOOKS_VERSION} hooks file")
    hooks = our_hooks(config)
    for event, _, timeout in HOOKS:
        hook = hooks.get(event)
        if hook is None:
            problems.append(f"{path} has no {event} hook of ours")
        elif not isinstance(hook.get("timeoutSec"), int) or hook["timeoutSec"] < timeout:
            problems.append(f"the {event} hook's timeoutSec in {path} is under {timeout}")
    for where, layer in ((path, config), ("~/.copilot/settings.json", _user_settings())):
        if layer is not None and layer.get("disableAllHooks") is True:
            problems.append(f"disableAllHooks is true in {where}: Copilot runs no hook")
    return problems


def _user_settings() -> dict[str, Any] | None:
    return hosts.json_object(copilot_home() / "settings.json")


def skipped_hooks(cwd: str | None) -> str | None:
    """The warning to give when Copilot would skip a hook of ours in the project at `cwd`."""
    return hosts.not_fully_gated(HOOK_SET, hooks_problems(Path(cwd or os.getcwd())))


# --- the guard: what a bash, create, edit or apply_patch call writes ----------------------------


def protected_paths(flow: Flow) -> protect.Protected:
    """The pinned spec, the project's `.github/hooks/` (the hooks that gate this flow) and
    `.claude/` (Copilot runs the hooks of its settings too), Copilot's home (its settings,
    the sessions, the gate's state) and the plugin; plus what protect.py protects by name
    (.git, .acceptance, ...)."""
    trees = [
        (Path(flow.repo) / HOOKS_FOLDER, "`.github/hooks/` holds the hooks that gate this flow"),
        (Path(flow.repo) / ".claude", "Copilot also runs the hooks of `.claude/settings.json`"),
        (copilot_home(), "Copilot's home holds its settings, the sessions and the gate's state"),
        (PLUGIN_ROOT, protect.PLUGIN_WHY),
    ]
    return protect.protecting(flow.spec_path, trees)


def protected_target(flow: Flow, payload: Mapping[str, Any]) -> str | None:
    """What a bash, create, edit or apply_patch call (a neutral payload) would write among
    the protected paths, described; None when it writes none of them (or is another tool)."""
    tool_name, tool_input = payload.get("tool_name"), payload.get("tool_input")
    cwd = Path(str(payload.get("cwd") or flow.repo))
    protected = protected_paths(flow)
    if tool_name == SHELL_TOOL and isinstance(tool_input, dict):
        command = tool_input.get("command")
        found = protect.bash_violations(command, cwd, protected) if isinstance(command, str) else []
    elif tool_name in FILE_TOOLS and isinstance(tool_input, dict):
        found = protect.named_violations(str(tool_name), [tool_input.get("path")], cwd, protected)
    elif tool_name == PATCH_TOOL and isinstance(tool_input, str):
        found = protect.patch_violations(tool_input, cwd, protected)
    else:
        return None
    return protect.describe(found) if found else None


ADAPTER = prompt_flow.adapter(
    CONTRACT,
    recognises,
    read,
    copilot_home,
    skipped_hooks,
    specific_output=specific_output,
    hook_payload=neutral_payload,
)
