"""Signs of life while criteria run: titles in -v and --co, MANUAL counted in progress, a
status line on a terminal (a real pty), periodic 'still running' lines elsewhere (also from
real xdist workers), and the live output of a bash criterion under -s."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.specs import bash, manual, spec

from pytest_acceptance.run.progress import status_text, title_of

SLOW = "sleep 3"  # longer than the 2 s a criterion runs before it is shown


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


def test_verbose_lines_carry_the_title_and_manual_criteria_say_manual(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".md", spec=spec(bash("AC-1", "true", "Queues notifications"), manual("AC-2", "Reads well"))
    )
    result = pytester.runpytest("--acceptance", "spec.md", "-v")
    result.stdout.fnmatch_lines(
        [
            "spec.md::AC-1 Queues notifications [[]bash[]] PASSED*[[] 50%[]]",
            "spec.md::AC-2 Reads well [[]manual[]] MANUAL*[[]100%[]]",
            "*1 passed*1 manual*",  # pytest may add "N warnings" in between
        ]
    )


def test_progress_reaches_100_percent_with_a_manual_criterion_last(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), manual("AC-2")))
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(["spec.md .M*[[]100%[]]"])


def test_collect_only_tree_shows_titles_and_quiet_keeps_bare_node_ids(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-3", "true", "Uses the event bus")))
    result = pytester.runpytest("--acceptance", "spec.md", "--collect-only")
    result.stdout.fnmatch_lines(["*<CriterionItem AC-3 Uses the event bus [[]bash[]]>"])
    quiet = pytester.runpytest("--acceptance", "spec.md", "--collect-only", "-q")
    quiet.stdout.fnmatch_lines(["spec.md::AC-3", "1 test collected*"])  # copy-pasteable


def test_python_tests_keep_their_plain_verbose_lines(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    pass\n")
    pytester.makefile(".md", spec=spec(bash("AC-1", "true", "Titled")))
    result = pytester.runpytest("--acceptance", "spec.md", "test_plain.py", "-v")
    result.stdout.fnmatch_lines(
        ["test_plain.py::test_x PASSED*", "spec.md::AC-1 Titled [[]bash[]] PASSED*"]
    )


def test_title_is_read_back_only_from_a_criterion_domain() -> None:
    assert title_of("spec.md::AC-3", "AC-3: Uses the bus") == "Uses the bus"
    assert title_of("test_x.py::TestA::test_b", "TestA.test_b") is None
    assert title_of("spec.md::AC-3", "AC-30: other") is None


def test_status_text_names_the_longest_running_and_counts_the_rest() -> None:
    running = [("AC-3 Slow", 100.0), ("AC-5 Other", 130.0)]
    assert status_text(running, 175.0) == "⏳ AC-3 Slow · 1 min 15 s (+1 more running)"
    assert status_text(running[:1], 112.0, plain=True) == "still running AC-3 Slow · 12 s"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_plain_output_gets_periodic_still_running_lines(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    """Not a terminal (CI): a line every interval naming the criterion and its time; under
    xdist the controller learns what started from the workers' logstart reports."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), bash("AC-2", SLOW, "Slow criterion")))
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-o", "acceptance_progress_interval=1", *workers
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["[[]acceptance[]] still running AC-2 Slow criterion [[]bash[]] · * s"]
    )


def test_no_progress_lines_when_the_interval_is_0(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", SLOW)))
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-o", "acceptance_progress_interval=0"
    )
    assert result.ret == 0
    assert "still running" not in result.stdout.str()


def run_in_pty(args: list[str], cwd: Path, timeout: float = 60) -> str:
    """Run a command with a real pseudo-terminal as stdout/stderr; all it wrote."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    process = subprocess.Popen(
        args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env
    )
    os.close(terminal)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the terminal side closed
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif process.poll() is not None:
                break
    finally:
        process.kill() if process.poll() is None else None
        process.wait()
        os.close(controller)
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_a_terminal_gets_a_status_line_rewritten_in_place(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", SLOW, "Slow criterion")))
    output = run_in_pty(pytest_command("--acceptance", "spec.md"), pytester.path)
    # Shown after the current output (cursor saved and restored), erased before pytest writes.
    assert re.search(r"\x1b\[K\x1b7 ⏳ AC-1 Slow criterion \[bash\] · \d+ s\x1b8", output), output
    status_at = output.rindex("⏳")
    assert "\x1b[K" in output[status_at:], "the status line is erased before the result"
    assert "1 criterion passes: verified." in output
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert "⏳" not in verdict["criteria"][0]["output"]  # never in captured output


def test_under_s_a_bash_criterion_streams_its_output_while_it_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".md", spec=spec(bash("AC-1", "echo first-line; sleep 3; echo second-line", retries=0))
    )
    process = subprocess.Popen(
        pytest_command("--acceptance", "spec.md", "-s"),
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    seen = b""
    try:
        while b"first-line" not in seen:
            chunk = process.stdout.read1(4096)  # type: ignore[attr-defined]
            assert chunk, f"pytest ended before the first line streamed: {seen!r}"
            seen += chunk
        still_running = process.poll() is None
        early = seen
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert still_running and b"second-line" not in early, "output came only at the end"
    assert b"second-line" in rest
    assert process.returncode == 0
