"""Every hook test gets its own plugin state folder ($CLAUDE_PLUGIN_DATA of its hook runs),
with the environment digests earlier tests kept."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import hook_transcripts
import pytest
from hook_transcripts import SPEC_TEXT, VALUE_SPEC, git, make_repo
from support import gate_python
from support.codex_cli import CodexInstallError, installed_codex
from support.codex_harness import ResponsesStandIn, Turn, codex_setup, install_gate
from support.codex_session import Session
from support.copilot_cli import CopilotInstallError, installed_copilot
from support.copilot_harness import ChatCompletions
from support.copilot_harness import Turn as CopilotTurn
from support.copilot_harness import serving as serving_copilot
from support.copilot_session import Session as CopilotSession
from support.gemini_cli import GeminiInstallError, installed_gemini
from support.gemini_harness import GeminiAPI, gemini_home, serving
from support.gemini_harness import Turn as GeminiTurn
from support.gemini_session import Session as GeminiSession
from support.isolation import machine_level, wrapper_for
from support.kept_digests import carried


@pytest.fixture(autouse=True)
def plugin_state(tmp_path: Path, kept_environments: Path) -> Iterator[Path]:
    folder = tmp_path / "plugin-data"
    hook_transcripts.PLUGIN_DATA["current"] = folder
    with carried(kept_environments, folder):
        yield folder
    hook_transcripts.PLUGIN_DATA.pop("current", None)


@pytest.fixture
def no_settling(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's hook code reads a transcript once (hook_transcripts.NO_SETTLING)."""
    for name, value in hook_transcripts.NO_SETTLING.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def installed_plugins() -> Iterator[None]:
    """The gate verifies with the test environment's interpreter: the criteria's runs load
    its pytest plugins (pytest-randomly, hypothesis, ...), as a user's environment may."""
    hook_transcripts.GATE_PYTHON[:] = [sys.executable]
    yield
    hook_transcripts.GATE_PYTHON[:] = [gate_python.EXECUTABLE]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with the spec and a value that does not meet it yet."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "agent@example.com")
    git(repo, "config", "user.name", "Agent")
    (repo / "spec.md").write_text(VALUE_SPEC)
    (repo / "value.txt").write_text("1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spec")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with specs/feature.md; AC-1 fails on this tree (app.py says
    VALUE = 1) until a test makes it pass."""
    return make_repo(tmp_path / "repo", SPEC_TEXT)


@pytest.fixture
def spec(repo: Path) -> Path:
    return repo / "specs" / "feature.md"


# --- the real Codex CLI (tests/support/codex_session.py) -----------------------------------


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex CLI (`tests/support/codex_cli.py install`); never downloaded here."""
    try:
        return installed_codex()
    except CodexInstallError as error:
        pytest.fail(f"the real Codex CLI is needed and missing: {error}", pytrace=False)


@pytest.fixture
def codex_session(
    tmp_path: Path, codex_bin: Path, project: Path, kept_environments: Path
) -> Iterator[Callable[[list[Turn]], Session]]:
    """Starts the Responses stand-in with the given turns, a fresh CODEX_HOME, and the gate
    installed into `project` (spec.md: AC-1 fails until value.txt says 2)."""
    started: list[ResponsesStandIn] = []

    def start(script: list[Turn]) -> Session:
        api = ResponsesStandIn(script).start()
        started.append(api)
        setup = codex_setup(tmp_path / "codex", codex_bin, api)
        installed = install_gate(setup, project, hook_transcripts.REPO_ROOT)
        assert installed.returncode == 0, installed.stderr
        return Session(api, setup, project)

    with carried(kept_environments, tmp_path / "codex" / "codex-home" / "pytest-acceptance"):
        yield start
    for api in started:
        api.stop()


# --- the real Gemini CLI (tests/support/gemini_session.py) ---------------------------------


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned Gemini CLI (`tests/support/gemini_cli.py install`); never downloaded here."""
    try:
        return installed_gemini()
    except GeminiInstallError as error:
        pytest.fail(f"the real Gemini CLI is needed and missing: {error}", pytrace=False)


@pytest.fixture
def gemini_session(
    tmp_path: Path, gemini_bin: Path, project: Path, kept_environments: Path
) -> Iterator[Callable[[list[GeminiTurn]], GeminiSession]]:
    """Starts the Gemini API stand-in with the given turns, a fresh HOME, and the gate
    installed into `project` (spec.md: AC-1 fails until value.txt says 2)."""
    home = gemini_home(tmp_path / "gemini-home")
    with contextlib.ExitStack() as running:

        def start(script: list[GeminiTurn]) -> GeminiSession:
            api = running.enter_context(serving(GeminiAPI(list(script))))
            session = GeminiSession(api, gemini_bin, home, project)
            installed = session.install(hook_transcripts.REPO_ROOT)
            assert installed.returncode == 0, installed.stderr
            return session

        with carried(kept_environments, home / ".gemini" / "pytest-acceptance"):
            yield start


# --- the real Copilot CLI (tests/support/copilot_session.py) --------------------------------


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    """The pinned Copilot CLI (`tests/support/copilot_cli.py install`); never downloaded here."""
    try:
        return installed_copilot()
    except CopilotInstallError as error:
        pytest.fail(f"the real Copilot CLI is needed and missing: {error}", pytrace=False)


@pytest.fixture
def copilot_session(
    tmp_path: Path, copilot_bin: Path, project: Path, kept_environments: Path
) -> Iterator[Callable[..., CopilotSession]]:
    """Starts the Chat Completions stand-in with the given turns (and model), a fresh HOME,
    and the gate installed into `project` (spec.md: AC-1 fails until value.txt says 2)."""
    home = tmp_path / "copilot-home"
    home.mkdir()
    with contextlib.ExitStack() as running:

        def start(script: list[CopilotTurn], **api: str) -> CopilotSession:
            stand_in = running.enter_context(serving_copilot(ChatCompletions(list(script), **api)))
            session = CopilotSession(stand_in, copilot_bin, home, project)
            installed = session.install(hook_transcripts.REPO_ROOT)
            assert installed.returncode == 0, installed.stderr
            return session

        with carried(kept_environments, home / ".copilot" / "pytest-acceptance"):
            yield start


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test run at each isolation level is marked `isolation_level`, whether its file
    says so or not: CI runs these again on a view of the machine without bubblewrap. There,
    with --machine-level-only, only at the level the machine gives: a level below it is
    made by the same wrapper here as in the suite's run, which ran it already."""
    for item in items:
        if "isolation_level" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.isolation_level)
    if config.getoption("machine_level_only"):
        below = [item for item in items if _level(item) not in (None, machine_level())]
        config.hook.pytest_deselected(items=below)
        items[:] = [item for item in items if _level(item) in (None, machine_level())]


def _level(item: pytest.Item) -> str | None:
    """The isolation level an `isolation_level` test is parametrized with (through the
    fixture, or as its own `level`); None for any other test."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.get_closest_marker("isolation_level") is None:
        return None
    return callspec.params.get("isolation_level", callspec.params.get("level"))


@pytest.fixture
def isolation_level(request: pytest.FixtureRequest) -> Iterator[str]:
    """The isolation level (parametrized indirectly, see hook_transcripts.level_params) the
    test's hooks run at: below this machine's own, each hook runs with the wrapper that
    gives it hidden (support/isolation.py)."""
    level = str(request.param)
    hook_transcripts.HOOK_WRAPPER[:] = wrapper_for(level)
    yield level
    hook_transcripts.HOOK_WRAPPER.clear()
