"""The honest run's configuration, in process: /implement's probe asks pytest itself how an
honest ``pytest --acceptance SPEC`` at the project's top is set up, against the gate's run
on the pinned settings (gate_probe.honest_setup), and the configuration files such a run
could read, from the top to the spec's folder, are pinned by content
(pins/project_configuration.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance import gate_probe
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, project_configuration


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    """A project at `tmp_path/repo` (a `.git` folder marks its top) with its spec and `files`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "specs").mkdir()
    (repo / "specs" / "feature.md").write_text("# Spec\n\n#### AC-1: works\n")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def pinned(tmp_path: Path, repo: Path) -> Flow:
    folder = tmp_path / "flow"
    folder.mkdir()
    flow = Flow(folder, {"repo": str(repo), "spec_path": str(repo / "specs" / "feature.md")})
    taking = base.Taking(
        {"startup_sources": []}, frozenset(), lambda: base.Collected((), frozenset())
    )
    project_configuration.PIN.take(flow, taking)
    return flow


def setup_of(repo: Path, settings: dict[str, str] | None = None) -> str | None:
    return gate_probe.honest_setup(repo / "specs" / "feature.md", repo, settings or {})[0]


def test_the_files_an_honest_run_could_read_are_those_from_the_top_to_the_spec(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, {})
    flow = Flow(tmp_path, {"repo": str(repo), "spec_path": str(repo / "specs" / "feature.md")})
    places = project_configuration.places(flow)
    folders = {str(Path(path).parent) for path in places}
    assert folders == {str(repo.resolve()), str((repo / "specs").resolve())}
    assert str(repo.resolve() / "conftest.py") in places


EDITS = {
    "changed": ("pytest.ini", "[pytest]\nacceptance_timeout = 1\n"),
    "was added": ("specs/tox.ini", "[pytest]\n"),
    "was removed": ("pytest.ini", None),
}


@pytest.mark.parametrize("said", sorted(EDITS))
def test_any_edit_of_a_configuration_since_implement_is_named(tmp_path: Path, said: str) -> None:
    repo = project(tmp_path, {"pytest.ini": "[pytest]\n"})
    flow = pinned(tmp_path, repo)
    assert project_configuration.read(flow).changes() == []
    name, text = EDITS[said]
    if text is None:
        (repo / name).unlink()
    else:
        (repo / name).write_text(text)
    (found,) = project_configuration.read(flow).changes()
    assert said in found and "pytest configuration" in found


def test_a_plain_configuration_runs_as_the_gates_run(tmp_path: Path) -> None:
    repo = project(tmp_path, {"pytest.ini": "[pytest]\nacceptance_timeout = 60\n"})
    assert setup_of(repo, {"acceptance_timeout": "60"}) is None


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"pytest.ini": "[pytest]\naddopts = --rootdir=pkg\n", "pkg/x": ""}, "its rootdir is"),
        (
            {"pytest.ini": "[pytest]\naddopts = -c pkg/other.ini\n",
             "pkg/other.ini": "[pytest]\nacceptance_timeout = 1\n"},
            "acceptance_timeout is 1",
        ),
        (
            {"pytest.ini": "[pytest]\n",
             "specs/pytest.ini": "[pytest]\naddopts = -o acceptance_retries=3\n"},
            "acceptance_retries is 3",
        ),
        ({"pytest.ini": "[pytest]\naddopts = -k 'not AC-1'\n"}, "selects criteria (-k"),
        ({"pytest.ini": "[pytest]\naddopts = -p no:acceptance\n"}, "blocks the plugin"),
        (
            {"pytest.ini": "[pytest]\naddopts = @ci/args\n",
             "ci/args": "-o\nacceptance_timeout=1\n"},
            "acceptance_timeout is 1",
        ),
    ],
)  # fmt: skip
def test_what_pytest_makes_of_the_configuration_is_compared(
    tmp_path: Path, files: dict[str, str], named: str
) -> None:
    """The settings the gate pinned say nothing of these; pytest's own setup of the honest
    run does: another rootdir (its addopts), another file (its -c), the addopts of the
    configuration beside the spec, read first."""
    repo = project(tmp_path, files)
    found = setup_of(repo)
    assert found is not None and named in found, found


def test_the_files_that_settled_the_setup_are_named_for_the_pin(tmp_path: Path) -> None:
    """The configuration file pytest chose, wherever addopts put it, and the argument files
    (nested ones too): the pin holds them by content."""
    repo = project(
        tmp_path,
        {
            "pytest.ini": "[pytest]\naddopts = @ci/args\n",
            "ci/args": "-q\n@more\n",
            "more": "-q\n",
        },
    )
    problem, files = gate_probe.honest_setup(repo / "specs" / "feature.md", repo, {})
    assert problem is None
    assert files == [str(repo / "pytest.ini"), str(repo / "ci" / "args"), str(repo / "more")]


BEFORE = "import pytest\n\n\n@pytest.fixture\ndef app():\n    return 1\n"
CONFTEST_EDITS = {
    "a fixture edited": ("@pytest.fixture\ndef other():\n    return 2\n", False),
    "a hook added": ("def pytest_runtest_call(item):\n    raise AssertionError\n", True),
    "a hook imported": ("from helpers import pytest_runtest_call\n", True),
    "plugins named": ("pytest_plugins = ['helpers']\n", True),
    "everything imported": ("from helpers import *\n", True),
    "a name made at run time": ("globals()['pytest_runtest_call'] = print\n", True),
}


@pytest.mark.parametrize("edit", sorted(CONFTEST_EDITS))
def test_a_conftest_counts_by_what_can_decide_results(tmp_path: Path, edit: str) -> None:
    """The honest run loads the conftest, the gate's run does not: a change of its hooks (or
    of anything that could define one) refuses; its fixtures stay the agent's to edit."""
    repo = project(tmp_path, {"pytest.ini": "[pytest]\n", "conftest.py": BEFORE})
    flow = pinned(tmp_path, repo)
    added, refuses = CONFTEST_EDITS[edit]
    (repo / "conftest.py").write_text(BEFORE + "\n\n" + added)
    assert bool(project_configuration.read(flow).changes()) is refuses


def test_a_conftest_added_without_hooks_changes_nothing(tmp_path: Path) -> None:
    repo = project(tmp_path, {"pytest.ini": "[pytest]\n"})
    flow = pinned(tmp_path, repo)
    (repo / "specs" / "conftest.py").write_text(BEFORE)
    assert project_configuration.read(flow).changes() == []
    (repo / "specs" / "conftest.py").write_text(BEFORE + "\ndef pytest_configure(config): ...\n")
    (found,) = project_configuration.read(flow).changes()
    assert "specs/conftest.py" in found
