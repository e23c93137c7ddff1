"""No vacuous pass: a bash criterion whose test runner ran no test fails with that reason,
whatever its exit code and pass condition; other commands are not affected.

pytest, unittest (and cargo, where it is installed and runs) run for real. go, jest, vitest
and mocha are not installed here (and the machine is offline), so their cases use output
recorded from real runs of those tools, reproduced verbatim below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from support.tools import require_tool

from pytest_acceptance.model import Criterion, Location, Method, Result, RunContext, Status
from pytest_acceptance.run.bash import run_criterion
from pytest_acceptance.run.no_tests import vacuous_reason

TWO_TESTS = "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n"
FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -p no:cacheprovider -q"


def run(rootdir: Path, command: str, pass_condition: str | None = None) -> Result:
    criterion = Criterion(
        id="AC-1",
        title="tests pass",
        method=Method.BASH,
        location=Location(rootdir / "spec.md", 3),
        command=command,
        pass_condition=pass_condition,
        timeout=120,
        retries=0,
    )
    return run_criterion(criterion, RunContext(rootdir))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_two.py").write_text(TWO_TESTS)
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("command", "pass_condition", "reason"),
    [
        (f"{FAST_PYTEST} -k no_such_test test_two.py; true", None, "2 deselected"),
        (f"{FAST_PYTEST} empty || true", "exit code 0", "no tests ran"),
        (f"{FAST_PYTEST} -k no_such_test test_two.py", "exit code 5", "exited with code 5"),
        ("python -m unittest discover -s empty; true", None, "Ran 0 tests"),
    ],
)
def test_a_real_runner_that_ran_nothing_fails_whatever_its_exit_code(
    project: Path, command: str, pass_condition: str | None, reason: str
) -> None:
    result = run(project, command, pass_condition)
    assert result.status is Status.FAILED, result.message
    assert reason in result.message
    assert "verifies nothing" in result.issues[0].actual


@pytest.mark.parametrize(
    "command",
    [f"{FAST_PYTEST} test_two.py", f"{FAST_PYTEST} -k test_a test_two.py"],
)
def test_a_real_runner_that_ran_tests_is_judged_as_before(project: Path, command: str) -> None:
    result = run(project, command)
    assert result.status is Status.PASSED, result.message


def test_a_command_that_is_not_a_test_runner_is_not_affected(tmp_path: Path) -> None:
    result = run(tmp_path, "echo 'no tests ran in 0.01s'; echo 'running 0 tests'")
    assert result.status is Status.PASSED


def test_cargo_test_that_filters_out_every_test_fails(tmp_path: Path) -> None:
    require_tool("cargo", why="a Rust toolchain")
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (crate / "src" / "lib.rs").write_text("#[test]\nfn it_works() { assert_eq!(2, 1 + 1); }\n")
    cargo = "CARGO_TARGET_DIR=../target cargo test --offline -q"
    filtered = run(crate, f"{cargo} no_such_test")
    assert filtered.status is Status.FAILED, filtered.message
    assert "running 0 tests" in filtered.message
    assert run(crate, cargo).status is Status.PASSED


# --- recorded output of runners not installed here --------------------------------------------


@dataclass
class Recorded:
    stdout: str
    stderr: str = ""
    exit_code: int | None = 0


GO_NO_TEST_FILES = (
    "?   \texample.com/m\t[no test files]\n?   \texample.com/m/util\t[no test files]\n"
)
GO_NO_TESTS_TO_RUN = (
    "testing: warning: no tests to run\nPASS\nok  \texample.com/m\t0.002s [no tests to run]\n"
)
GO_SOME_RAN = "?   \texample.com/m/cmd\t[no test files]\nok  \texample.com/m\t0.003s\n"
JEST_NONE = (
    "No tests found, exiting with code 0\nIn /app\n  4 files checked.\n"
    "  testMatch: **/__tests__/**/*.[jt]s?(x), **/?(*.)+(spec|test).[tj]s?(x) - 0 matches\n"
)
JEST_RAN = "Test Suites: 1 passed, 1 total\nTests:       3 passed, 3 total\n"
VITEST_NONE = "\n RUN  v1.6.0 /app\n\nNo test files found, exiting with code 0\n"
MOCHA_NONE = "\n\n  0 passing (1ms)\n\n"
MOCHA_RAN = "\n  math\n    ✔ adds\n\n  1 passing (3ms)\n\n"
CARGO_NONE = (
    "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; "
    "1 filtered out; finished in 0.00s\n\n\nrunning 0 tests\n\ntest result: ok. 0 passed; "
    "0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n"
)
CARGO_RAN = CARGO_NONE.replace("running 0 tests", "running 1 test", 1)


@pytest.mark.parametrize(
    ("command", "recorded", "reason"),
    [
        ("go test ./...", Recorded(GO_NO_TEST_FILES), "[no test files]"),
        ("go test -run TestNothing .", Recorded(GO_NO_TESTS_TO_RUN), "[no tests to run]"),
        ("npx jest --passWithNoTests", Recorded("", JEST_NONE), "No tests found"),
        ("npx jest", Recorded("", JEST_NONE, 1), "No tests found"),
        ("npx vitest run --passWithNoTests", Recorded(VITEST_NONE), "No test files found"),
        ("npm test", Recorded(VITEST_NONE), "No test files found"),
        ("./node_modules/.bin/mocha", Recorded(MOCHA_NONE), "0 passing"),
        ("cargo test no_such_test", Recorded(CARGO_NONE), "running 0 tests"),
        ("cd sub && pytest -q", Recorded("", "", 5), "code 5"),
        (
            "python3 -m unittest",
            Recorded("", "\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n", 5),
            "Ran 0",
        ),
    ],
)
def test_recorded_empty_runs_are_vacuous(command: str, recorded: Recorded, reason: str) -> None:
    found = vacuous_reason(command, recorded)
    assert found is not None and reason in found


@pytest.mark.parametrize(
    ("command", "recorded"),
    [
        ("go test ./...", Recorded(GO_SOME_RAN)),
        ("npx jest", Recorded("", JEST_RAN)),
        ("yarn test", Recorded(MOCHA_RAN)),
        ("cargo test", Recorded(CARGO_RAN)),
        ("echo go test", Recorded(MOCHA_NONE)),  # names go test, but mocha's output is not go's
        ("ls pytest_helpers/", Recorded("no tests ran\n")),  # not the runner
        ("./gotest.sh", Recorded(GO_NO_TEST_FILES)),
        ("pytest -q", Recorded("no tests ran\n", "", None)),  # timed out: failing already
    ],
)
def test_runs_that_ran_tests_or_are_not_runners_are_not_vacuous(
    command: str, recorded: Recorded
) -> None:
    assert vacuous_reason(command, recorded) is None
