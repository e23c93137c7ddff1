"""No vacuous pass: a test runner that ran no test verified nothing.

``pytest -k typo`` exits 5, ``cargo test no_such_name`` and ``go test ./...`` in a package
without tests exit 0, and ``jest --passWithNoTests`` says so and exits 0. A bash criterion
whose command starts such a runner (tree/shell.py reads which, through wrappers such as
``timeout`` and ``uv run``, and inside ``bash -c``) and whose output says it ran
no test fails with that reason, whatever its exit code and pass condition. A command that
names no known runner is never affected, and a runner that ran at least one test is judged
by its condition as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from pytest_acceptance.model import one_line
from pytest_acceptance.run.conditions import Check
from pytest_acceptance.tree import shell


class _Run(Protocol):
    @property
    def exit_code(self) -> int | None: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


# A runner's output check: the reason it ran no test, or None.
_Detector = Callable[[_Run], "str | None"]


def _marker(pattern: str, reason: str) -> _Detector:
    compiled = re.compile(pattern, re.MULTILINE)

    def detect(run: _Run) -> str | None:
        return reason if _search(compiled, run) else None

    return detect


def _search(pattern: re.Pattern[str], run: _Run) -> bool:
    # stdout and stderr searched apart: joining them would copy a huge output.
    return bool(pattern.search(run.stdout) or pattern.search(run.stderr))


_PYTEST_SUMMARY = re.compile(r"^(?:=+ )?(?P<counts>\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s\b", re.M)
_PYTEST_RAN = {"passed", "failed", "error", "errors", "xfailed", "xpassed"}


def _pytest(run: _Run) -> str | None:
    if run.exit_code == 5:
        return "pytest exited with code 5: no tests collected or all deselected"
    found = _marker(
        r"^(?:=+ )?no tests ran\b|^collected 0 items\b|\b0 selected$|^\d+ workers \[0 items\]",
        'pytest says "no tests ran"',
    )(run)
    if found:
        return found
    for stream in (run.stdout, run.stderr):
        for summary in _PYTEST_SUMMARY.finditer(stream):
            words = {count.split()[1] for count in summary["counts"].split(", ")}
            if "deselected" in words and not words & _PYTEST_RAN:
                return f'pytest ran no test ("{summary["counts"]}")'
    return None


_GO_PACKAGE = re.compile(r"^(?:ok|\?|FAIL)\s+\S+.*$", re.MULTILINE)


def _go(run: _Run) -> str | None:
    packages = [line[0] for line in _GO_PACKAGE.finditer(run.stdout)]
    empty = [line for line in packages if "[no test files]" in line or "[no tests to run]" in line]
    if packages and len(empty) == len(packages):
        return f"go test ran no test ({one_line(empty[0], 120)})"
    if not packages and re.search(r"^testing: warning: no tests to run", run.stdout, re.M):
        return 'go test says "no tests to run"'
    return None


_CARGO_RUNNING = re.compile(r"^running (\d+) tests?$", re.MULTILINE)


def _cargo(run: _Run) -> str | None:
    counts = [int(found[1]) for found in _CARGO_RUNNING.finditer(run.stdout)]
    if counts and not any(counts):
        return f'cargo test ran no test ("running 0 tests" in all {len(counts)} test binaries)'
    return None


_JEST = _marker(r"^\s*No tests found\b", 'jest says "No tests found"')
_VITEST = _marker(r"No test files found|No test suite found", 'vitest says "No test files found"')
_MOCHA = _marker(r"^\s*0 passing\b", 'mocha says "0 passing"')
_UNITTEST = _marker(r"^Ran 0 tests in |^NO TESTS RAN$", 'unittest says "Ran 0 tests"')


def _javascript(run: _Run) -> str | None:
    """``npm test`` and friends: whichever JavaScript runner the script calls."""
    return _JEST(run) or _VITEST(run) or _MOCHA(run)


# Which output check each test runner of tree/shell.py gets. tox, nox and make run what
# their configuration says: their exit code decides.
_DETECTORS: dict[str, _Detector] = {
    "pytest": _pytest,
    "unittest": _UNITTEST,
    "go": _go,
    "cargo": _cargo,
    "jest": _JEST,
    "vitest": _VITEST,
    "mocha": _MOCHA,
    "npm": _javascript,
    "bun": _javascript,
}


def vacuous_reason(command: str, run: _Run) -> str | None:
    """Why ``run`` of ``command`` verified nothing, or None when it may have."""
    if run.exit_code is None:  # timed out: failing already
        return None
    for runner in shell.runners(command):
        detect = _DETECTORS.get(runner)
        reason = detect(run) if detect is not None else None
        if reason:
            return reason
    return None


def unless_vacuous(command: str, run: _Run, check: Check) -> Check:
    """``check``, failed when the command's test runner ran no test at all."""
    reason = vacuous_reason(command, run)
    if reason is None:
        return check
    return Check(
        False,
        f"{check.expected}, with at least one test run",
        f"{reason}: a test run that runs nothing verifies nothing; fix the test selection "
        "or the path in the command",
    )
