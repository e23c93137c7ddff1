"""Task lists that cannot lie, on real git repositories: a ticked task passes only when the
files it names exist and changed since the base, its verify command passes and the criteria
of the requirements it cites pass in the same run; otherwise it is a phantom completion
naming what is missing. Unticked tasks are listed, not failed, unless asked. The cited
part is decided on the controller, also when xdist workers ran the criteria."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.repos import git

REQUIREMENTS = """\
# Requirements Document

### Requirement 1: Tokens

**User Story:** As a user, I want reset tokens, so that I can get back in.

#### Acceptance Criteria

1. WHEN a token is issued THEN the system SHALL store only its hash.
   Done when `grep -q sha256 src/tokens.py` exits 0.
2. WHEN a token is used twice THEN the system SHALL reject it.
   Done when `grep -q reject src/tokens.py` exits 0.
"""

TASKS = """\
# Implementation Plan

- [x] 1. Write the token store
  - Create `src/tokens.py`
  - _Requirements: 1.1, 1.2_
- [x] 2. Document the tokens in `docs/tokens.md`
- [ ] 3. Add a cleanup job in `src/cleanup.py`
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A repository on a feature branch off main, with a Kiro spec and its task list."""
    root = pytester.path
    (root / "src").mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "tokens.md").write_text("# Tokens\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    folder = root / ".kiro" / "specs" / "reset"
    folder.mkdir(parents=True)
    (folder / "requirements.md").write_text(REQUIREMENTS)
    (folder / "tasks.md").write_text(TASKS)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "spec")
    git(root, "checkout", "-qb", "feature")
    return root


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--acceptance", ".kiro/specs/reset", "-p", "no:cacheprovider", *args
    )


def verdict(root: Path) -> dict[str, dict[str, object]]:
    data = json.loads((root / ".acceptance" / "verdict.json").read_text())
    return {c["id"]: c for c in data["criteria"]}


def test_a_ticked_task_whose_work_is_done_and_verified_passes(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "src" / "tokens.py").write_text("HASH = 'sha256'\ndef redeem(): reject()\n")
    (project / "docs" / "tokens.md").write_text("# Tokens\n\nHashed with sha256.\n")
    result = run(pytester, "-n", "0", "-v")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*tasks.md::1 Write the token store [[]task: ticked; evidence: 1 file changed, cited "
            "1.1, 1.2[]] PASSED*",
            "*tasks.md::3 Add a cleanup job in src/cleanup.py [[]task: not ticked, listed[]] "
            "UNTICKED*",
            "### Unticked tasks (1): listed, not claimed done",
            "- 3: Add a cleanup job in src/cleanup.py",
        ]
    )
    found = verdict(project)
    assert found["1"]["status"] == "passed" and found["3"]["status"] == "unticked"
    assert "cited criteria pass: 1.1, 1.2" in str(found["1"]["message"])


def test_a_ticked_task_whose_files_did_not_change_is_a_phantom_completion(
    pytester: pytest.Pytester, project: Path
) -> None:
    """docs/tokens.md exists but is as it was on main; src/tokens.py was never written."""
    result = run(pytester, "-n", "0")
    assert result.ret == 1
    found = verdict(project)
    assert found["2"]["status"] == "failed"
    assert str(found["2"]["message"]).startswith(
        "phantom completion: task 2 is ticked, but docs/tokens.md has not changed since "
    )
    assert found["1"]["status"] == "failed"
    assert "src/tokens.py does not exist" in str(found["1"]["message"])


def test_a_ticked_task_that_names_no_evidence_is_a_phantom_completion_saying_what_to_add(
    pytester: pytest.Pytester, project: Path
) -> None:
    """Ticked, with no verify command, no file and no requirement: nothing shows it done,
    and no agent is asked to take the list's word for it."""
    tasks = project / ".kiro" / "specs" / "reset" / "tasks.md"
    tasks.write_text(TASKS + "- [x] 4. Review the wording of the reset mail\n")
    result = run(pytester, "-n", "0", "-v", "--acceptance-agent", "none")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*tasks.md::4 Review the wording of the reset mail [[]task: ticked; evidence: none "
            "named (a phantom completion)[]] FAILED*"
        ]
    )
    task = verdict(project)["4"]
    assert task["status"] == "failed"
    assert task["message"] == (
        "phantom completion: task 4 is ticked, but it names no verify command, no file and no "
        "requirement to check it by"
    )
    result.stdout.fnmatch_lines(
        ["- 4: Review the wording*", "  Location: .kiro/specs/reset/tasks.md:8", "  Note: *"]
    )
    result.stdout.fnmatch_lines(["4: nothing shows these ticked tasks done: add a **Verify**: *"])


