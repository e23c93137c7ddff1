"""Shared fixtures. The real Claude Code CLI ones: claude_bin, messages_api, claude_home,
claude_path_dir (see tests/claude_harness.py for the stand-in they drive)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from support import gate_python, runs, suite_result
from support.claude_cli import ClaudeInstallError, installed_claude
from support.claude_harness import DEFAULT_IDLE_TIMEOUT, MessagesStandIn, Script
from support.claude_harness import claude_path_dir as make_claude_path_dir
from support.kept_digests import INLINE_PLUGIN_STATE, carried

# Hypothesis's timing checks measure the machine, not the code: on two cores shared with
# xdist workers and the real CLIs they start, drawing a few examples can take seconds.
settings.register_profile(
    "suite", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("suite")

_TREE_BEFORE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--machine-level-only",
        action="store_true",
        help="run each isolation-level test only at the level this machine's gate run gets "
        "(CI's run without bubblewrap: the levels below it are made by the same wrappers in "
        "the suite's run, tests/support/isolation.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The interpreter the tests' gates verify with is built before any test starts a gate
    (support/gate_python.py); xdist's workers find it ready."""
    try:
        gate_python.ensure()
    except gate_python.GatePythonError as error:
        raise pytest.UsageError(
            f"the tests' gate interpreter could not be built: {error}"
        ) from None


def _records_the_suite(config: pytest.Config) -> bool:
    """A run with --junitxml on the controller: it may stand for the whole suite."""
    return bool(config.option.xmlpath) and not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _records_the_suite(session.config):
        session.config.stash[_TREE_BEFORE] = suite_result.fingerprint(session.config.rootpath)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Record whether this run's JUnit file can be the project spec's evidence (see
    support/suite_result.py): a whole-suite run that passed and left the tree unchanged."""
    config = session.config
    if not _records_the_suite(config):
        return
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args]
    junit = Path(config.option.xmlpath).absolute()
    before = config.stash.get(_TREE_BEFORE, "")
    suite_result.record(config.rootpath, junit, args, int(exitstatus), before)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the real CLI is e2e, marked or not: the fast loop never runs one."""
    for item in items:
        if "claude_bin" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _only_the_plugin_in_started_runs(request: pytest.FixtureRequest) -> None:
    """The runs a test starts with pytester (pytester drops the outer PYTEST_ADDOPTS when it
    starts), and the pytest runs of their criteria, load the plugin and xdist, and of the
    test environment's other plugins only those the test's `started_runs_load` mark names
    (support/runs.py, plugins_left_out): pytest-randomly would reorder them, so an order the
    test reads would hold only by chance."""
    if "pytester" not in request.fixturenames:
        return
    marker = request.node.get_closest_marker("started_runs_load")
    options = runs.plugins_left_out(*(marker.args if marker else ()))
    request.getfixturevalue("pytester")
    request.getfixturevalue("monkeypatch").setenv("PYTEST_ADDOPTS", " ".join(options))


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real pinned `claude` binary, bundled in the pinned claude-agent-sdk that the test
    extra installs (the README's set-up). Never skips and never downloads it mid-run: fails
    with the next step."""
    try:
        return installed_claude()
    except ClaudeInstallError as error:
        pytest.fail(f"the real Claude Code CLI is needed and missing: {error}", pytrace=False)


@pytest.fixture
def messages_api() -> Iterator[Callable[..., MessagesStandIn]]:
    """Factory: `messages_api(script, idle_timeout=...)` starts a stand-in, stopped at teardown.

    Teardown fails the test when the script did not fit the conversation (exhausted, a
    callable that raised, an unexpected request), so a mismatch never passes quietly.
    """
    started: list[MessagesStandIn] = []

    def start(script: Script, idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> MessagesStandIn:
        stand_in = MessagesStandIn(script, idle_timeout=idle_timeout).start()
        started.append(stand_in)
        return stand_in

    yield start
    for stand_in in started:
        stand_in.stop()
        stand_in.wait_stopped(10)
    errors = [error for stand_in in started for error in stand_in.errors]
    if errors:
        pytest.fail("Messages API stand-in: " + "\n".join(errors), pytrace=False)


@pytest.fixture
def claude_home(tmp_path: Path, kept_environments: Path) -> Iterator[Path]:
    """A fresh HOME, so no user settings, plugins or sessions leak into a CLI run; only the
    environment digests the plugin's hooks kept in earlier tests are carried over."""
    home = tmp_path / "home"
    with carried(kept_environments, home / INLINE_PLUGIN_STATE):
        yield home


@pytest.fixture(scope="session")
def kept_environments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This process's kept environment digests (support/kept_digests.py)."""
    return tmp_path_factory.mktemp("kept-environments")


@pytest.fixture
def claude_path_dir(tmp_path: Path, claude_bin: Path) -> Path:
    """A directory holding a `claude` symlink to the real binary, to prepend to PATH."""
    return make_claude_path_dir(tmp_path / "claude-bin", claude_bin)
