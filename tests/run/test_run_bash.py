"""The bash runner, run for real: bash, process groups, temp-file output, retries, judging."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pluggy
import pytest
from support.processes import is_gone

from pytest_acceptance import hookspecs
from pytest_acceptance.model import (
    Criterion,
    Issue,
    Location,
    Method,
    Result,
    RunContext,
    Status,
)
from pytest_acceptance.run.bash import BashRunner, run_criterion

SPEC_LINE = 12
VERIFICATION_LINE = 15


def criterion(
    rootdir: Path,
    command: str | None,
    pass_condition: str | None = None,
    *,
    timeout: float | None = 30,
    retries: int | None = 0,
    method: Method = Method.BASH,
) -> Criterion:
    return Criterion(
        id="AC-7",
        title="Runs the check",
        method=method,
        location=Location(rootdir / "specs" / "spec.md", SPEC_LINE),
        verification_line=VERIFICATION_LINE,
        command=command,
        pass_condition=pass_condition,
        timeout=timeout,
        retries=retries,
    )


def run(rootdir: Path, command: str | None, pass_condition: str | None = None, **kw: Any) -> Result:
    return run_criterion(criterion(rootdir, command, pass_condition, **kw), RunContext(rootdir))


def recorded_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


# --- pass and fail -------------------------------------------------------------------------


def test_passing_command_passes_with_its_details(tmp_path: Path) -> None:
    result = run(tmp_path, "echo hello", "output contains hello")
    assert result.status is Status.PASSED
    assert result.attempts == 1
    assert result.issues == ()
    assert result.output == "hello"
    assert result.extra == {"command": "echo hello", "exit_code": 0, "timed_out": False}


def test_failure_points_at_the_first_path_line_under_the_rootdir(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_queue.py").write_text("def test_x(): ...\n")
    command = (
        "echo 'see /usr/lib/python3/x.py:9 and missing/file.py:4'; "
        "echo 'tests/test_queue.py:3: AssertionError'; "
        "echo \"E assert 'sent' == 'queued'\"; exit 1"
    )
    result = run(tmp_path, command)
    assert result.status is Status.FAILED
    assert result.issues == (
        Issue(
            "tests/test_queue.py:3",
            "exit code 0",
            "exit code 1; last output line: \"E assert 'sent' == 'queued'\"",
        ),
    )
    assert "E assert 'sent' == 'queued'" in result.output
    assert result.extra["exit_code"] == 1


def test_failure_location_understands_python_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("raise SystemExit(1)\n")
    command = f"echo 'File \"{tmp_path}/pkg/mod.py\", line 1, in <module>' >&2; exit 1"
    result = run(tmp_path, command)
    assert result.issues[0].location == "pkg/mod.py:1"


def test_failure_without_a_path_in_the_output_points_at_the_spec(tmp_path: Path) -> None:
    result = run(tmp_path, "echo 'nothing/here.py:3 is not a file'; false")
    assert result.issues[0].location == f"specs/spec.md:{SPEC_LINE}"


def test_last_output_line_skips_pytest_banners(tmp_path: Path) -> None:
    command = (
        "echo 'FAILED t.py::test_x - assert 1 == 2'; echo '==== 1 failed in 0.01s ===='; exit 1"
    )
    result = run(tmp_path, command)
    assert (
        result.issues[0].actual
        == 'exit code 1; last output line: "FAILED t.py::test_x - assert 1 == 2"'
    )


def test_failure_of_a_silent_command_says_there_was_no_output(tmp_path: Path) -> None:
    result = run(tmp_path, "exit 4")
    assert result.issues[0].actual == "exit code 4; no output"
    assert result.message == "expected exit code 0; found exit code 4; no output"


def test_named_exit_code_passes_on_that_code(tmp_path: Path) -> None:
    assert run(tmp_path, "exit 3", "exit code 3").status is Status.PASSED
    assert run(tmp_path, "exit 0", "exit code 3").status is Status.FAILED


# --- the vocabulary, end to end ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "condition", "status"),
    [
        ("echo ready", "output contains ready", Status.PASSED),
        ("echo ready >&2", "output contains ready", Status.FAILED),  # output means stdout
        ("echo ok", "output does not contain Traceback", Status.PASSED),
        ("echo Traceback", "output does not contain Traceback", Status.FAILED),
        ("printf '3 passed\\n'", "output matches '^\\d+ passed$'", Status.PASSED),
        ("echo '3 failed'", "output matches '^\\d+ passed$'", Status.FAILED),
        ("true", "output is empty", Status.PASSED),
        ("exit 1", "output is empty", Status.FAILED),  # a crash is never "empty output"
        ("echo x", "output is not empty", Status.PASSED),
        ("true", "output is not empty", Status.FAILED),
        ("touch made.txt", "file made.txt exists", Status.PASSED),
        ("true", "file made.txt exists", Status.FAILED),
        ("true", "file made.txt does not exist", Status.PASSED),
        ("touch made.txt", "file made.txt does not exist", Status.FAILED),
        ("touch a.md && ls a.md | head -1", "file exists", Status.PASSED),
    ],
)
def test_vocabulary_through_the_runner(
    tmp_path: Path, command: str, condition: str, status: Status
) -> None:
    assert run(tmp_path, command, condition).status is status


def test_file_exists_fails_on_ls_of_a_missing_file(tmp_path: Path) -> None:
    result = run(tmp_path, "ls missing-*.md | head -1", "file exists")
    assert result.status is Status.FAILED
    assert result.issues[0].actual.startswith("the command printed no path")


def test_malformed_condition_is_an_error_naming_the_spec_line(tmp_path: Path) -> None:
    result = run(tmp_path, "true", "exit code abc")
    assert result.status is Status.ERROR
    assert result.issues[0].location == f"specs/spec.md:{VERIFICATION_LINE}"
    assert 'write e.g. "exit code 0"' in result.message


# --- the process: cwd, environment, stdin, process groups ---------------------------------


def test_command_runs_in_the_rootdir_with_this_python_first_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "abc")
    monkeypatch.setenv("KEEP_ME", "kept")
    command = (
        "pwd; echo $PYTEST_ACCEPTANCE_CRITERION $KEEP_ME; "
        "echo ${PYTEST_XDIST_WORKER-unset} ${PYTEST_XDIST_WORKER_COUNT-unset} "
        "${PYTEST_XDIST_TESTRUNUID-unset} ${PYTEST_CURRENT_TEST-unset}; "
        "command -v python"
    )
    result = run(tmp_path, command)
    assert result.output.splitlines() == [
        str(tmp_path),
        "AC-7 kept",
        "unset unset unset unset",
        os.path.join(os.path.dirname(sys.executable), "python"),
    ]


def test_stdin_is_empty_so_a_reading_command_does_not_wait(tmp_path: Path) -> None:
    result = run(tmp_path, "cat; read line || echo eof", "output contains eof", timeout=20)
    assert result.status is Status.PASSED


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = (
        "sleep 300 & echo $! >> pids; "
        "(trap '' TERM; echo $BASHPID >> pids; exec sleep 300) & "  # ignores SIGTERM
        "echo $$ >> pids; wait"
    )
    result = run(tmp_path, command, timeout=2)
    assert result.status is Status.FAILED
    assert result.issues[0].actual.startswith("timed out after 2 s (process group killed)")
    assert result.extra["timed_out"] is True
    assert result.extra["exit_code"] is None
    recorded = recorded_pids(pids)
    assert len(recorded) == 3
    assert [pid for pid in recorded if not is_gone(pid)] == []


def test_background_child_neither_hangs_the_run_nor_survives_it(tmp_path: Path) -> None:
    # The child keeps stdout open; with a pipe the run would wait for it (until the timeout).
    result = run(tmp_path, "sleep 300 & echo $! > pid; echo started", timeout=60)
    assert result.status is Status.PASSED
    assert result.extra["timed_out"] is False
    assert is_gone(recorded_pids(tmp_path / "pid")[0])


def test_missing_bash_is_an_error_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-bin"))
    result = run(tmp_path, "true")
    assert result.status is Status.ERROR
    assert "could not run `bash -c` for AC-7" in result.message
    assert "is bash installed?" in result.message


def fake_bash(directory: Path, marker: Path) -> None:
    """A `bash` that notes it ran, then runs the real one."""
    directory.mkdir(parents=True)
    real = shutil.which("bash")
    (directory / "bash").write_text(f'#!{real}\necho ran >> {marker}\nexec {real} "$@"\n')
    (directory / "bash").chmod(0o755)


def test_bash_keeps_its_name_and_the_first_bash_on_path_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bash is looked up once per PATH, never in another order: a bash earlier on PATH
    wins, and the command still sees itself as `bash` ($0, error messages)."""
    assert run(tmp_path, "echo $0", "output contains bash").output == "bash"
    fake_bash(tmp_path / "first", tmp_path / "marker")
    monkeypatch.setenv("PATH", f"{tmp_path / 'first'}{os.pathsep}{os.environ['PATH']}")
    rootdir = tmp_path / "project"  # a new run: its environment is taken afresh
    rootdir.mkdir()
    assert run(rootdir, "true").status is Status.PASSED
    assert (tmp_path / "marker").read_text() == "ran\n"


