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
    taking = base.Taking({}, frozenset(), lambda: base.Collected((), frozenset()))
    project_configuration.PIN.take(flow, taking)
    return flow


def setup_of(repo: Path, settings: dict[str, str] | None = None) -> str | None:
    return gate_probe.honest_setup(repo / "specs" / "feature.md", repo, settings or {})


def test_the_files_an_honest_run_could_read_are_those_from_the_top_to_the_spec(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, {})
    flow = Flow(tmp_path, {"repo": str(repo), "spec_path": str(repo / "specs" / "feature.md")})
    folders = {str(Path(path).parent) for path in project_configuration.places(flow)}
    assert folders == {str(repo.resolve()), str((repo / "specs").resolve())}


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
