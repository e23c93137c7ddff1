"""A judge's claims are checked where they can be: a ``file:line`` that is no line of a file
in the project is shown as the judge's claim, never as a place in the project."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.specs import criterion, spec

from pytest_acceptance.agent.prompt import checked_issues
from pytest_acceptance.model import Issue

SPEC_LINE = "specs/spec.md:7"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("one\ntwo\nthree\n")
    (tmp_path / "notes.txt").write_text("no newline at the end")
    (tmp_path.parent / "outside.py").write_text("x\n" * 200)
    return tmp_path


@pytest.mark.parametrize(
    "location",
    ["src/app.py:2", "src/app.py:1-3", "src/app.py:4", "notes.txt:1", SPEC_LINE],
)
def test_a_line_of_the_project_stays_the_location(project: Path, location: str) -> None:
    issue = Issue(location, "e", "a")
    assert checked_issues((issue,), project, SPEC_LINE) == (issue,)


@pytest.mark.parametrize(
    "location",
    [
        "nowhere.py:99",
        "src/app.py:99",  # past the end
        "src/app.py:2-40",
        "../outside.py:3",  # outside the project
        "src:1",  # a folder
        "src/app.py\x00:1",
    ],
)
def test_anything_else_is_the_judges_claim_at_the_criterions_line(
    project: Path, location: str
) -> None:
    [checked] = checked_issues((Issue(location, "e", "a"),), project, SPEC_LINE)
    assert checked.location == SPEC_LINE
    assert checked.actual == (
        f"a (the judge's claim: {location}, which is not a line of a file in the project)"
    )


def test_an_absolute_path_inside_the_project_is_a_place(project: Path) -> None:
    issue = Issue(f"{project / 'src' / 'app.py'}:3", "e", "a")
    assert checked_issues((issue,), project, SPEC_LINE) == (issue,)


def test_the_verdict_shows_a_made_up_location_as_the_judges_claim(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(criterion("AC-1", "Errors", method="subagent")))
    pytester.makefile(".py", app="x = 1\n")
    answer = {
        "status": "fail",
        "summary": "two problems",
        "issues": [
            {"location": "nowhere.py:99", "expected": "AppError", "actual": "Error()"},
            {"location": "app.py:1", "expected": "x = 2", "actual": "x = 1"},
        ],
    }
    judge = pytester.makepyfile(
        judge=f"import sys; sys.stdin.read(); print({json.dumps(json.dumps(answer))})"
    )
    result = pytester.runpytest(
        "--acceptance", "spec.md", "-n", "0", "--acceptance-agent-command",
        f"{sys.executable} {judge}",
    )  # fmt: skip
    assert result.ret == 1
    text = result.stdout.str()
    assert "Location: nowhere.py:99" not in text
    result.stdout.fnmatch_lines(
        [
            "  Location: spec.md:*",
            "  Actual: Error() (the judge's claim: nowhere.py:99, which is not a line of a "
            "file in the project)",
            "  Location: app.py:1",
        ]
    )
