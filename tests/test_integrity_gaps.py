"""Criterion integrity, the routes an adversary would take around the pin: shell strings
(``bash -c``, ``eval``), make variables, data files beside the tests, and code a new test
file runs on import. Each attack is reported; its honest counterpart is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_integrity import FAILING_TEST, project, write

from pytest_acceptance.integrity import snapshot, weakened
from pytest_acceptance.integrity.commands import shell_strings, shell_words

WEAKER_TEST = FAILING_TEST.replace("compute() == 3", "True")
MORE_TESTS = FAILING_TEST + "\ndef test_more():\n    assert compute() != 4\n"


def findings(root: Path, commands: list[str], edits: dict[str, str | None]) -> set[tuple]:
    """(file, test, how) of every finding after the edits (None deletes the file); the pin
    goes through JSON as the hooks store it, and the untouched tree reports nothing."""
    pin = json.loads(json.dumps(snapshot(str(root), commands)))
    assert weakened(str(root), pin) == []
    for relative, text in edits.items():
        if text is None:
            (root / relative).unlink()
        else:
            write(root, relative, text)
    return {(f.file, f.test, f.how) for f in weakened(str(root), pin)}


# -- shell strings -------------------------------------------------------------------------

SHELL_STRINGS = [
    "bash -c 'pytest tests/'",
    'sh -ec "pytest tests/test_x.py -q"',
    "bash -o pipefail -c 'cd tests && pytest test_x.py | tee out.log'",
    "cd tests && bash -c 'pytest test_x.py'",
    "timeout 60 bash -xc 'pytest tests/'",
    "eval 'pytest tests/'",
    "eval pytest tests/test_x.py",
    "bash -c \"bash -c 'pytest tests/'\"",
]


@pytest.mark.parametrize("command", SHELL_STRINGS)
def test_a_test_run_inside_a_shell_string_is_pinned(tmp_path: Path, command: str) -> None:
    """The inner command of ``bash -c``/``sh -c``/``eval`` is followed as if the criterion
    ran it: weakening the test it runs is reported, adding a test is not."""
    root = project(tmp_path)
    weakening = ("tests/test_x.py", "test_fails", "assertion replaced by a constant")
    assert findings(root, [command], {"tests/test_x.py": WEAKER_TEST}) == {weakening}
    assert (
        findings(project(tmp_path / "honest"), [command], {"tests/test_x.py": MORE_TESTS}) == set()
    )


def test_a_shell_string_in_a_make_recipe_is_followed(tmp_path: Path) -> None:
    root = project(tmp_path, {"Makefile": "check:\n\t@bash -c 'pytest tests/'\n"})
    found = findings(root, ["make check"], {"tests/conftest.py": "import os\nos._exit(0)\n"})
    assert found == {("tests/conftest.py", None, "changed")}


@pytest.mark.parametrize(
    "command, strings",
    [
        ("bash -c 'pytest tests/'", ["pytest tests/"]),
        ("sh -euxc 'make check' ignored-name", ["make check"]),
        ("bash --norc -o errexit -c 'go test ./...'", ["go test ./..."]),
        ("cd tests && sh -c pytest", ["cd tests && pytest"]),
        ("eval pytest  -q tests/", ["pytest -q tests/"]),
        ("bash scripts/check.sh -c 'not a command string'", []),  # -c after the script: its own
        ("bash -e scripts/check.sh", []),
        ("bash -c", []),
        ("python -c 'print(1)'", []),  # Python code, not a shell string
        ("echo bash -c 'pytest'", []),
    ],
)
def test_the_shell_strings_a_command_runs(tmp_path: Path, command: str, strings: list) -> None:
    (tmp_path / "tests").mkdir()
    assert list(shell_strings(str(tmp_path), shell_words(command))) == strings
