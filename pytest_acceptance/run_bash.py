"""The ``bash`` runner: run a criterion's command from the rootdir and check its condition.

Each attempt runs ``bash -c <command>`` in a session of its own, with stdin from /dev/null
and stdout/stderr going to temp files (a pipe held open by a background child would hang
the run). The whole process group is killed on timeout, and whatever is left of it after a
normal exit too, so nothing outlives the check. Processes that leave the group on purpose
(``setsid``, daemons) are beyond reach.

The pass condition comes from :mod:`pytest_acceptance.conditions`; a natural-language
condition is handed to ``pytest_acceptance_judge`` (an agent), never reduced to the exit
code.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import pytest

from pytest_acceptance.conditions import (
    VOCABULARY_HINT,
    Check,
    Condition,
    ConditionError,
    NaturalLanguage,
    parse_condition,
)
from pytest_acceptance.model import Criterion, Issue, Method, Result, RunContext, Status
from pytest_acceptance.verdict import display_path

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL of the process group
OUTPUT_LINES = 60
OUTPUT_CHARS = 4000
# A nested pytest in a command must not believe it is an xdist worker of this run.
_HIDDEN_VARIABLES = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_CURRENT_TEST",
)
# Set by progress.py under -s: a context manager around each attempt, given its output files.
live_output: Callable[[IO[bytes], IO[bytes]], AbstractContextManager[object]] | None = None


class BashRunner:
    """Implements ``pytest_acceptance_run`` for ``method: bash``."""

    @pytest.hookimpl
    def pytest_acceptance_run(self, criterion: Criterion, context: RunContext) -> Result | None:
        if criterion.method is not Method.BASH:
            return None
        return run_criterion(criterion, context)


@dataclass(frozen=True)
class Attempt:
    """One run of the command."""

    exit_code: int | None  # None when it timed out
    stdout: str
    stderr: str
    timeout: float
    duration: float

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


def run_criterion(criterion: Criterion, context: RunContext) -> Result:
    """Run a bash criterion; never raises for a bad command or a missing bash."""
    started = time.monotonic()
    try:
        condition = parse_condition(criterion.pass_condition)
    except ConditionError as error:
        return _error(criterion, context, str(error), "a pass_condition in the vocabulary")
    problem = _setup_problem(criterion, context)
    if problem:
        return _error(criterion, context, problem, "a command that can run")
    try:
        if isinstance(condition, NaturalLanguage):
            return _run_judged(criterion, context, condition, started)
        return _run_with_retries(criterion, context, condition, started)
    except OSError as error:
        message = f"could not run `bash -c` for {criterion.id}: {error}; is bash installed?"
        return _error(criterion, context, message, "the command to run")


def _setup_problem(criterion: Criterion, context: RunContext) -> str | None:
    if not (criterion.command or "").strip():
        return f"{criterion.id} has method bash but no command: add `command: ...`"
    if _timeout(criterion, context) <= 0:
        return f"{criterion.id} has timeout {criterion.timeout}: give a positive number of seconds"
    if not Path(context.rootdir).is_dir():
        return f"the rootdir {context.rootdir} is not a directory"
    return None


def _timeout(criterion: Criterion, context: RunContext) -> float:
    return criterion.timeout if criterion.timeout is not None else context.default_timeout


# --- running with retries ----------------------------------------------------------------


def _run_with_retries(
    criterion: Criterion, context: RunContext, condition: Condition, started: float
) -> Result:
    retries = criterion.retries if criterion.retries is not None else context.default_retries
    most = 1 + max(retries, 0)
    failures: list[tuple[int, str]] = []
    for number in range(1, most + 1):
        attempt = _attempt(criterion, context)
        check = evaluate(condition, attempt, Path(context.rootdir))
        if check.passed:
            break
        failures.append((number, check.actual))
    duration = time.monotonic() - started
    extra = _extra(criterion, attempt)
    output = bounded_output(attempt.stdout, attempt.stderr)
    if check.passed:
        status = Status.FLAKY if failures else Status.PASSED
        message = _flaky_message(number, most, failures) if failures else check.actual
        return Result(status, number, duration, (), output, message, extra)
    issue = Issue(_failure_location(criterion, context, attempt), check.expected, check.actual)
    tries = f" (all {number} attempts failed)" if number > 1 else ""
    message = f"expected {check.expected}; found {check.actual}{tries}"
    return Result(Status.FAILED, number, duration, (issue,), output, message, extra)


def evaluate(condition: Condition, attempt: Attempt, rootdir: Path) -> Check:
    """Check an attempt against a condition; ``actual`` also quotes the last output line."""
    expected = condition.describe()
    if attempt.exit_code is None:
        actual = f"timed out after {attempt.timeout:g} s (process group killed)"
        return Check(False, expected, _with_last_line(actual, attempt))
    check = condition.check(attempt.exit_code, attempt.stdout, rootdir)
    if check.passed:
        return check
    return Check(False, check.expected, _with_last_line(check.actual, attempt))


def _flaky_message(passed_on: int, most: int, failures: list[tuple[int, str]]) -> str:
    earlier = "; ".join(f"attempt {number} failed ({actual})" for number, actual in failures)
    return f"flaky: passed on attempt {passed_on} of {most} after {earlier}"


def _extra(criterion: Criterion, attempt: Attempt) -> dict[str, object]:
    return {
        "command": criterion.command,
        "exit_code": attempt.exit_code,
        "timed_out": attempt.timed_out,
    }


# --- natural-language conditions: an agent judges ----------------------------------------


def _run_judged(
    criterion: Criterion, context: RunContext, condition: NaturalLanguage, started: float
) -> Result:
    attempt = _attempt(criterion, context)  # once: a judge decides, retries would not help
    output = bounded_output(attempt.stdout, attempt.stderr)
    judge = getattr(context.hook, "pytest_acceptance_judge", None)
    verdict = None
    if judge is not None:
        evidence = _evidence(criterion, attempt, output)
        verdict = judge(criterion=criterion, context=context, evidence=evidence)
    extra = _extra(criterion, attempt)
    if verdict is None:
        result = _no_judge(criterion, context, condition, attempt)
        return replace(result, duration=time.monotonic() - started, output=output, extra=extra)
    return replace(
        verdict,
        duration=time.monotonic() - started,
        output=verdict.output or output,
        extra={**extra, **verdict.extra},
    )


def _evidence(criterion: Criterion, attempt: Attempt, output: str) -> str:
    if attempt.timed_out:
        ending = f"timed out after {attempt.timeout:g} s (process group killed)"
    else:
        ending = f"exit code {attempt.exit_code}"
    return (
        f"Command (bash, run from the rootdir): {criterion.command}\n"
        f"Result: {ending}\n"
        f"Output (stdout, then stderr; last lines only):\n{output or '(no output)'}\n"
    )


def _no_judge(
    criterion: Criterion, context: RunContext, condition: NaturalLanguage, attempt: Attempt
) -> Result:
    message = (
        f"pass_condition {condition.text!r} is not in the vocabulary, so an agent must judge "
        'it, and no agent is configured. Configure an agent (see README "Agents"), or '
        f"rewrite the pass_condition with the vocabulary: {VOCABULARY_HINT}"
    )
    ran = "timed out" if attempt.timed_out else f"the command exited with {attempt.exit_code}"
    issue = Issue(
        _condition_location(criterion, context),
        f"an agent's judgement of: {condition.text}",
        f"no agent configured to judge it ({ran})",
    )
    return Result(Status.ERROR, 1, issues=(issue,), message=message)


def _error(criterion: Criterion, context: RunContext, message: str, expected: str) -> Result:
    issue = Issue(_condition_location(criterion, context), expected, message)
    return Result(Status.ERROR, 0, issues=(issue,), message=message)


# --- one attempt: a process group that never outlives it --------------------------------


def _attempt(criterion: Criterion, context: RunContext) -> Attempt:
    return run_command(
        criterion.command or "",
        Path(context.rootdir),
        {**_session_environment(context), "PYTEST_ACCEPTANCE_CRITERION": criterion.id},
        _timeout(criterion, context),
    )


@functools.lru_cache(maxsize=8)
def _session_environment(context: RunContext) -> dict[str, str]:
    """``command_environment`` taken once per run (a context lives for one session):
    copying and encoding os.environ for every command adds up over hundreds of them."""
    return command_environment(None)


def command_environment(criterion_id: str | None) -> dict[str, str]:
    """The inherited environment, with this Python's bin first and no xdist worker marks."""
    env = {k: v for k, v in os.environ.items() if k not in _HIDDEN_VARIABLES}
    path = env.get("PATH") or os.defpath
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), path])
    if criterion_id is not None:
        env["PYTEST_ACCEPTANCE_CRITERION"] = criterion_id
    return env