def test_ticked_tasks_without_evidence_are_one_finding_naming_each_task(
    pytester: pytest.Pytester, project: Path
) -> None:
    """Several such tasks: one line says the way out, naming each; no block repeats it."""
    tasks = project / ".kiro" / "specs" / "reset" / "tasks.md"
    tasks.write_text(TASKS + "- [x] 4. Review the mail\n- [x] 5. Tell support\n- [x] 6. Ship\n")
    result = run(pytester, "-n", "0", "--acceptance-agent", "none")
    assert result.ret == 1
    output = result.stdout.str()
    result.stdout.fnmatch_lines(["4, 5, 6: nothing shows these ticked tasks done: add *"])
    assert output.count("nothing shows these ticked tasks done") == 1
    assert output.count("Expected: a **Verify**") == 0


def test_a_ticked_task_whose_cited_criteria_fail_is_a_phantom_completion(
    pytester: pytest.Pytester, project: Path
) -> None:
    """The file exists and changed, but requirement 1.2 (reject reuse) is not met."""
    (project / "src" / "tokens.py").write_text("HASH = 'sha256'\n")
    result = run(pytester, "-n", "0", "-v")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*tasks.md::1 Write the token store*FAILED*"])
    task = verdict(project)["1"]
    assert task["message"] == "phantom completion: task 1 is ticked, but 1.2 failed"
    assert task["issues"] == [
        {
            "location": ".kiro/specs/reset/requirements.md:11",
            "expected": "cited 1.2 passes",
            "actual": "1.2 failed",
        }
    ]


def test_under_xdist_the_cited_criteria_are_decided_on_the_controller(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "src" / "tokens.py").write_text("HASH = 'sha256'\n")
    (project / "docs" / "tokens.md").write_text("# Tokens\n\nchanged\n")
    result = run(pytester, "-n", "2")
    assert result.ret == 1
    found = verdict(project)
    assert found["1"]["status"] == "failed"
    assert found["1"]["message"] == "phantom completion: task 1 is ticked, but 1.2 failed"
    assert found["2"]["status"] == "passed"
    report = json.loads(
        next((project / ".acceptance" / "specs").glob("tasks-*/report.json")).read_text()
    )
    assert report["problems"] == []  # the settled result is the evidence, not a mismatch
    assert {e["id"]: e["status"] for e in report["criteria"]} == {
        "1": "failed",
        "2": "passed",
        "3": "unticked",
    }


def test_unticked_tasks_fail_when_asked(pytester: pytest.Pytester, project: Path) -> None:
    (project / "src" / "tokens.py").write_text("HASH = 'sha256'\ndef redeem(): reject()\n")
    (project / "docs" / "tokens.md").write_text("# Tokens\n\nchanged\n")
    result = run(pytester, "-n", "0", "--acceptance-unticked", "fail")
    assert result.ret == 1
    assert verdict(project)["3"]["status"] == "failed"


