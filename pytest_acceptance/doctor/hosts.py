"""The agents doctor checks: one entry per host, its name and its checks (adding a host is
one more entry here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_acceptance.doctor import Check, Options, claude_code, codex, copilot, gemini

HOSTS: dict[str, Callable[[Options], Sequence[Check]]] = {
    claude_code.HOST: claude_code.checks,
    codex.HOST: codex.checks,
    gemini.HOST: gemini.checks,
    copilot.HOST: copilot.checks,
}
