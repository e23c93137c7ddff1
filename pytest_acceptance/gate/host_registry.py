"""Every host the gate knows, and whose stop payload a hook received.

Several hosts run the hooks of another host's settings file (Copilot CLI and Cursor run
those of ``.claude/settings.json``): a hook written for one host may receive another's
payload. :func:`whose` tells them apart by what each host's payload carries that the
others' do not; Claude Code's is recognised last, as the payload with no other host's mark.
A hook that receives a payload of another host steps aside (stop_decision.py): that host's
own adapter judges its stops, so the gate runs once and never reads a transcript in a
format it was not written for.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.gate import (
    hook_io,
    host_claude,
    host_codex,
    host_copilot,
    host_cursor,
    host_gemini,
)
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.hosts import HostAdapter, HostContract

# Most specific first: the last one takes what no other host claims.
ADAPTERS: tuple[HostAdapter, ...] = (
    host_codex.ADAPTER,
    host_copilot.ADAPTER,
    host_gemini.ADAPTER,
    host_cursor.ADAPTER,
    host_claude.ADAPTER,
)
CONTRACTS: tuple[HostContract, ...] = tuple(adapter.contract for adapter in ADAPTERS)


def whose(payload: Mapping[str, Any]) -> HostAdapter | None:
    """The host that sent this stop payload, or None when no host's contract fits it."""
    return next((adapter for adapter in ADAPTERS if adapter.recognises(payload)), None)


def adapter(name: str) -> HostAdapter:
    for candidate in ADAPTERS:
        if candidate.contract.name == name:
            return candidate
    raise KeyError(f"no host adapter named {name!r}")


def answering_for(own: HostAdapter, raw: Mapping[str, Any]) -> HostAdapter:
    """The host whose shape the answer to this stop takes: the host that sent it, when that
    is another host that runs `own`'s settings file; else `own`."""
    owner = whose(raw)
    if owner is None or owner is own or not owner.shares_settings_with(own):
        return own
    return owner


def left_to_its_host(own: HostAdapter, raw: Mapping[str, Any]) -> bool:
    """Whether `own`'s hook leaves this stop to the host that sent it: another host that
    runs `own`'s settings file, with no flow of ours open in its session (its own adapter
    judges it: the gate runs once, and no transcript is read in a format it was not written
    for). A flow our hooks pinned in that session is judged by `own`'s hook as any, fail-
    closed. An unreadable pin raises (the hook then blocks: in doubt, inside a flow)."""
    sender = answering_for(own, raw)
    if sender is own:
        return False
    session_id = sender.read(raw).session_id
    pin = Flow.load(session_id) if session_id else None
    return pin is None or not pin.is_open


def take(own: HostAdapter, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The neutral payload of a stop `own`'s hook received, every answer of the hook set to
    be written in the shape of the host that sent it; None when the stop is left to that
    host (left_to_its_host), with a note where that host shows one."""
    sender = answering_for(own, raw)
    hook_io.answer_with(sender.render)
    if left_to_its_host(own, raw):
        hook_io.tell_user(
            f"pytest-acceptance: this stop came from {sender.contract.title}, which also runs "
            f"the hooks of {own.contract.title}; its own adapter judges it (docs/hosts.md)."
        )
        return None
    # Read by the host that sent it: a stop of another host in a flow of ours names its
    # session in that host's words (Cursor's conversation_id), which `own` would miss.
    return sender.read(raw).neutral_payload(raw)


# The hosts this repository ships a hook set for (the flow pinned, its stops judged), by the
# stop hook that reads through the host's adapter. The other adapters are contracts proved
# against their hosts, with no hook set of ours there yet (docs/hosts.md).
STOP_HOOKS: dict[str, str] = {
    host_claude.CONTRACT.name: "hooks/stop_implement_hook.py",
    host_codex.CONTRACT.name: "hooks/codex/stop.py",
    host_copilot.CONTRACT.name: "hooks/copilot/stop.py",
    host_gemini.CONTRACT.name: "hooks/gemini/stop.py",
}
