"""The agent options: a pytest plugin module (listed in ``plugin.pytest_plugins``), so
pytest loads it in every run of every project that has the plugin installed. It imports
nothing of the agent machinery until ``--acceptance`` is given. It makes xdist run agent
checks in waves when the user chose no ``-n``, and registers the verifier (verifier.py)
with the settings the options resolve to (settings.py).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from pytest_acceptance.agent.settings import (
    AGENT_CHOICES,
    DEFAULT_WAVE,
    resolve_settings,
    wave_size,
)


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
