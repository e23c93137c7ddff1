"""The README's table of exit codes, held against every way a run can be spread: no
workers (``-n 0``), local xdist workers (``-n 2``) and workers in folders of their own as
on other machines (``popen//chdir=`` with ``--rsyncdir``, xdist's remote set-up). The same
input gives the same exit code and the same verdict status in each: real runs in
subprocesses, the README read for the row each code is promised in."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support.runs import BASE, assert_clean
from support.specs import bash, criterion, manual, spec

README = Path(__file__).resolve().parents[2] / "README.md"
INI = (
    "[pytest]\nacceptance_retries = 0\n"
    "filterwarnings =\n    error\n    ignore:The --rsyncdir:DeprecationWarning\n"
)
MALFORMED = "# Spec\n\n#### AC-1: no method\n\n```yaml\nverification:\n  command: 'true'\n```\n"
AGENT = criterion("AC-2", method="subagent", agent="checker", checks=["it works"])

# name -> (spec text, extra arguments, exit code, verdict status or None when none is kept)
CASES: dict[str, tuple[str, tuple[str, ...], int, str | None]] = {
    "pass": (spec(bash("AC-1", "true")), (), 0, "pass"),
    "fail": (spec(bash("AC-1", "true"), bash("AC-2", "false")), (), 1, "fail"),
    "stop-at-failure": (spec(bash("AC-1", "false"), bash("AC-2", "false")), ("-x",), 1, "fail"),
    "manual": (spec(bash("AC-1", "true"), manual("AC-2")), (), 10, "manual"),
    "no-agent": (
        spec(bash("AC-1", "true"), AGENT),
        ("--acceptance-agent", "none"),
        11,
        "error",
    ),
    "malformed-spec": (MALFORMED, (), 2, "error"),
    "usage-error": (spec(bash("AC-1", "true")), ("-o", "acceptance_retries=abc"), 4, None),
    "nothing-selected": (spec(bash("AC-1", "true")), ("-k", "no_such_criterion"), 5, "error"),
}


def no_workers(tmp_path: Path) -> list[str]:
    return ["-n", "0"]


def local_workers(tmp_path: Path) -> list[str]:
    return ["-n", "2"]


def remote_workers(tmp_path: Path) -> list[str]:
    machines = [tmp_path / "machine-1", tmp_path / "machine-2"]
    for machine in machines:
        machine.mkdir()
    return ["-d", "--rsyncdir", ".", *(f"--tx=popen//chdir={m}" for m in machines)]


MODES: dict[str, Callable[[Path], list[str]]] = {
    "n0": no_workers,
    "n2": local_workers,
    "remote": remote_workers,
}


def readme_codes() -> dict[int, str]:
    """Each exit code of the README's table and what its rows say it means."""
    rows = re.findall(r"^\| (\d+) \| ([^|]*) \| ([^|]*) \|$", README.read_text(), re.M)
    table: dict[int, str] = {}
    for code, status, meaning in rows:
        table[int(code)] = table.get(int(code), "") + f"{status} {meaning} "
    return table


def test_every_case_is_a_code_of_the_readme() -> None:
    """Each code this file holds runs to is one the README promises, for that reason."""
    table = readme_codes()
    words = {0: "passed", 1: "-x", 10: "manual", 11: "no agent", 2: "malformed spec"}
    words |= {4: "bad ini value", 5: "nothing was collected"}
    for code, word in words.items():
        assert word in table[code], (code, table[code])
    assert {code for _, _, code, _ in CASES.values()} == set(words)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_the_same_input_gives_the_same_exit_code_whatever_the_workers(
    tmp_path: Path, case: str, mode: str
) -> None:
    text, args, code, status = CASES[case]
    root = tmp_path / "project"
    root.mkdir()
    (root / "pytest.ini").write_text(INI)
    (root / "spec.md").write_text(text)
    done = subprocess.run(
        [*BASE, "--acceptance", "spec.md", *MODES[mode](tmp_path), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == code, output
    if status is not None:
        data = json.loads((root / ".acceptance" / "verdict.json").read_text())
        assert (data["status"], data["exit_code"]) == (status, code), output