def test_a_relative_path_entry_is_searched_from_the_rootdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative PATH entry means the command's cwd (the rootdir), not ours: such a PATH
    is left to the command's own search."""
    fake_bash(tmp_path / "tools", tmp_path / "marker")
    monkeypatch.setenv("PATH", f"tools{os.pathsep}{os.environ['PATH']}")
    assert Path.cwd() != tmp_path
    assert run(tmp_path, "true").status is Status.PASSED
    assert (tmp_path / "marker").read_text() == "ran\n"


def test_criterion_without_a_command_is_an_error(tmp_path: Path) -> None:
    result = run(tmp_path, None)
    assert result.status is Status.ERROR
    assert "no command" in result.message


# --- retries -------------------------------------------------------------------------------

COUNTING = 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "try $n"; '


def test_pass_after_a_failure_is_flaky_and_says_which_attempt_failed(tmp_path: Path) -> None:
    result = run(tmp_path, COUNTING + "[ $n -ge 2 ]", retries=1)
    assert result.status is Status.FLAKY
    assert result.attempts == 2
    assert (tmp_path / "count").read_text().strip() == "2"
    assert result.message == (
        "flaky: passed on attempt 2 of 2 after attempt 1 failed "
        '(exit code 1; last output line: "try 1")'
    )


