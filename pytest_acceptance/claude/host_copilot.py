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
message.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.claude.hosts import BLOCKING, HostAdapter, HostContract, StopEvent, text

CONTRACT = HostContract(
    name="copilot-cli",
    title="GitHub Copilot CLI",
    support=BLOCKING,
    stop_event="agentStop",
    block_fields=(("decision", "block"),),
    reason_field="reason",
    answer_exit_code=0,
    exit_2="a warning only: the agent stops",
    timeout_unit="s",
    default_timeout=30,
    timeout_fails_open=True,
    block_cap=8,
    loop_flag="stop_hook_active",
    message_field=None,
    ends_session=False,
    neutral_answers=False,
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
        last_message=None,
    )


ADAPTER = HostAdapter(CONTRACT, recognises, read)
