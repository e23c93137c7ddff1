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

from pytest_acceptance.claude import (
    hook_io,
    host_claude,
    host_codex,
    host_copilot,
    host_cursor,
    host_gemini,
)
from pytest_acceptance.claude.hosts import HostAdapter, HostContract

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


def take(own: HostAdapter, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The neutral payload of a stop `own`'s hook received, its answers rendered in `own`'s
    shape; None when the payload is another host's that runs `own`'s settings file (the
    hook then answers nothing that host could read as a decision: its own adapter judges)."""
    owner = whose(raw)
    if owner is not None and owner is not own and owner.shares_settings_with(own):
        hook_io.answer_with(owner.render)
        hook_io.tell_user(
            f"pytest-acceptance: this stop came from {owner.contract.title}, which also runs "
            f"the hooks of {own.contract.title}; its own adapter judges it (docs/hosts.md)."
        )
        return None
    hook_io.answer_with(own.render)
    return own.read(raw).neutral_payload(raw)
