"""Faults around a whole run, end to end in real pytest processes: signals, a criterion that
kills its xdist worker, concurrent runs, strict warnings, long names, and file-system faults
(a real tiny tmpfs, a read-only mount, `.acceptance` as a file, a vanished rootdir).

Each ends in a clean verdict (or a clear "could not write" and exit code 11): never a
traceback, never INTERNALERROR, never a process left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import is_gone, kill_all, wait_gone
from support.runs import (
    STRICT,
    Lines,
    assert_clean,
    interrupt,
    project,
    recorded,
    run,
    start,
    verdict,
    wait_for,
)
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import read_evidence, spec_dir
from pytest_acceptance.run import containment
from pytest_acceptance.run.guard import WAVE_PREFIX, remove_free_wave_directories

# --- strict warnings: pytest's summary, JUnit and the verdict agree -----------------------------

MIXED = spec(
    bash("AC-1", "sleep 30 & echo started", pass_condition="output contains started"),
    bash("AC-2", "sleep 10", timeout=1),
    bash("AC-3", "true"),
)


@pytest.mark.parametrize(
    ("ini", "args"),
    [(STRICT, ()), ("[pytest]\n", ("-W", "error"))],
    ids=["ini filterwarnings=error", "-W error"],
)
def test_strict_warnings_leave_summary_junit_and_verdict_in_agreement(
    tmp_path: Path, ini: str, args: tuple[str, ...]
) -> None:
    """A background process and a timeout under warnings-as-errors: no leaked resource
    turns a result into "failed"; exit code 1 as the README says for a failed criterion."""
    root = project(tmp_path, MIXED, ini)
    done = run(root, *args, "--junitxml", "junit.xml")
    assert_clean(done.stdout + done.stderr)
    assert done.returncode == 1
    assert "1 failed, 2 passed" in done.stdout
    junit = (root / "junit.xml").read_text()
    assert 'failures="1"' in junit and 'errors="0"' in junit and 'tests="3"' in junit
    data = verdict(root)
    assert (data["status"], data["exit_code"]) == ("fail", 1)
    assert data["counts"]["passed"] == 2 and data["counts"]["failed"] == 1


# --- signals ------------------------------------------------------------------------------------

LONG = spec(
    bash("AC-1", "sleep 300 & echo $! >> pids; sleep 300"),
    bash("AC-2", "sleep 300 & echo $! >> pids; sleep 300"),
)


@pytest.mark.parametrize(
    ("signum", "workers"),
    [
        (signal.SIGINT, "0"),
        (signal.SIGTERM, "0"),
        (signal.SIGTERM, "2"),
        (signal.SIGHUP, "2"),
    ],
    ids=["SIGINT-n0", "SIGTERM-n0", "SIGTERM-n2", "SIGHUP-n2"],
)
def test_a_stop_signal_kills_the_criteria_and_writes_an_interrupted_verdict(
    tmp_path: Path, signum: signal.Signals, workers: str
) -> None:
    root = project(tmp_path, LONG)
    (root / ".acceptance").mkdir()
    stale = {"status": "pass", "exit_code": 0}
    (root / ".acceptance" / "verdict.json").write_text(json.dumps(stale))
    process = start(root, "-n", workers)
    try:
        wait_for(root / "pids", process)
        time.sleep(0.3)
        process.send_signal(signum)
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    pids = recorded(root / "pids")
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert survivors == []
    assert process.returncode == 2, output
    assert "INTERNALERROR" not in output
    data = verdict(root)
    assert (data["status"], data["exit_code"]) == ("interrupted", 2)
    assert any("interrupted" in problem for problem in data["problems"])
    if signum != signal.SIGINT:
        assert any(f"by {signum.name}" in problem for problem in data["problems"])


# --- a criterion that kills its own xdist worker ------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "cgroup",
            marks=pytest.mark.skipif(
                containment.own_cgroup() is None, reason="cgroup v2 is not writable here"
            ),
        ),
        "tracking",
    ],
)
def test_a_criterion_that_kills_its_worker_leaves_no_child(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cgroup the controller empties the dead worker's; without, the orphans come
    to the controller (a subreaper), which kills what is not a worker."""
    monkeypatch.setenv(containment.MODE_VARIABLE, mode)
    root = project(
        tmp_path,
        spec(
            bash("AC-1", "sleep 300 & echo $! > pids; kill -9 $PPID; sleep 5"), bash("AC-2", "true")
        ),
    )
    done = run(root, "-n", "1")
    pids = recorded(root / "pids")
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert pids and survivors == []
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert done.returncode == 11, done.stdout
    data = verdict(root)
    assert data["status"] == "error"
    assert [c["status"] for c in data["criteria"]] == ["error", "passed"]


