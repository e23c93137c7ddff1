"""The agent settings the options resolve to: who judges agent criteria, with what model,
budget and votes, how many at once. A bad value is a one-line usage error.

Imported by options.py in every pytest run of a project that has the plugin installed: it
imports nothing of the agent machinery.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_acceptance.agent.backends import Backend

DEFAULT_WAVE = 5
AGENT_CHOICES = ("claude", "command", "none")


@dataclass(frozen=True)
class AgentSettings:
    backend: Backend | None
    unavailable: str  # why there is no backend
    model: str | None
    wave: int
    cache: bool
    log_path: Path | None
    max_cost: float | None = None  # USD for the run's agent calls
    votes: int = 1


def resolve_settings(config: pytest.Config) -> AgentSettings:
    """The agent configuration from options and ini; pytest.UsageError on a bad value."""
    from pytest_acceptance.options import ini_value

    backend, unavailable = _resolve_backend(config)
    model = config.getoption("acceptance_model") or str(
        ini_value(config, "acceptance_model", "a model's name")
    )
    cache = bool(
        config.getoption("acceptance_cache")
        or ini_value(config, "acceptance_cache", "true or false")
    )
    return AgentSettings(
        backend,
        unavailable,
        model.strip() or None,
        wave_size(config),
        cache,
        _log_path(config),
        max_cost(config),
        votes(config),
    )


def max_cost(config: pytest.Config) -> float | None:
    """The budget in USD (above 0), or None for no budget."""
    value = config.getoption("acceptance_max_cost", None)
    source = "--acceptance-max-cost"
    if value is None:
        if not str(config.getini("acceptance_max_cost")).strip():
            return None
        from pytest_acceptance.options import ini_number

        wanted = "an amount in USD above 0"
        value = ini_number(config, "acceptance_max_cost", float, wanted, positive=True)
        source = "ini acceptance_max_cost"
    if not value > 0 or value == float("inf"):
        raise pytest.UsageError(f"{source} = {value!r}: give an amount in USD above 0")
    return float(value)


def votes(config: pytest.Config) -> int:
    return _at_least_one(config, "acceptance_votes", "a whole number of judges, at least 1")


def wave_size(config: pytest.Config) -> int:
    return _at_least_one(config, "acceptance_wave", "a whole number of at least 1")


def _at_least_one(config: pytest.Config, name: str, wanted: str) -> int:
    """``--acceptance-x`` else ini ``acceptance_x``: a whole number of at least 1."""
    from pytest_acceptance.options import ini_number

    value = config.getoption(name, None)
    source = "--" + name.replace("_", "-")
    if value is None:  # a TOML number or a string, read as pytest's ini type allows
        value, source = ini_number(config, name, int, wanted), f"ini {name}"
    if value < 1:
        raise pytest.UsageError(f"{source} = {value!r}: give {wanted}")
    return int(value)


def _resolve_backend(config: pytest.Config) -> tuple[Backend | None, str]:
    from pytest_acceptance.options import ini_value

    choices = ", ".join(AGENT_CHOICES)
    choice, chosen_by = config.getoption("acceptance_agent"), "--acceptance-agent"
    if not choice:
        choice = str(ini_value(config, "acceptance_agent", f"one of {choices}"))
        chosen_by = "ini acceptance_agent ="
    choice = choice.strip()
    if choice not in ("", *AGENT_CHOICES):
        raise pytest.UsageError(f"{chosen_by} {choice!r}: use one of {choices}")
    command, source = config.getoption("acceptance_agent_command"), "--acceptance-agent-command"
    if not command:
        command = str(ini_value(config, "acceptance_agent_command", "a command line"))
        source = "ini acceptance_agent_command ="
    from pytest_acceptance.agent.backends import (
        ClaudeBackend,
        ClaudeNotFound,
        CommandBackend,
        find_claude,
    )

    if choice == "none":
        return None, f"the agent is switched off ({chosen_by} none)"
    if choice == "command" or (not choice and command.strip()):
        return CommandBackend(_command_words(command, source)), ""
    explicit = config.getoption("acceptance_claude") or str(config.getini("acceptance_claude"))
    try:
        return ClaudeBackend(find_claude(explicit.strip() or None)), ""
    except ClaudeNotFound as tried:
        if explicit.strip():
            from pytest_acceptance.model import one_line

            given = config.getoption("acceptance_claude")
            source = "--acceptance-claude" if given else "ini acceptance_claude"
            raise pytest.UsageError(f"{source}: {one_line(str(tried), 300)}") from None
        return None, f"no Claude Code CLI found ({tried}) and no agent command is configured"


def _command_words(command: str, source: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise pytest.UsageError(f"{source} {command!r}: {error}") from None
    if not words:
        raise pytest.UsageError(
            "acceptance_agent = command needs the command: --acceptance-agent-command CMD "
            "or acceptance_agent_command = CMD in the pytest ini section"
        )
    return words


def _log_path(config: pytest.Config) -> Path | None:
    value = config.getoption("acceptance_log")
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_file():
        raise pytest.UsageError(
            f"--acceptance-log {value}: no such file; pass the implementation log "
            "(/tmp/implement-log-*.md) or leave the option out"
        )
    return path
