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

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.claude.hosts import (
    BLOCKING,
    HostAdapter,
    HostContract,
    StopEvent,
    claude_style_stop,
)

CONTRACT = HostContract(
    name="gemini-cli",
    title="Gemini CLI",
    support=BLOCKING,
    stop_event="AfterAgent",
    block_fields=(("decision", "deny"),),
    reason_field="reason",
    answer_exit_code=0,
    exit_2="rejects the response and retries with stderr as the prompt",
    timeout_unit="ms",
    default_timeout=60000,
    timeout_fails_open=True,
    block_cap=None,
    loop_flag="stop_hook_active",
    message_field="systemMessage",
    ends_session=True,
    neutral_answers=False,
    settings_files=("~/.gemini/settings.json", ".gemini/settings.json"),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    return payload.get("hook_event_name") == CONTRACT.stop_event


def read(payload: Mapping[str, Any]) -> StopEvent:
    return claude_style_stop(CONTRACT.name, payload, "prompt_response")


ADAPTER = HostAdapter(CONTRACT, recognises, read)
