"""`pytest --acceptance spec.md` collects one item per criterion that pytest users can
select, rerun and report on like any test."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.specs import bash, manual, spec

# Seed 000, the design of this repository's Claude Code plugin, kept as a spec in the repo.
SEED = Path(__file__).resolve().parents[2] / "specs" / "implement-skill-system.md"

THREE = spec(
    bash("AC-1", "true", "passes"),
    bash("AC-2", "exit 3", "fails"),
    manual("AC-3", "looks right"),
)


@pytest.fixture
def three(pytester: pytest.Pytester) -> Path:
    return pytester.makefile(".md", spec=THREE)


def test_each_criterion_is_an_item_with_a_spec_node_id(
    pytester: pytest.Pytester, three: Path
) -> None:
    result = pytester.runpytest("--acceptance", "spec.md", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["spec.md::AC-1", "spec.md::AC-2", "spec.md::AC-3", "3 tests*"])


def test_equals_form_and_several_specs_are_collected(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", one=spec(bash("AC-1", "true")))
    pytester.makefile(".txt", two=spec(bash("REQ-7", "true")))
    result = pytester.runpytest("--acceptance=one.md", "--acceptance", "two.txt", "--co", "-q")
    result.stdout.fnmatch_lines(["one.md::AC-1", "two.txt::REQ-7", "2 tests*"])


def test_only_the_spec_is_collected_not_the_projects_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_other="def test_x(): pass")
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    result = pytester.runpytest("--acceptance", "spec.md", "--co", "-q")
    result.stdout.fnmatch_lines(["spec.md::AC-1", "1 test collected*"])
    result.stdout.no_fnmatch_line("*test_x*")


def test_seed_spec_collects_23_criteria_8_bash_15_subagent(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--acceptance", str(SEED), "--co", "-q", "-m", "bash")
    result.stdout.fnmatch_lines(["*::AC-2", "*::AC-7", "*::AC-18", "8/23 tests collected*"])
    result = pytester.runpytest("--acceptance", str(SEED), "--co", "-q", "-m", "subagent")
    result.stdout.fnmatch_lines(["*::AC-1", "*::AC-17", "15/23 tests collected*"])


def test_keyword_and_method_markers_select_criteria(pytester: pytest.Pytester, three: Path) -> None:
    result = pytester.runpytest("--acceptance", "spec.md", "-k", "AC-1 or AC-3", "--co", "-q")
    result.stdout.fnmatch_lines(["spec.md::AC-1", "spec.md::AC-3", "2/3 tests*"])
    result = pytester.runpytest("--acceptance", "spec.md", "-m", "not manual", "--co", "-q")
    result.stdout.fnmatch_lines(["spec.md::AC-1", "spec.md::AC-2", "2/3 tests*"])


def test_a_node_id_runs_just_that_criterion(pytester: pytest.Pytester, three: Path) -> None:
    result = pytester.runpytest("--acceptance", "spec.md", "spec.md::AC-1", "-v")
    result.stdout.fnmatch_lines(["spec.md::AC-1 * PASSED*"])
    assert "AC-2" not in result.stdout.str().split("acceptance verdict")[0]


def test_last_failed_reruns_only_the_failed_criterion(
    pytester: pytest.Pytester, three: Path
) -> None:
    pytester.runpytest("--acceptance", "spec.md")
    result = pytester.runpytest("--acceptance", "spec.md", "--lf", "-v")
    result.stdout.fnmatch_lines(["spec.md::AC-2 * FAILED*"])
    result.stdout.no_fnmatch_line("spec.md::AC-1 * PASSED*")


def test_exitfirst_stops_after_the_first_failure(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "false"), bash("AC-2", "true")))
    result = pytester.runpytest("--acceptance", "spec.md", "-x", "-v")
    result.stdout.fnmatch_lines(["spec.md::AC-1 * FAILED*"])
    result.stdout.no_fnmatch_line("spec.md::AC-2 * PASSED*")
    assert result.ret == 1


def test_junitxml_names_criteria_and_carries_their_properties(
    pytester: pytest.Pytester, three: Path
) -> None:
    pytester.runpytest(
        "--acceptance", "spec.md", "--junitxml", "out.xml", "-o", "junit_family=xunit1"
    )
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "out.xml").iter("testcase")}
    assert set(cases) == {"AC-1", "AC-2", "AC-3"}
    assert cases["AC-2"].find("failure") is not None
    props = {p.get("name"): p.get("value") for p in cases["AC-1"].iter("property")}
    assert props == {"criterion": "AC-1", "title": "passes", "method": "bash", "priority": "MUST"}


def test_reportinfo_points_at_the_criterion_heading_line(
    pytester: pytest.Pytester, three: Path
) -> None:
    items, _ = pytester.inline_genitems("--acceptance", "spec.md")
    heading_line = THREE.splitlines().index("#### AC-2: fails")
    path, lineno, description = items[1].reportinfo()
    assert (Path(path).name, lineno, description) == (
        "spec.md",
        heading_line,
        "AC-2: fails [bash]",  # -v lines show the method after the title
    )


@pytest.fixture
def outside_spec(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with its own ini, and a spec beside it (outside its rootdir)."""
    outside = pytester.mkdir("elsewhere")
    (outside / "spec.md").write_text(spec(bash("AC-1", "pwd > where.txt")))
    project = pytester.mkdir("project")
    (project / "pytest.ini").write_text("[pytest]\nacceptance_retries = 0\n")
    monkeypatch.chdir(project)
    return project


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_spec_outside_the_rootdir_keeps_the_project_as_rootdir(
    pytester: pytest.Pytester, outside_spec: Path, workers: list[str]
) -> None:
    result = pytester.runpytest_subprocess("--acceptance", "../elsewhere/spec.md", "-v", *workers)
    result.stdout.fnmatch_lines(
        [f"rootdir: {outside_spec}", "configfile: pytest.ini", "*../elsewhere/spec.md::AC-1*"]
    )
    result.stdout.fnmatch_lines(
        ["*PASSED*../elsewhere/spec.md::AC-1*"]
        if workers
        else ["../elsewhere/spec.md::AC-1 * PASSED*"]
    )
    assert result.ret == 0
    # bash ran from the project, and the verdict was written there
    assert (outside_spec / "where.txt").read_text().strip() == str(outside_spec)
    verdict = json.loads((outside_spec / ".acceptance" / "verdict.json").read_text())
    assert verdict["status"] == "pass" and verdict["complete"] is True


def test_a_missing_spec_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--acceptance", "nope.md")
    result.stderr.fnmatch_lines(["*--acceptance nope.md: no such file*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