# --- two runs of the same spec at once -----------------------------------------------------------


HELD = spec(
    bash("AC-1", "echo $$ > started; until [ -e release ]; do sleep 0.05; done"),
    bash("AC-2", "true"),
)


def beside_a_held_run(
    root: Path, *args: str, name: str = "spec.md"
) -> tuple[subprocess.CompletedProcess[str], subprocess.Popen[str], str]:
    """A second run (of spec ``name``) while a first holds spec.md (released once the second
    ended): the second's result, the first run and its output."""
    first = start(root)
    try:
        wait_for(root / "started", first)
        second = run(root, *args, name=name)
        (root / "release").touch()
        output, _ = first.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            first.kill()
    return second, first, output


def test_a_second_run_that_does_not_wait_is_refused_and_the_first_is_untouched(
    tmp_path: Path,
) -> None:
    """With ini acceptance_lock_timeout = 0 the second run does not wait: a usage error
    naming the run that holds the spec."""
    root = project(tmp_path, HELD)
    second, first, output = beside_a_held_run(root, "-o", "acceptance_lock_timeout=0")
    assert second.returncode == 4
    assert f"another pytest-acceptance run (pid {first.pid})" in second.stderr
    assert "spec.md" in second.stderr and "Traceback" not in second.stderr
    assert first.returncode == 0, output
    data = verdict(root)
    assert data["status"] == "pass" and data["counts"]["passed"] == 2
    report = json.loads((spec_dir(root, root / "spec.md") / "report.json").read_text())
    assert [c["status"] for c in report["criteria"]] == ["passed", "passed"]
    assert run(root).returncode == 0  # the lock went with the first run


def test_a_second_run_waits_for_the_first_saying_so_then_runs(tmp_path: Path) -> None:
    """The second run says it waits, naming the first run's pid and the bound; it is still
    waiting while the first runs (so the wait is real), and it runs once the first ends."""
    root = project(tmp_path, HELD)
    first = start(root)
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(root / "started", first)
        second = start(root)
        lines = Lines(second)
        lines.wait_for(f"another pytest-acceptance run (pid {first.pid}) is verifying spec.md")
        assert second.poll() is None and first.poll() is None
        (root / "release").touch()
        first_output, _ = first.communicate(timeout=60)
        second.wait(60)
    finally:
        for process in (first, second):
            with contextlib.suppress(ProcessLookupError, AttributeError):
                process.kill()
    output = lines.rest()
    assert first.returncode == 0, first_output
    assert second.returncode == 0, output
    assert "waiting up to 600 s for it to finish (ini acceptance_lock_timeout)" in output
    assert "acceptance: the other run finished; this one runs now" in output
    assert_clean(output)
    data = verdict(root)
    assert data["run_pid"] == second.pid and data["status"] == "pass"


def test_a_run_of_a_spec_copy_waits_for_a_run_of_the_spec_it_stands_for(tmp_path: Path) -> None:
    """The Claude Code gate verifies a copy of the spec pinned at /implement, kept outside
    the project, with --acceptance-spec-origin naming the project's spec: it must not run
    beside the agent's own /verify of that spec (their commands share the project)."""
    root = project(tmp_path / "project", HELD)
    copy = tmp_path / "pinned" / "spec.md"
    copy.parent.mkdir()
    copy.write_text(HELD)
    gate_shape = ("--acceptance-spec-origin", "spec.md", "--rootdir", str(root), "-k", "AC-2")
    second, first, _ = beside_a_held_run(
        root, "-o", "acceptance_lock_timeout=0", *gate_shape, name=str(copy)
    )
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, second.stdout + second.stderr
    assert f"another pytest-acceptance run (pid {first.pid}) is verifying" in second.stderr


