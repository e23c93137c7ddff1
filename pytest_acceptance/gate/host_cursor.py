"""Cursor as a host of the gate: its ``stop`` hook can only send a follow-up message.

Hooks live in ``.cursor/hooks.json`` (``{"version": 1, "hooks": {"stop": [...]}}``); Cursor
also runs the hooks of ``.claude/settings.json``. A ``stop`` hook runs after the agent has
stopped: its only answer is ``{"followup_message": ...}``, submitted as the next user
message, at most ``loop_limit`` times in a row (default 5). It cannot refuse the stop, so
the gate cannot promise there that a session never ends on failing criteria: only that
its refusal is sent back as the next message while the loop limit allows, and that every
stop it would have refused is recorded. The payload carries ``conversation_id``,
``generation_id``, ``status``, ``loop_count``, ``workspace_roots`` and
``hook_event_name`` ``stop``.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.gate.hosts import FOLLOW_UP, HostAdapter, HostContract, StopEvent, text

CONTRACT = HostContract(
    name="cursor",
    title="Cursor",
    support=FOLLOW_UP,
    stop_event="stop",
    block_fields=(),
    reason_field="followup_message",
    exit_2="not a refusal: the stop has already happened",
    default_timeout=30,
    block_cap=5,
    loop_flag="loop_count",
    message_field=None,
    ends_session=False,
    settings_files=("~/.cursor/hooks.json", ".cursor/hooks.json", ".claude/settings.json"),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    return payload.get("hook_event_name") == CONTRACT.stop_event or (
        "conversation_id" in payload and "generation_id" in payload
    )


def _folder(payload: Mapping[str, Any]) -> str | None:
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        return roots[0]
    return text(payload, "cwd")


def read(payload: Mapping[str, Any]) -> StopEvent:
    count = payload.get("loop_count")
    return StopEvent(
        host=CONTRACT.name,
        session_id=text(payload, "conversation_id", "session_id"),
        cwd=_folder(payload),
        transcript_path=text(payload, "transcript_path"),
        loop=isinstance(count, int) and not isinstance(count, bool) and count > 0,
        last_message=None,
    )


ADAPTER = HostAdapter(CONTRACT, recognises, read)