def test_an_unknown_unticked_setting_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "pytest.ini").write_text("[pytest]\nacceptance_unticked = never\n")
    result = run(pytester, "-n", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini acceptance_unticked = 'never': give list or fail*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (project / ".acceptance" / "verdict.json").exists()


def test_the_base_is_the_one_given_and_on_main_without_one_the_task_cannot_be_checked(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "src" / "tokens.py").write_text("HASH = 'sha256'\ndef redeem(): reject()\n")
    (project / "docs" / "tokens.md").write_text("# Tokens\n\nchanged\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "work")
    git(project, "checkout", "-q", "main")
    git(project, "merge", "-q", "feature")
    on_main = run(pytester, "-n", "0")
    assert on_main.ret == 11  # 1.1 and 1.2 pass; the tasks cannot be checked: an error
    assert verdict(project)["2"]["status"] == "error"
    assert "--acceptance-base REF" in str(verdict(project)["2"]["message"])
    given = run(pytester, "-n", "0", "--acceptance-base", "HEAD~1")
    assert given.ret == 0, given.stdout.str()
    unchanged = run(pytester, "-n", "0", "--acceptance-base", "HEAD")
    assert verdict(project)["2"]["status"] == "failed" and unchanged.ret == 1


CHANGE_TASKS = """\
## 1. Database

- [x] 1.1 Add the `totpSecret` field to the User model in schema.prisma
- [x] 1.2 Create the migration

## 2. Backend

- [x] 2.1 Implement the TOTP check
- [x] 2.2 Rate-limit the attempts
- [ ] 2.3 Add recovery codes
"""

CHANGE_SPEC = """\
## ADDED Requirements

### Requirement: Second factor
The system SHALL ask for a TOTP code after the password.

#### Scenario: Right code
- **WHEN** the member enters the current code
- **THEN** `{command}` exits 0
"""


@pytest.fixture
def change(pytester: pytest.Pytester) -> Path:
    """An OpenSpec change folder: tasks as OpenSpec writes them (naming no verify command),
    and the spec delta they implement; the schema lives in prisma/, as Prisma puts it."""
    root = pytester.path
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "prisma").mkdir()
    (root / "prisma" / "schema.prisma").write_text("model User {}\n")
    folder = root / "openspec" / "changes" / "add-2fa"
    (folder / "specs" / "auth").mkdir(parents=True)
    (folder / "tasks.md").write_text(CHANGE_TASKS)
    (folder / "specs" / "auth" / "spec.md").write_text(CHANGE_SPEC.format(command="true"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    git(root, "checkout", "-qb", "feature")
    (root / "prisma" / "schema.prisma").write_text("model User { totpSecret String }\n")
    return root


def test_an_openspec_change_s_tasks_stand_on_its_specs_and_the_files_they_name(
    pytester: pytest.Pytester, change: Path
) -> None:
    result = pytester.runpytest_subprocess(
        "--acceptance", "openspec/changes/add-2fa", "-p", "no:cacheprovider", "-v"
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*tasks.md::1.1 Add the totpSecret field*[[]task: ticked; evidence: 1 file changed[]]*"
            "PASSED*",
            "*tasks.md::1.2 Create the migration [[]task: ticked; evidence: the change's specs/ "
            "(names nothing of its own)[]] PASSED*",
        ]
    )
    found = verdict(change)
    assert found["2.2"]["status"] == "passed"
    assert found["2.3"]["status"] == "unticked"


def test_an_openspec_change_s_tasks_fail_with_its_specs_and_say_so_once_without_them(
    pytester: pytest.Pytester, change: Path
) -> None:
    """Written after the fix: the change's scenario fails, then the specs are not given."""
    spec = change / "openspec" / "changes" / "add-2fa" / "specs" / "auth" / "spec.md"
    spec.write_text(CHANGE_SPEC.format(command="false"))
    failing = pytester.runpytest_subprocess(
        "--acceptance", "openspec/changes/add-2fa", "-p", "no:cacheprovider"
    )
    assert failing.ret == 1
    assert verdict(change)["2.1"]["status"] == "failed"
    assert verdict(change)["1.1"]["status"] == "passed"  # its own file changed
    alone = pytester.runpytest_subprocess(
        "--acceptance", "openspec/changes/add-2fa/tasks.md", "-p", "no:cacheprovider"
    )
    assert alone.ret == 11
    alone.stdout.fnmatch_lines(
        [
            "1.2, 2.1, 2.2: give the change's folder to --acceptance (openspec/changes/add-2fa): "
            "its specs/ decide them"
        ]
    )
    assert alone.stdout.str().count("give the change's folder") == 1
