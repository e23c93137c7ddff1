"""The project's own spec takes the README's whole-suite run as a criterion's evidence only
when that run selected everything, passed, and was made on the tree as it is now
(tests/support/suite_result.py); otherwise the criterion runs its test files itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import suite_result
from support.repos import git

PASSING = "def test_ok():\n    assert True\n"
FAILING = "def test_broken():\n    assert False\n"


@pytest.mark.parametrize(
    ("args", "whole"),
    [
        ([], True),
        (["-n", "2", "--junitxml=.acceptance/suite-junit.xml"], True),
        (["-p", "no:cacheprovider", "-q"], True),
        (["-m", "not e2e"], False),
        (["-k", "fast"], False),
        (["tests/run"], False),
        (["--lf"], False),
        (["-p", "some_plugin"], False),
    ],
)
def test_only_a_run_that_selects_everything_stands_for_the_suite(
    args: list[str], whole: bool
) -> None:
    assert suite_result.whole_suite(args) is whole


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    """A git project whose suite ran with --junitxml: one file passes, one fails."""
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_good.py").write_text(PASSING)
    (root / "tests" / "test_bad.py").write_text(FAILING)
    (root / ".gitignore").write_text(".acceptance/\n")
    git(tmp_path, "init", "-q", str(root))
    junit = root / ".acceptance" / "suite-junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return root, junit


def test_a_passing_whole_run_of_this_tree_is_the_evidence(recorded: tuple[Path, Path]) -> None:
    root, junit = recorded
    suite_result.record(root, junit, [], 0, suite_result.fingerprint(root))
    assert suite_result.recorded_pass(root, junit, ["tests/test_good.py"]) is None
    assert "failed there" in str(suite_result.recorded_pass(root, junit, ["tests/test_bad.py"]))
    missing = suite_result.recorded_pass(root, junit, ["tests/test_other.py"])
    assert "not in the recorded run" in str(missing)


def test_a_tree_changed_since_the_run_is_not(recorded: tuple[Path, Path]) -> None:
    root, junit = recorded
    suite_result.record(root, junit, [], 0, suite_result.fingerprint(root))
    (root / "tests" / "test_good.py").write_text(PASSING + "\n# edited\n")
    assert suite_result.recorded_pass(root, junit, ["tests/test_good.py"]) == (
        "the tree changed since the recorded run"
    )


@pytest.mark.parametrize(
    ("args", "exitstatus", "changed"),
    [([], 1, False), (["-m", "not slow"], 0, False), ([], 0, True)],
    ids=["failed", "narrowed", "tree-changed-during-the-run"],
)
def test_no_record_for_a_run_that_cannot_stand_for_the_suite(
    recorded: tuple[Path, Path], args: list[str], exitstatus: int, changed: bool
) -> None:
    root, junit = recorded
    before = suite_result.fingerprint(root)
    Path(f"{junit}.tree").write_text(before)  # a stale record from an earlier run goes too
    if changed:
        (root / "tests" / "test_new.py").write_text(PASSING)
    suite_result.record(root, junit, args, exitstatus, before)
    assert suite_result.recorded_pass(root, junit, ["tests/test_good.py"]) == (
        "no whole-suite run recorded"
    )


def test_without_a_record_the_criterion_runs_its_files(recorded: tuple[Path, Path]) -> None:
    root, _ = recorded
    script = Path(suite_result.__file__)
    for name, code in (("tests/test_good.py", 0), ("tests/test_bad.py", 1)):
        done = subprocess.run(
            [sys.executable, str(script), name, "--", "-p", "no:randomly"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == code, done.stdout + done.stderr
        assert "running them now (no whole-suite run recorded)" in done.stdout
