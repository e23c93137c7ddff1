"""Claude Code as a host of the gate: its documented Stop hook contract and its payload.

Claude Code is the host whose vocabulary the decisions speak: its answers pass unchanged.
A Stop answer ``{"decision": "block", "reason": ...}`` on stdout with exit 0 (or exit 2
with the reason on stderr) keeps the session going; ``{"continue": false, "stopReason":
...}`` ends it as ``stop_hook_prevented``; after 8 consecutive blocks the CLI lets the stop
through by itself (caps.py counts the same blocks first, to record the stop as forced).

Its payload is recognised last (host_registry.py): a Stop payload that carries none of the
marks of another host that reads ``.claude/settings.json`` is Claude Code's.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.gate.hosts import HostAdapter, HostContract, StopEvent, claude_style_stop

CONTRACT = HostContract(
    name="claude-code",
    title="Claude Code",
    stop_event="Stop",
    exit_2="blocks the stop; stderr is the reason",
    default_timeout=600,
    block_cap=8,
    neutral_answers=True,
    settings_files=(
        "~/.claude/settings.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
        "plugin hooks/hooks.json",
    ),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    event = payload.get("hook_event_name")
    return event in (None, "Stop", "SubagentStop")


def read(payload: Mapping[str, Any]) -> StopEvent:
    return claude_style_stop(CONTRACT.name, payload, "last_assistant_message")


ADAPTER = HostAdapter(CONTRACT, recognises, read)