def test_retries_stop_at_the_first_pass(tmp_path: Path) -> None:
    result = run(tmp_path, COUNTING + "true", retries=3)
    assert result.status is Status.PASSED
    assert (tmp_path / "count").read_text().strip() == "1"


def test_every_attempt_failing_is_a_failure_with_the_last_output(tmp_path: Path) -> None:
    result = run(tmp_path, COUNTING + "false", retries=2)
    assert result.status is Status.FAILED
    assert result.attempts == 3
    assert result.output == "try 3"
    assert result.message.endswith("(all 3 attempts failed)")


def test_default_retries_come_from_the_context(tmp_path: Path) -> None:
    item = criterion(tmp_path, COUNTING + "false", retries=None)
    result = run_criterion(item, RunContext(tmp_path, default_retries=1))
    assert result.attempts == 2


def test_a_timed_out_attempt_is_retried(tmp_path: Path) -> None:
    result = run(tmp_path, COUNTING + "[ $n -ge 2 ] || sleep 300", timeout=1, retries=1)
    assert result.status is Status.FLAKY
    assert "attempt 1 failed (timed out after 1 s (process group killed)" in result.message


# --- deterministic failures fail once ------------------------------------------------------


def run_with_default_retries(tmp_path: Path, command: str, **kw: Any) -> Result:
    """The criterion sets no ``retries``; the run's default is 2."""
    item = criterion(tmp_path, COUNTING + command, retries=None, **kw)
    return run_criterion(item, RunContext(tmp_path, default_retries=2))


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("no-such-command-xyz --flag", "command not found (no-such-command-xyz), exit 127"),
        ("python3 missing_script.py", "the file 'missing_script.py' the command names does not"),
        # written after the fix, the same class by other routes:
        ("cat notes/missing.txt", "the file 'notes/missing.txt' the command names does not"),
        ("./build.sh", "command not found"),
        ("touch tool && chmod -x tool && ./tool", "the command cannot be executed, exit 126"),
        ("source settings.env", "the file 'settings.env' the command names does not exist"),
    ],
)
def test_a_failure_that_cannot_change_is_not_retried_and_says_why(
    tmp_path: Path, command: str, why: str
) -> None:
    result = run_with_default_retries(tmp_path, command)
    assert result.status is Status.FAILED
    assert (tmp_path / "count").read_text().strip() == "1"  # one attempt, not three
    assert result.attempts == 1
    assert f"(not retried: {why}" in result.message
    assert "give the criterion `retries:` to retry it anyway" in result.message
    assert "attempts failed" not in result.message


