"""No stale verdict: after a passing run, a run that stops before it decides leaves no
verdict.json that says pass, whichever way it stops (a conftest.py that fails to import, a
bad ini value, a bad option, Ctrl-C at start-up, a spec that fails to collect,
--collect-only). Each case is a real pytest process in a fresh project.

A failure before pytest loads the plugin at all cannot be caught by it: the verdict left
there names the run that wrote it, so a reader can tell it is not its own run's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.runs import BASE, interrupt, project, run, start, verdict, wait_for
from support.specs import bash, spec

PASSING = spec(bash("AC-1", "true"), bash("AC-2", "true"))
VERDICT = Path(".acceptance") / "verdict.json"


@pytest.fixture
def passed(tmp_path: Path) -> Path:
    """A project whose last run passed: verdict.json says pass."""
    root = project(tmp_path / "project", PASSING)
    done = run(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdict(root)["status"] == "pass"
    return root


def no_pass_left(root: Path) -> str:
    """The verdict a reader finds now: none, or one that does not say pass."""
    if not (root / VERDICT).exists():
        return "none"
    status = verdict(root)["status"]
    assert status != "pass"
    return status


def test_a_conftest_that_fails_to_import_leaves_no_verdict(passed: Path) -> None:
    (passed / "conftest.py").write_text("import a_module_that_does_not_exist\n")
    done = run(passed)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "a_module_that_does_not_exist" in done.stderr
    assert no_pass_left(passed) == "none"


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("pytest.ini", "[pytest]\nacceptance_timeout = five minutes\n"),
        ("pytest.ini", "[pytest]\nacceptance_lock_timeout = -1\n"),
        ("pyproject.toml", "[tool.pytest]\nacceptance_retries = 1e309\n"),
    ],
    ids=["words", "negative", "overflow"],
)
def test_a_bad_ini_value_leaves_no_verdict(passed: Path, where: str, text: str) -> None:
    (passed / "pytest.ini").unlink()
    (passed / where).write_text(text)
    done = run(passed)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "ini acceptance_" in lines[0], done.stderr
    assert no_pass_left(passed) == "none"


def test_a_bad_option_leaves_no_verdict(passed: Path) -> None:
    done = run(passed, "--no-such-option")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--no-such-option" in done.stderr and "Traceback" not in done.stderr
    assert no_pass_left(passed) == "none"


def test_ctrl_c_while_conftest_files_load_leaves_an_interrupted_verdict(passed: Path) -> None:
    (passed / "conftest.py").write_text(
        "import pathlib, time\npathlib.Path('loading').write_text('x')\ntime.sleep(300)\n"
    )
    process = start(passed, session=True)
    try:
        wait_for(passed / "loading", process)
        interrupt(process)
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert no_pass_left(passed) == "interrupted"
    assert verdict(passed)["criteria"] == []


def test_a_spec_that_fails_to_collect_leaves_an_error_verdict(passed: Path) -> None:
    (passed / "spec.md").write_bytes(b"# Spec\n\x00\x01\x02\xff")
    done = run(passed)
    assert done.returncode == pytest.ExitCode.INTERRUPTED  # pytest's code for collection errors
    assert no_pass_left(passed) == "error"


def test_collect_only_leaves_no_verdict(passed: Path) -> None:
    done = run(passed, "--collect-only")
    assert done.returncode == 0, done.stdout
    assert no_pass_left(passed) == "none"


def test_the_verdict_names_the_run_that_wrote_it(tmp_path: Path) -> None:
    """run_pid and run_args are the writing process's own."""
    root = project(tmp_path, PASSING)
    process = start(root, "-q")
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    written = verdict(root)
    assert written["run_pid"] == process.pid
    assert written["run_args"] == [*BASE[3:], "--acceptance", "spec.md", "-q"]


def test_a_run_that_fails_before_the_plugin_loads_leaves_a_verdict_it_did_not_write(
    passed: Path,
) -> None:
    """``-p`` naming a missing plugin stops pytest before any plugin of ours runs: the old
    verdict stays, and it says it is older than this run and from another process."""
    began = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no_such_plugin_here", "--acceptance", "spec.md"],
        cwd=passed,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        check=False,
    )
    assert done.returncode != 0
    left = verdict(passed)
    assert left["started_at_epoch"] < began
    assert left["run_args"] == [*BASE[3:], "--acceptance", "spec.md"]
