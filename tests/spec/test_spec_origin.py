"""A copy of a spec read as the spec it stands for (``--acceptance-spec-origin``): the
Claude Code gate verifies a copy pinned in its own state, and what the run makes of it
(which runner runs a Gherkin scenario, with which command and pass condition) must be what
the honest run makes of the project's spec, never what the copy's own folder suggests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_gherkin_run import behave_project, pytest_bdd_project

from pytest_acceptance import gate_probe
from pytest_acceptance.collect import load_spec

FEATURE = Path("features") / "cart.feature"
PROJECTS = {"behave": behave_project, "pytest-bdd": pytest_bdd_project}
pytestmark = pytest.mark.started_runs_load("pytest-bdd")


def reading(criteria: object) -> list[tuple[str, str, str | None, str | None]]:
    """What a run does with each criterion: (id, method, command, pass condition)."""
    return [(c.id, c.method.value, c.command, c.pass_condition) for c in criteria]  # type: ignore[attr-defined]


def copied(project: Path, elsewhere: Path) -> Path:
    """The project's feature file copied where no project lies (the gate's state)."""
    elsewhere.mkdir()
    return Path(shutil.copy(project / FEATURE, elsewhere / FEATURE.name))


@pytest.mark.parametrize("runner", sorted(PROJECTS))
def test_a_copy_is_read_as_its_origin(tmp_path: Path, runner: str) -> None:
    """The copy, read as the origin, gives the origin's criteria (the runner's command
    and condition); read as itself it would not (the test can fail)."""
    project = tmp_path / "project"
    project.mkdir()
    PROJECTS[runner](project)
    origin = project / FEATURE
    copy = copied(project, tmp_path / "state")
    honest = reading(load_spec(origin, project).criteria)
    assert all(method == "bash" for _, method, _, _ in honest), honest
    assert reading(load_spec(copy, project, origin).criteria) == honest
    located = {c.location.path for c in load_spec(copy, project, origin).criteria}
    assert located == {copy}, "its locations still name the file the run collects"
    if runner == "behave":  # the layout is read where the file lies: a copy alone has none
        assert reading(load_spec(copy, project).criteria) != honest


@pytest.mark.parametrize("runner", sorted(PROJECTS))
def test_the_gates_probe_pins_what_the_run_reads(tmp_path: Path, runner: str) -> None:
    """/implement's probe reads the copy as the gate's run does: the pinned method,
    command and pass condition are the ones the run reports."""
    project = tmp_path / "project"
    project.mkdir()
    PROJECTS[runner](project)
    origin = project / FEATURE
    copy = copied(project, tmp_path / "state")
    found, error = gate_probe.criteria(copy, origin, project)
    assert error is None
    pinned = [(c["id"], c["method"], c["command"], c["pass_condition"]) for c in found]
    assert pinned == reading(load_spec(origin, project).criteria)


@pytest.mark.parametrize("runner", sorted(PROJECTS))
def test_a_copy_runs_as_its_origin_runs(
    pytester: pytest.Pytester, tmp_path: Path, runner: str
) -> None:
    """Run end to end from the copy: every scenario gets the result the origin's run
    gives it (the project's runner ran it), and the verdict says how each was run."""
    PROJECTS[runner](pytester.path)
    copy = copied(pytester.path, tmp_path / "state")
    honest = pytester.runpytest_subprocess("--acceptance", str(FEATURE), "-n", "0")
    expected = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    origin = str(pytester.path / FEATURE)
    gate = pytester.runpytest_subprocess(
        "--acceptance", str(copy), "--acceptance-spec-origin", origin, "-n", "0"
    )
    found = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert gate.ret == honest.ret, gate.stdout.str()

    def runs(verdict: dict[str, list[dict[str, str]]]) -> list[tuple[str, ...]]:
        keys = ("id", "status", "method", "command", "pass_condition")
        return [tuple(c[key] for key in keys) for c in verdict["criteria"]]

    assert runs(found) == runs(expected)