def test_a_timeout_is_not_retried_by_default(tmp_path: Path) -> None:
    result = run_with_default_retries(tmp_path, "sleep 300", timeout=1)
    assert result.attempts == 1
    assert "(not retried: timed out after 1 s," in result.message


def test_an_ordinary_failure_is_still_retried_by_default(tmp_path: Path) -> None:
    """The honest control: a failure that may change (a flaky test) keeps its retries."""
    result = run_with_default_retries(tmp_path, "[ $n -ge 3 ]")
    assert result.status is Status.FLAKY
    assert result.attempts == 3


def test_an_error_about_a_file_the_command_does_not_name_is_retried(tmp_path: Path) -> None:
    result = run_with_default_retries(tmp_path, "cat /tmp/$RANDOM-absent 2>&1 >&2; false")
    assert result.attempts == 3


def test_a_criterion_that_asks_for_retries_gets_them_even_for_a_missing_command(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, COUNTING + "no-such-command-xyz", retries=1)
    assert result.attempts == 2
    assert (tmp_path / "count").read_text().strip() == "2"
    assert result.message.endswith("(all 2 attempts failed)")


# --- natural-language conditions -----------------------------------------------------------

NATURAL = "judge: multiple commits with criterion references"


class Judge:
    """A judge plugin, called through a real pluggy PluginManager."""

    def __init__(self, verdict: Result | None) -> None:
        self.verdict = verdict
        self.evidence: list[str] = []

    @pytest.hookimpl
    def pytest_acceptance_judge(
        self, criterion: Criterion, context: RunContext, evidence: str
    ) -> Result | None:
        self.evidence.append(evidence)
        return self.verdict


def plugin_manager(*plugins: object) -> pluggy.PluginManager:
    manager = pluggy.PluginManager("pytest")
    manager.add_hookspecs(hookspecs)
    for plugin in plugins:
        manager.register(plugin)
    return manager


def test_natural_language_without_a_judge_is_an_error_that_says_how_to_fix(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, COUNTING + "false", NATURAL, retries=3)
    assert result.status is Status.ERROR
    assert (tmp_path / "count").read_text().strip() == "1"  # ran once, no retries
    assert f"the pass condition '{NATURAL}' of AC-7" in result.message
    assert result.message.startswith("no agent configured to judge")
    advice = result.extra["advice"]  # printed once per run under the verdict's errors
    assert "none is configured" in advice and "--acceptance-agent-command CMD" in advice
    assert '"output contains X"' in advice
    assert result.issues[0].location == f"specs/spec.md:{VERIFICATION_LINE}"
    assert result.output == "try 1"


def test_natural_language_with_a_declining_judge_is_an_error(tmp_path: Path) -> None:
    judge = Judge(None)
    context = RunContext(tmp_path, hook=plugin_manager(judge).hook)
    result = run_criterion(criterion(tmp_path, "echo hi", NATURAL), context)
    assert result.status is Status.ERROR
    assert len(judge.evidence) == 1