def test_a_second_run_stops_waiting_at_the_bound_with_a_usage_error(tmp_path: Path) -> None:
    second, first, _ = beside_a_held_run(
        project(tmp_path, HELD), "-o", "acceptance_lock_timeout=0.5"
    )
    assert second.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"(pid {first.pid}) is verifying spec.md: waiting up to 0.5 s" in second.stderr
    assert "this run waited 0.5 s for it (ini acceptance_lock_timeout)" in second.stderr
    assert "Traceback" not in second.stderr


def test_ctrl_c_while_waiting_for_another_run_is_an_interrupted_verdict(tmp_path: Path) -> None:
    root = project(tmp_path, HELD)
    first = start(root)
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(root / "started", first)
        second = start(root, session=True)
        lines = Lines(second)
        lines.wait_for("waiting up to 600 s")
        interrupt(second)
        second.wait(60)
        output = lines.rest()
        assert verdict(root)["status"] == "interrupted"  # the second run's: the first runs on
        (root / "release").touch()
        first.communicate(timeout=60)
    finally:
        for process in (first, second):
            with contextlib.suppress(ProcessLookupError, AttributeError):
                process.kill()
    assert second.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output
    assert first.returncode == 0
    assert verdict(root)["status"] == "pass"  # the first run's, written last


# --- long names ----------------------------------------------------------------------


def test_long_criterion_ids_and_spec_names_get_bounded_distinct_file_names(tmp_path: Path) -> None:
    long_a, long_b = "A" * 248 + "-1", "A" * 248 + "-2"
    name = "s" * 240 + ".md"
    root = project(tmp_path, spec(bash(long_a, "true"), bash(long_b, "false")), name=name)
    done = run(root, name=name)
    assert_clean(done.stdout + done.stderr)
    assert done.returncode == 1, done.stdout
    directory = spec_dir(root, root / name)
    assert len(directory.name.encode()) <= 120
    found = {fragment["id"] for _, fragment in read_evidence(directory / "evidence.jsonl")}
    assert found == {long_a, long_b}


# --- file-system faults --------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(directory: Path, size: str) -> Iterator[Path]:
    directory.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr!r}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def fill(directory: Path) -> None:
    """Fill the file system of ``directory`` to the last byte."""
    handle = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(handle, b"\0" * size)
    finally:
        os.close(handle)


TWENTY = spec(*(bash(f"AC-{n}", "true") for n in range(1, 21)))


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_is_an_error_verdict_naming_the_cause(tmp_path: Path) -> None:
    """No fragment is dropped silently: the run ends in error (exit 11) and says the disk is
    full, on the terminal even though verdict.json cannot be written either."""
    with tmpfs(tmp_path / "disk", "256k") as root:
        project(root, TWENTY)
        fill(root)
        done = run(root)
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 11, output
    assert "the disk is full" in output
    assert "could not write" in output


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_disk_that_fills_up_mid_run_loses_no_fragment_silently(tmp_path: Path) -> None:
    """Room for the verdict but not for every fragment: verdict.json says which
    fragments could not be written and why."""
    filler = "head -c 300000 /dev/zero > filler 2>/dev/null; true"
    text = spec(*(bash(f"AC-{n}", "true") for n in range(1, 20)), bash("AC-20", filler))
    with tmpfs(tmp_path / "disk", "256k") as root:
        project(root, text)
        done = run(root, "-n", "2")
        output = done.stdout + done.stderr
        (root / "filler").unlink(missing_ok=True)
        data = verdict(root) if (root / ".acceptance" / "verdict.json").exists() else None
    assert_clean(output)
    assert done.returncode == 11, output
    assert "the disk is full" in output
    if data is not None:
        assert data["status"] == "error"
        assert any("disk is full" in problem for problem in data["problems"])


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_a_read_only_project_runs_and_says_it_could_not_write(tmp_path: Path) -> None:
    """The parse cache is optional: the criteria run; the verdict cannot be written, which
    the terminal says, exit 11."""
    with tmpfs(tmp_path / "ro", "1m") as root:
        project(root, spec(bash("AC-1", "true"), bash("AC-2", "true")))
        subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
        done = run(root)
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 11, output
    assert "2 passed" in done.stdout
    assert "the file system is read-only" in output


