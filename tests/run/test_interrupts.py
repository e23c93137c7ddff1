"""Ctrl-C, end to end: a real SIGINT to a real run's process group, as a terminal sends it,
at start-up, while criteria run (with and without xdist workers) and twice.

Each ends without a traceback, with an "interrupted" verdict (exit code 2) that keeps every
finished criterion's result and evidence, and with no process of the run left behind. A
second Ctrl-C ends the run at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.processes import kill_all, wait_gone
from support.runs import BASE, Lines, interrupt, project, recorded, start, verdict, wait_for
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import spec_dir

# AC-1 passes at once; AC-2 and AC-3 leave a background process and wait for the stop.
STOPPED = spec(
    bash("AC-1", "echo done-1"),
    bash("AC-2", "sleep 300 & echo $! >> pids; sleep 300"),
    bash("AC-3", "sleep 300 & echo $! >> pids; sleep 300"),
)


def stop(process: subprocess.Popen[str], times: int = 1) -> str:
    """Ctrl-C ``times`` times; the run's whole output. A run that does not end within a
    minute fails the test (every criterion here would take five)."""
    try:
        for _ in range(times):
            interrupt(process)
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    return output


def assert_no_traceback(output: str) -> None:
    assert "Traceback" not in output, output
    assert "INTERNALERROR" not in output, output


def assert_gone(pids_file: Path) -> None:
    pids = recorded(pids_file)
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert pids and survivors == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_ctrl_c_while_criteria_run_keeps_what_finished(tmp_path: Path, workers: str) -> None:
    root = project(tmp_path, STOPPED)
    process = start(root, "-n", workers, "-v", session=True)
    lines = Lines(process)
    try:
        lines.wait_for("PASSED")  # AC-1's result reached the controller
        wait_for(root / "pids", process)
        interrupt(process)
        process.wait(60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    output = lines.rest()
    assert_no_traceback(output)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert_gone(root / "pids")
    data = verdict(root)
    assert (data["status"], data["exit_code"], data["complete"]) == ("interrupted", 2, False)
    statuses = {c["id"]: c["status"] for c in data["criteria"]}
    assert statuses["AC-1"] == "passed"
    assert "not_run" in statuses.values()
    assert any("interrupted by SIGINT" in problem for problem in data["problems"])
    assert "Verdict: INTERRUPTED." in output
    # The finished criterion's evidence is kept: its fragment and a (partial) report.
    report = json.loads((spec_dir(root, root / "spec.md") / "report.json").read_text())
    entries = {c["id"]: c for c in report["criteria"]}
    assert entries["AC-1"]["status"] == "passed" and report["complete"] is False
    assert not (spec_dir(root, root / "spec.md") / "baseline.json").exists()


@pytest.mark.parametrize(
    "hook",
    [
        "def pytest_configure(config):\n",
        "def pytest_sessionstart(session):\n",
    ],
    ids=["configure", "sessionstart"],
)
def test_ctrl_c_while_pytest_starts_is_an_interrupted_verdict_where_nothing_ran(
    tmp_path: Path, hook: str
) -> None:
    """pytest ends no session it did not begin: the plugin records the verdict itself."""
    body = "    import pathlib, time\n    pathlib.Path('starting').write_text('x')\n"
    root = project(tmp_path, STOPPED)
    (root / "conftest.py").write_text(hook + body + "    time.sleep(300)\n")
    process = start(root, session=True)
    wait_for(root / "starting", process)
    output = stop(process)
    assert_no_traceback(output)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    data = verdict(root)
    assert (data["status"], data["criteria"]) == ("interrupted", [])
    assert data["problems"] == [
        "the run was interrupted while pytest was starting: no criterion ran"
    ]
    assert "acceptance: the run was interrupted while pytest was starting" in output


@pytest.mark.parametrize("workers", ["0", "2"])
def test_two_ctrl_c_in_a_row_end_without_a_traceback(tmp_path: Path, workers: str) -> None:
    """Two Ctrl-C in a row (the second while the first unwinds, where Python's own handler
    would raise inside pytest's clean-up): no traceback, nothing left running, no verdict
    that passes."""
    root = project(tmp_path, STOPPED)
    process = start(root, "-n", workers, session=True)
    wait_for(root / "pids", process)
    output = stop(process, times=2)
    assert_no_traceback(output)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert_gone(root / "pids")
    written = root / ".acceptance" / "verdict.json"
    assert not written.exists() or verdict(root)["status"] == "interrupted"


def test_a_second_ctrl_c_does_not_wait_for_a_slow_end_of_the_session(tmp_path: Path) -> None:
    """After the first Ctrl-C the verdict is written, then a plugin's session end takes five
    minutes: the second Ctrl-C ends the run at once (pytest alone would print a traceback
    from inside that plugin), and the verdict written stays."""
    root = project(tmp_path, STOPPED)
    (root / "conftest.py").write_text(
        "import pathlib, time\n"
        "def pytest_sessionfinish(session):\n"
        "    pathlib.Path('finishing').write_text('x')\n"
        "    time.sleep(300)\n"
    )
    process = start(root, session=True)
    wait_for(root / "pids", process)
    try:
        interrupt(process)
        wait_for(root / "finishing", process)
    except BaseException:
        process.kill()
        raise
    output = stop(process)
    assert_no_traceback(output)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "stopped at once by a second SIGINT" in output
    assert "the verdict was already written" in output
    assert_gone(root / "pids")
    data = verdict(root)
    assert data["status"] == "interrupted"
    assert {c["id"]: c["status"] for c in data["criteria"]}["AC-1"] == "passed"


@pytest.mark.parametrize(
    ("ignored", "ends"), [("SIGHUP", "pass"), ("SIGINT", "pass"), ("SIGTERM", "interrupted")]
)
def test_a_signal_the_run_was_started_to_ignore_stays_ignored_but_sigterm(
    tmp_path: Path, ignored: str, ends: str
) -> None:
    """``nohup pytest --acceptance …`` ignores SIGHUP, and a script's background job ignores
    SIGINT: a closed terminal or a Ctrl-C meant for the script must not stop that run.
    SIGTERM, a supervisor's stop, stops it whatever it was started with."""
    root = project(
        tmp_path, spec(bash("AC-1", "echo x > started; until [ -f go ]; do sleep 0.05; done"))
    )
    ignoring = (
        "import os, signal, sys\n"
        f"signal.signal(signal.{ignored}, signal.SIG_IGN)\n"
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", ignoring, *BASE[1:], "--acceptance", "spec.md"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(root / "started", process)  # the plugin's handlers are in place by now
        os.killpg(process.pid, getattr(signal, ignored))
        if ends == "pass":
            (root / "go").write_text("x")
        output, _ = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    assert_no_traceback(output)
    assert verdict(root)["status"] == ends, output
    assert process.returncode == (0 if ends == "pass" else pytest.ExitCode.INTERRUPTED), output