def test_natural_language_is_decided_by_the_judge_from_the_evidence(tmp_path: Path) -> None:
    verdict = Result(
        Status.FAILED,
        issues=(Issue("git log", "commits naming AC-N", "one commit, no AC reference"),),
        message="only one commit",
    )
    judge = Judge(verdict)
    context = RunContext(tmp_path, hook=plugin_manager(judge).hook)
    result = run_criterion(criterion(tmp_path, "echo abc123 init; exit 0", NATURAL), context)
    assert result.status is Status.FAILED
    assert result.issues == verdict.issues
    assert result.message == "only one commit"
    assert result.extra["command"] == "echo abc123 init; exit 0"
    assert judge.evidence == [
        "Command (bash, run from the rootdir): echo abc123 init; exit 0\n"
        "Result: exit code 0\n"
        "Output (stdout, then stderr; last lines only):\nabc123 init\n"
    ]


# --- the hook and the bounded output -------------------------------------------------------


def test_runner_hook_answers_only_for_bash(tmp_path: Path) -> None:
    hook = plugin_manager(BashRunner()).hook
    context = RunContext(tmp_path, hook=hook)
    for method in (Method.SUBAGENT, Method.MANUAL):
        item = criterion(tmp_path, "true", method=method)
        assert hook.pytest_acceptance_run(criterion=item, context=context) is None
    result = hook.pytest_acceptance_run(criterion=criterion(tmp_path, "true"), context=context)
    assert result.status is Status.PASSED


def test_output_is_a_bounded_tail(tmp_path: Path) -> None:
    result = run(tmp_path, "seq 1 100000; exit 1")
    lines = result.output.splitlines()
    assert len(result.output) <= 4100
    assert len(lines) <= 61
    assert lines[0].startswith("[…")
    assert lines[-1] == "100000"


def test_output_keeps_both_streams_when_both_are_long(tmp_path: Path) -> None:
    result = run(tmp_path, "seq 1 5000; seq 1 5000 | sed 's/^/err /' >&2; exit 1")
    out, err = result.output.split("\n--- stderr ---\n")
    assert out.splitlines()[-1] == "5000"
    assert err.splitlines()[-1] == "err 5000"
    assert len(result.output) <= 4100
    assert len(result.output.splitlines()) <= 62


def test_output_of_one_huge_line_is_cut(tmp_path: Path) -> None:
    result = run(tmp_path, "head -c 100000 /dev/zero | tr '\\0' x; echo; exit 1")
    assert len(result.output) <= 4100
    assert len(result.issues[0].actual) < 300


def test_without_pidfd_the_wait_still_times_out_and_kills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Systems without pidfd_open (macOS, old kernels) take the Popen.wait path.
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    assert run(tmp_path, "echo ok").status is Status.PASSED
    result = run(tmp_path, "sleep 300 & echo $! > pid; wait", timeout=1)
    assert result.extra["timed_out"] is True
    assert is_gone(recorded_pids(tmp_path / "pid")[0])


def test_criteria_only_variables_reach_the_command_under_their_own_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ACCEPTANCE_CRITERIA_ENV_<NAME> (set by the Claude Code gate for its run) is <NAME> in
    a criterion's command and is gone under its prefixed name; without it, the environment
    a command gets is the run's own."""
    from pytest_acceptance.run.bash import command_environment

    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    plain = command_environment("AC-1")
    assert plain["PYTEST_ADDOPTS"] == "-p no:cacheprovider" and "PYTHONPATH" not in plain
    monkeypatch.setenv("ACCEPTANCE_CRITERIA_ENV_PYTEST_ADDOPTS", "-p reporter")
    monkeypatch.setenv("ACCEPTANCE_CRITERIA_ENV_PYTHONPATH", "/private/folder")
    gated = command_environment("AC-1")
    assert gated["PYTEST_ADDOPTS"] == "-p reporter" and gated["PYTHONPATH"] == "/private/folder"
    assert not [name for name in gated if name.startswith("ACCEPTANCE_CRITERIA_ENV_")]
    assert {k: v for k, v in gated.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")} == {
        k: v for k, v in plain.items() if k != "PYTEST_ADDOPTS"
    }