def test_acceptance_being_a_file_is_an_error_verdict_not_a_traceback(tmp_path: Path) -> None:
    root = project(tmp_path, spec(bash("AC-1", "true")))
    (root / ".acceptance").write_text("not a directory")
    done = run(root)
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 11, output
    assert "could not write" in output and "not a directory" in output


def test_a_rootdir_deleted_mid_run_ends_in_a_clean_error(tmp_path: Path) -> None:
    """The verdict still lands (in the rootdir, recreated empty) and says what happened;
    the criterion after the deletion is an error, not a pass."""
    root = project(
        tmp_path / "project",
        spec(bash("AC-1", 'rm -rf "$PWD"'), bash("AC-2", "true")),
    )
    done = run(root)
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 11, output
    data = verdict(root)
    assert [c["status"] for c in data["criteria"]] == ["passed", "error"]
    assert any("was deleted during the run" in problem for problem in data["problems"])


def test_a_deeply_nested_previous_report_means_no_deltas_not_a_crash(tmp_path: Path) -> None:
    """The baseline deltas compare with (baseline.json) nested 200,000 deep: no deltas, no crash."""
    root = project(tmp_path, spec(bash("AC-1", "true")))
    directory = spec_dir(root, root / "spec.md")
    directory.mkdir(parents=True)
    (directory / "baseline.json").write_text("[" * 200_000 + "]" * 200_000)
    done = run(root)
    assert_clean(done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout
    assert "no deltas" in done.stdout


def test_is_gone_sees_a_live_process(tmp_path: Path) -> None:
    """The helper the orphan tests rely on can fail: a running process is not gone."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not is_gone(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert is_gone(sleeper.pid)


def test_a_run_killed_outright_leaves_no_verdict_that_looks_current(tmp_path: Path) -> None:
    """SIGKILL cannot be handled: the earlier verdict.json is already gone (removed as the
    run started), and the next run sweeps the dead run's processes."""
    root = project(tmp_path, LONG)
    (root / ".acceptance").mkdir()
    (root / ".acceptance" / "verdict.json").write_text('{"status": "pass", "exit_code": 0}')
    process = start(root)
    try:
        wait_for(root / "pids", process)
        process.kill()
        process.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    assert not (root / ".acceptance" / "verdict.json").exists()
    pids = recorded(root / "pids")
    (root / "spec.md").write_text(spec(bash("AC-1", "true")))
    done = run(root)
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert done.returncode == 0, done.stdout
    if containment.own_cgroup() is not None:  # only a cgroup keeps hold of them
        assert survivors == []


def test_free_wave_slot_directories_are_removed_and_held_ones_kept(tmp_path: Path) -> None:
    free, held = tmp_path / f"{WAVE_PREFIX}free", tmp_path / f"{WAVE_PREFIX}held"
    for directory in (free, held):
        directory.mkdir()
        (directory / "slot-0.lock").touch()
        (directory / "slot-1.lock").touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(held / "slot-1.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert remove_free_wave_directories(tmp_path) == 1
        assert not free.exists() and (held / "slot-1.lock").exists()
    finally:
        holder.kill()
        holder.wait()
    assert remove_free_wave_directories(tmp_path) == 1  # free once its holder is gone
    assert not held.exists()


HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(300)
"""