def run_command(command: str, cwd: Path, env: dict[str, str], timeout: float) -> Attempt:
    """Run ``bash -c command``; kill its whole process group on timeout and afterwards."""
    started = time.monotonic()
    with _capture_file("stdout") as out, _capture_file("stderr") as err:
        watching = live_output(out, err) if live_output else contextlib.nullcontext()
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            with watching:
                exit_code = wait_for_exit(process, timeout)
        finally:  # also on KeyboardInterrupt: leave no process behind
            kill_process_group(process)
        return Attempt(exit_code, _read(out), _read(err), timeout, time.monotonic() - started)


def _capture_file(name: str) -> IO[bytes]:
    """A nameless file for a command's output: memory-backed where Linux offers memfd
    (creating a temp file costs more than running a short command), else a temp file.
    Never a pipe: a background child that keeps a pipe open would hang the run."""
    try:
        return open(os.memfd_create(name, os.MFD_CLOEXEC), "w+b")
    except (AttributeError, OSError):
        return tempfile.TemporaryFile()


def wait_for_exit(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The exit code, or None on timeout.

    Waits on a pidfd where Linux has one: ``Popen.wait(timeout)`` polls with growing
    sleeps, which adds milliseconds to every short command.
    """
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: poll like subprocess does
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(min(math.ceil(timeout * 1000), 2**31 - 1)):  # poll takes a C int
            return None
        return process.wait()
    finally:
        os.close(pidfd)


def _read(stream: IO[bytes]) -> str:
    stream.seek(0)
    return stream.read().decode("utf-8", errors="replace")


def kill_process_group(process: subprocess.Popen[bytes], grace: float = KILL_GRACE) -> None:
    """SIGTERM the process's group, give it ``grace`` seconds, then SIGKILL; reap it."""
    group = process.pid  # start_new_session: the group id is the leader's pid
    if _group_alive(group, process):
        _signal_group(group, signal.SIGTERM)
        _signal_group(group, signal.SIGCONT)  # a stopped process acts on SIGTERM only then
        if not _wait_for_group(group, process, grace):
            _signal_group(group, signal.SIGKILL)
            _wait_for_group(group, process, grace)
    process.wait()


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(group, signum)


def _wait_for_group(group: int, process: subprocess.Popen[bytes], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _group_alive(group, process):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _group_alive(group: int, process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reap the leader, so it does not linger as our zombie
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_running_member(group)


def _has_running_member(group: int) -> bool:
    """Whether a non-zombie process is in the group (zombies of an init that does not
    reap count as gone). Without /proc, assume yes."""
    if not os.path.isdir("/proc"):
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False


# --- reporting -----------------------------------------------------------------------------


def bounded_output(stdout: str, stderr: str) -> str:
    """The tail of stdout then stderr: about OUTPUT_LINES lines / OUTPUT_CHARS characters.

    When both streams have something, stderr keeps at most half the room.
    """
    if not stderr.strip():
        return _tail(stdout, OUTPUT_LINES, OUTPUT_CHARS)
    if not stdout.strip():
        return _tail(stderr, OUTPUT_LINES, OUTPUT_CHARS)
    err = _tail(stderr, OUTPUT_LINES // 2, OUTPUT_CHARS // 2)
    err_lines = err.count("\n") + 2  # the stderr lines and the separator
    out = _tail(stdout, OUTPUT_LINES - err_lines, OUTPUT_CHARS - len(err) - 20)
    return f"{out}\n--- stderr ---\n{err}"


def _tail(text: str, lines: int, chars: int) -> str:
    kept = text.rstrip("\n").splitlines()
    cut = max(len(kept) - lines, 0)
    tail = "\n".join(kept[cut:])
    if len(tail) > chars:
        tail = tail[-chars:]
        cut_note = "[… earlier output cut]\n"
    else:
        cut_note = f"[… {cut} earlier lines cut]\n" if cut else ""
    return cut_note + tail


_BANNER = re.compile(r"^[=\-_*#~ ]*$|^[=\-_]{3,}.*[=\-_]{3,}$")


def _with_last_line(actual: str, attempt: Attempt) -> str:
    line = _last_line(attempt.stderr) or _last_line(attempt.stdout)
    if line is None:
        return f"{actual}; no output"
    if len(line) > 200:
        line = line[:199] + "…"
    return f'{actual}; last output line: "{line}"'


def _last_line(text: str) -> str | None:
    """The last line that says something (pytest's ``=== 1 failed in 0.1s ===`` does not)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not _BANNER.match(line)]
    if meaningful:
        return meaningful[-1]
    return lines[-1] if lines else None


_PYTHON_FRAME = re.compile(r'File "([^"\n]{1,500})", line (\d+)')
_LINE_NUMBER = re.compile(r":(\d+)")
_PATH_PUNCTUATION = frozenset("_.+@~/-")
_MAX_PATH = 500
_MAX_CANDIDATES = 200
_INSTALLED = frozenset({"site-packages", "dist-packages", "node_modules"})


def _failure_location(criterion: Criterion, context: RunContext, attempt: Attempt) -> str:
    """The first ``path:line`` in the output that names a file under the rootdir."""
    rootdir = Path(context.rootdir)
    output = f"{attempt.stdout}\n{attempt.stderr}"
    candidates = heapq.merge(_python_frames(output), _path_colon_lines(output))
    for _, path, line in itertools.islice(candidates, _MAX_CANDIDATES):
        relative = _under(rootdir, path)
        if relative is not None and (rootdir / relative).is_file():
            return f"{relative}:{line}"
    return _spec_location(criterion, context, criterion.location.line)


def _python_frames(output: str) -> Iterator[tuple[int, str, str]]:
    """``File "path", line N`` of Python tracebacks, as (position, path, line)."""
    for match in _PYTHON_FRAME.finditer(output):
        yield match.start(), match[1], match[2]


def _path_colon_lines(output: str) -> Iterator[tuple[int, str, str]]:
    """``path:N``, as (position, path, line). Walks back from each ``:N`` instead of a
    regex over the path, which would be quadratic on a long line without colons."""
    for match in _LINE_NUMBER.finditer(output):
        end = match.start()
        start = end
        while (
            start > 0
            and end - start < _MAX_PATH
            and (output[start - 1].isalnum() or output[start - 1] in _PATH_PUNCTUATION)
        ):
            start -= 1
        if start < end and output[end - 1] != "/":
            yield start, output[start:end], match[1]


def _under(rootdir: Path, path: str) -> str | None:
    candidate = Path(path)
    if _INSTALLED.intersection(candidate.parts):  # a crash inside a package is not the place
        return None
    if not candidate.is_absolute():
        return None if ".." in candidate.parts else path
    for root in (rootdir, rootdir.resolve()):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return None


def _condition_location(criterion: Criterion, context: RunContext) -> str:
    line = criterion.verification_line or criterion.location.line
    return _spec_location(criterion, context, line)


def _spec_location(criterion: Criterion, context: RunContext, line: int) -> str:
    return f"{display_path(criterion.location.path, Path(context.rootdir))}:{line}"
