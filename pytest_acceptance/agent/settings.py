"""The agent options, and the settings they resolve to: who judges agent criteria, with
what model, budget and votes, how many at once.

A pytest plugin module (listed in ``plugin.pytest_plugins``), so pytest loads it in every
run of every project that has the plugin installed: it imports nothing of the agent
machinery until ``--acceptance`` is given. It makes xdist run agent checks in waves when
the user chose no ``-n``, and registers the verifier (verifier.py) for the run.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_acceptance.agent.backends import Backend

DEFAULT_WAVE = 5
AGENT_CHOICES = ("claude", "command", "none")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance")
    group.addoption(
        "--acceptance-agent",
        choices=AGENT_CHOICES,
        help="who judges agent criteria: the Claude Code CLI (default when `claude` is on "
        "PATH), a command (default when one is configured), or none. ini: acceptance_agent",
    )
    parser.addini("acceptance_agent", "claude | command | none (default: detect)", default="")
    group.addoption(
        "--acceptance-agent-command",
        metavar="CMD",
        help="judge agent criteria with CMD: it reads the prompt on stdin and prints the "
        "verdict JSON on stdout. ini: acceptance_agent_command",
    )
    parser.addini("acceptance_agent_command", "command backend (shell words)", default="")
    pair = _option_and_ini(parser, group)
    pair(
        "acceptance_claude",
        "the Claude Code CLI to judge with",
        metavar="PATH",
        help="the Claude Code CLI to judge with (default: the one bundled in an installed "
        "claude-agent-sdk, else `claude` on PATH)",
    )
    pair(
        "acceptance_max_cost",
        "budget of the run's agent calls, in USD",
        type=float,
        metavar="USD",
        help="stop calling agents once they cost USD in this run: the agent criteria left "
        "end as errors (budget exhausted)",
    )
    pair(
        "acceptance_votes",
        "independent judges per agent check",
        default="1",
        type=int,
        metavar="N",
        help="ask N independent judges per agent check; the majority decides, a split is "
        "marked unstable (default 1)",
    )
    group.addoption("--acceptance-model", metavar="MODEL", help="default model of agent checks")
    parser.addini("acceptance_model", "default model of agent checks", default="")
    group.addoption(
        "--acceptance-wave",
        type=int,
        metavar="N",
        help=f"at most N agent checks at once (default {DEFAULT_WAVE}); without -n, "
        "xdist starts that many workers. ini: acceptance_wave",
    )
    parser.addini(
        "acceptance_wave", "at most N agent checks at once", type="int", default=DEFAULT_WAVE
    )
    group.addoption(
        "--acceptance-log",
        metavar="PATH",
        help="the implementation log (/tmp/implement-log-*.md); agents get its tail as context",
    )
    group.addoption(
        "--acceptance-cache",
        action="store_true",
        default=False,
        help="reuse an agent's pass while the criterion, the agent configuration and the "
        "working tree are unchanged (.acceptance/cache). ini: acceptance_cache",
    )
    parser.addini("acceptance_cache", "reuse agent passes on an unchanged tree", type="bool")


def _option_and_ini(parser: pytest.Parser, group: Any) -> Callable[..., None]:
    """``--acceptance-x`` and ini ``acceptance_x`` at once; the option's help names the key."""

    def add(name: str, ini_help: str, default: str = "", **option: Any) -> None:
        option["help"] = f"{option['help']}. ini: {name}"
        group.addoption("--" + name.replace("_", "-"), **option)
        parser.addini(name, ini_help, default=default)

    return add


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, Any, Any]:
    # Before xdist turns numprocesses into workers (a wrapper runs before every tryfirst).
    _default_to_waves(config)
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("acceptance", None):
        return
    from pytest_acceptance.agent.verifier import AgentVerifier

    settings = resolve_settings(config)
    config.pluginmanager.register(AgentVerifier(settings, config), "acceptance-agent")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and config.known_args_namespace is not None:
        # The controller reports the run's configuration warnings (an unknown ini key...)
        # once; every worker reading the same ini must not report them again.
        filters = list(config.known_args_namespace.pythonwarnings or ())
        config.known_args_namespace.pythonwarnings = [
            *filters,
            "ignore::pytest.PytestConfigWarning",
        ]


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


def _default_to_waves(config: pytest.Config) -> None:
    """Without -n, start only the xdist workers that can be busy (workers.py)."""
    option = config.option
    if not config.getoption("acceptance", None) or not config.pluginmanager.hasplugin("xdist"):
        return
    if getattr(option, "numprocesses", None) is not None or hasattr(config, "workerinput"):
        return  # the user chose (-n, including -n 0), or this is a worker
    if option.collectonly or getattr(option, "usepdb", False):
        return
    if getattr(option, "dist", "no") != "no" or getattr(option, "tx", None):
        return  # the user configured distribution their own way
    from pytest_acceptance.agent.workers import default_workers

    try:
        count = default_workers(config, wave_size(config))
    except pytest.UsageError:
        return  # pytest_configure reports it
    if count is None:
        return
    option.numprocesses = count
    if count:
        option.dist = "load"
