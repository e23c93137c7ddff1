"""The requirement-to-evidence matrix: verdict.json, report.json/report.md and the HTML
report show each requirement with its criteria and the tasks citing it, with their
outcomes, and list the requirements that no runnable check verifies. The gate's strict
reading of verdict.json accepts the matrix and nothing hidden in it."""

from __future__ import annotations

import json

import pytest
from support.judges import Judge

from pytest_acceptance.gate.verdict_check import shape_problem

STORIES = """\
# Requirements: Reminders

### US-1: Schedule reminders

**Acceptance Criteria:**
- AC-1.1: The job queues reminders. Done when `test -f queue.txt` exits 0.
- AC-1.2: Given a reminded invoice, When the job runs again, Then nothing is queued

### US-2: Stop reminders

**Acceptance Criteria:**
- AC-2.1: Given a disputed invoice, When the job runs, Then no reminder is queued

## Functional Requirements

| ID | Requirement | Priority | Acceptance Criteria |
|----|-------------|----------|---------------------|
| FR-1 | Queue reminders | Must | AC-1.1, AC-1.2 |
| FR-2 | Let customers choose a language | Could | AC-9.9 |
"""

TASKS = """\
# Tasks

- [x] 1.1 Write the queue
  - _Requirements: AC-1.1_
- [x] 1.2 Honour disputes
  - _Requirements: US-2_
"""


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> pytest.RunResult:
    judge = Judge(tmp_path_factory.mktemp("judge"))
    judge.plan({"AC-2.1": ["fail"]})
    pytester.makeini(f"[pytest]\nacceptance_agent_command = {judge.command}\n")
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "requirements.md").write_text(STORIES)
    (pytester.path / "specs" / "tasks.md").write_text(TASKS)
    (pytester.path / "queue.txt").write_text("1\n")
    return pytester.runpytest_subprocess(
        "--acceptance", "specs", "-n", "0", "--acceptance-html", "report.html"
    )


def test_verdict_json_holds_each_requirement_with_its_evidence(
    pytester: pytest.Pytester, run: pytest.RunResult
) -> None:
    assert run.ret == 1, run.stdout.str()
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    rows = {row["id"]: row for row in verdict["requirements"]}
    assert list(rows) == ["US-1", "US-2", "FR-1", "FR-2"]
    assert rows["US-1"] | {"spec": ""} == {
        "id": "US-1",
        "title": "Schedule reminders",
        "spec": "",
        "line": 3,
        "status": "verified",
        "runnable": True,
        "criteria": ["AC-1.1", "AC-1.2"],
        "criteria_status": ["passed", "passed"],
        "tasks": [f"{pytester.path / 'specs' / 'tasks.md'}::1.1"],
        "tasks_status": ["passed"],
    }
    assert (rows["US-2"]["status"], rows["US-2"]["tasks_status"]) == ("failing", ["failed"])
    assert (rows["FR-2"]["status"], rows["FR-2"]["criteria"]) == ("unverified", [])
    spec = str(pytester.path / "specs" / "requirements.md")
    assert verdict["requirements_without_runnable_check"] == [f"{spec}::US-2", f"{spec}::FR-2"]
    assert shape_problem(verdict, []) is None  # the gate reads it as a verdict


def test_report_md_and_the_html_page_show_the_matrix(
    pytester: pytest.Pytester, run: pytest.RunResult
) -> None:
    markdown = next((pytester.path / ".acceptance" / "specs").glob("requirements-*/report.md"))
    text = markdown.read_text()
    cells = ["US-2: Stop reminders", "failing", "**no**", "AC-2.1 (failed)"]
    assert "| " + " | ".join([*cells, "specs/tasks.md::1.2 (failed)"]) + " |" in text
    assert "No runnable check (2): US-2, FR-2" in text
    page = (pytester.path / "report.html").read_text()
    assert "<h3>Requirements and their evidence</h3>" in page
    assert '<p class="norun">No runnable check (2): US-2, FR-2</p>' in page


def test_the_gate_rejects_a_verdict_hiding_an_object_in_the_matrix() -> None:
    row = {
        "id": "R", "title": "t", "spec": "s", "line": 1, "status": "verified", "runnable": True,
        "criteria": [], "criteria_status": [], "tasks": [], "tasks_status": [],
    }  # fmt: skip
    base = {
        "schema": "pytest-acceptance/verdict", "version": 1, "status": "pass", "exit_code": 0,
        "started_at": "", "finished_at": "", "started_at_epoch": 0, "finished_at_epoch": 0,
        "rootdir": "/", "fingerprint": None, "fingerprint_after": None, "complete": True,
        "specs": [], "counts": {}, "criteria": [], "problems": [],
    }  # fmt: skip
    assert shape_problem({**base, "requirements": [row]}, []) is None
    hidden = {**row, "criteria": [{"status": "pass"}]}
    assert shape_problem({**base, "requirements": [hidden]}, []) == (
        "a requirement holds more than flat values"
    )
    assert shape_problem({**base, "requirements": [{**row, "extra": 1}]}, []) == (
        "a requirement has unknown keys ['extra']"
    )
