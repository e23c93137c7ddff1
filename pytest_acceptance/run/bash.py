"""The ``bash`` runner: run a criterion's command and check its condition.

A command runs in the rootdir, or in its ``cwd:`` (a folder relative to the spec's folder);
``file`` conditions and the paths its output names are taken from the same folder.

Each attempt runs ``bash -c <command>`` in a session of its own, with stdin from /dev/null
and stdout/stderr going to memory-backed files (a pipe held open by a background child
would hang the run). Everything the command started is killed on timeout, and whatever is
left after a normal exit too, so nothing outlives the check: a cgroup holds it where Linux
lets us make one, else tracking as a subreaper finds it (see containment.py, which also
says what stays out of reach).

The pass condition comes from :mod:`pytest_acceptance.run.conditions`; a condition that
asks for a judge (``judge: ...``) is handed to ``pytest_acceptance_judge`` (an agent),
never reduced to the exit code.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import pytest

from pytest_acceptance.gate.criteria_env import criteria_env
from pytest_acceptance.model import Criterion, Issue, Method, Result, RunContext, Status
from pytest_acceptance.run.conditions import (
    Check,
    Condition,
    ConditionError,
    NaturalLanguage,
    OutputContains,
    OutputEmpty,
    OutputMatches,
    PrintedPathsExist,
    parse_condition,
)
from pytest_acceptance.run.containment import capture_file, contained, read_range, wait_for_exit
from pytest_acceptance.run.no_tests import unless_vacuous
from pytest_acceptance.text import display_path

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL of what a command left running
OUTPUT_LINES = 60
OUTPUT_CHARS = 4000
# Output is never held whole in memory beyond this: conditions on output read stdout up to
# CHECK_LIMIT bytes (a command printing more fails them, saying so); everything else
# (reports, the judge, locations) reads the last TAIL_BYTES of each stream.
CHECK_LIMIT = 16 * 1024 * 1024
TAIL_BYTES = 64 * 1024
_OUTPUT_CLAUSES = (OutputContains, OutputMatches, OutputEmpty, PrintedPathsExist)
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
    stdout: str  # all of it up to CHECK_LIMIT bytes, else the tail
    stderr: str  # the tail
    timeout: float
    duration: float
    stdout_bytes: int = 0
    cut_by: str = ""  # who cut the timeout short (pytest-timeout's budget), when someone did

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None

    @property
    def stdout_complete(self) -> bool:
        return self.stdout_bytes <= CHECK_LIMIT


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
    folder = run_folder(criterion, context)
    if not folder.is_dir():
        if criterion.cwd is None:
            return f"the rootdir {context.rootdir} is not a directory"
        return (
            f"{criterion.id} has cwd {criterion.cwd!r}, but {folder} is not a folder: cwd is "
            "relative to the spec's folder"
        )
    return None


def run_folder(criterion: Criterion, context: RunContext) -> Path:
    """Where the command runs: its ``cwd:`` (relative to the spec's folder), else the
    rootdir."""
    rootdir = Path(context.rootdir)
    if criterion.cwd is None:
        return rootdir
    return Path(os.path.normpath(context.spec_folder(criterion.location.path) / criterion.cwd))


def _timeout(criterion: Criterion, context: RunContext) -> float:
    return criterion.timeout if criterion.timeout is not None else context.default_timeout


# --- running with retries ----------------------------------------------------------------


def _run_with_retries(
    criterion: Criterion, context: RunContext, condition: Condition, started: float
) -> Result:
    retries = criterion.retries if criterion.retries is not None else context.default_retries
    most = 1 + max(retries, 0)
    failures: list[tuple[int, str]] = []
    not_retried = None
    for number in range(1, most + 1):
        attempt = _attempt(criterion, context)
        check = evaluate(condition, attempt, run_folder(criterion, context))
        check = unless_vacuous(criterion.command or "", attempt, check)  # ran no test: fail
        if check.passed:
            break
        failures.append((number, check.actual))
        if attempt.cut_by:  # the budget of the whole criterion is spent: no attempt is left
            break
        if criterion.retries is None and number < most:  # the spec did not ask for retries
            not_retried = deterministic_failure(
                criterion.command or "", attempt, run_folder(criterion, context)
            )
            if not_retried is not None:
                break
    duration = time.monotonic() - started
    extra = _extra(criterion, context, attempt)
    output = bounded_output(attempt.stdout, attempt.stderr)
    if check.passed:
        status = Status.FLAKY if failures else Status.PASSED
        message = _flaky_message(number, most, failures) if failures else check.actual
        return Result(status, number, duration, (), output, message, extra)
    issue = Issue(_failure_location(criterion, context, attempt), check.expected, check.actual)
    tries = f" (all {number} attempts failed)" if number > 1 else ""
    if not_retried is not None:
        extra["not_retried"] = not_retried
        tries = (
            f" (not retried: {not_retried}, which fails the same way every time; "
            "give the criterion `retries:` to retry it anyway)"
        )
    message = f"expected {check.expected}; found {check.actual}{tries}"
    return Result(Status.FAILED, number, duration, (issue,), output, message, extra)


_NOT_FOUND = re.compile(r"(?:^|\n)(?:bash: )?(?:line \d+: )?([^\n:]{1,200}): command not found")
_NO_SUCH_FILE = re.compile(r"No such file or directory|can't open file|cannot open|not found")


def deterministic_failure(command: str, attempt: Attempt, folder: Path) -> str | None:
    """Why trying ``attempt`` again would fail the same way, or None when another attempt
    might pass: a timeout (another waits as long again), a command that does not exist
    (exit 127) or cannot be executed (126), or a file the command names that does not
    exist and that the error says is missing. A flaky test, a port in use, a network
    error: None, retried as the criterion's ``retries`` say."""
    if attempt.timed_out:
        return f"timed out after {attempt.timeout:g} s"
    if attempt.exit_code == 127:
        missing = _NOT_FOUND.search(attempt.stderr)
        return f"command not found{f' ({missing[1].strip()})' if missing else ''}, exit 127"
    if attempt.exit_code == 126:
        return "the command cannot be executed, exit 126"
    if not _NO_SUCH_FILE.search(attempt.stderr):
        return None
    for word in _named_paths(command):
        if word in attempt.stderr and not _exists_from(folder, word):
            return f"the file {word!r} the command names does not exist"
    return None


def _named_paths(command: str) -> list[str]:
    """The words of ``command`` that look like paths (``app.py``, ``src/x``)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:  # an unclosed quote: the words as written
        words = command.split()
    return [w for w in words if ("/" in w or "." in w.strip(".")) and not w.startswith("-")]


def _exists_from(folder: Path, path: str) -> bool:
    try:
        return (folder / path).exists()
    except (OSError, ValueError):
        return False


def evaluate(condition: Condition, attempt: Attempt, rootdir: Path) -> Check:
    """Check an attempt against a condition; ``actual`` also quotes the last output line."""
    expected = condition.describe()
    if attempt.exit_code is None:
        actual = f"timed out after {attempt.timeout:g} s (process group killed)"
        if attempt.cut_by:
            actual = f"timed out: cut by {attempt.cut_by} (process group killed)"
        return Check(False, expected, _with_last_line(actual, attempt))
    if not attempt.stdout_complete and _reads_output(condition):
        actual = (
            f"the command printed {attempt.stdout_bytes:,} bytes on stdout, more than the "
            f"{CHECK_LIMIT:,} an output condition reads: print less, or write a file and check that"
        )
        return Check(False, expected, _with_last_line(actual, attempt))
    check = condition.check(attempt.exit_code, attempt.stdout, rootdir, attempt.timeout)
    if check.passed:
        return check
    return Check(False, check.expected, _with_last_line(check.actual, attempt))


def _reads_output(condition: Condition) -> bool:
    return any(isinstance(clause, _OUTPUT_CLAUSES) for clause in condition.clauses)


def _flaky_message(passed_on: int, most: int, failures: list[tuple[int, str]]) -> str:
    earlier = "; ".join(f"attempt {number} failed ({actual})" for number, actual in failures)
    return f"flaky: passed on attempt {passed_on} of {most} after {earlier}"


def _extra(criterion: Criterion, context: RunContext, attempt: Attempt) -> dict[str, object]:
    extra: dict[str, object] = {
        "command": criterion.command,
        "exit_code": attempt.exit_code,
        "timed_out": attempt.timed_out,
    }
    if criterion.cwd is not None:  # where it ran, for the verdict and the report
        extra["cwd"] = display_path(run_folder(criterion, context), Path(context.rootdir))
    return extra


# --- conditions that ask for a judge: an agent judges ------------------------------------


def _run_judged(
    criterion: Criterion, context: RunContext, condition: NaturalLanguage, started: float
) -> Result:
    attempt = _attempt(criterion, context)  # once: a judge decides, retries would not help
    output = bounded_output(attempt.stdout, attempt.stderr)
    judge = getattr(context.hook, "pytest_acceptance_judge", None)
    verdict: Result | None = None
    if judge is not None:
        evidence = _evidence(criterion, context, attempt, output)
        verdict = judge(criterion=criterion, context=context, evidence=evidence)
    extra = _extra(criterion, context, attempt)
    if verdict is None:
        result = _no_judge(criterion, context, condition, attempt)
        extra = {**extra, **result.extra}
        return replace(result, duration=time.monotonic() - started, output=output, extra=extra)
    return replace(
        verdict,
        duration=time.monotonic() - started,
        output=verdict.output or output,
        extra={**extra, **verdict.extra},
    )


def _evidence(criterion: Criterion, context: RunContext, attempt: Attempt, output: str) -> str:
    if attempt.timed_out:
        ending = f"timed out after {attempt.timeout:g} s (process group killed)"
        if attempt.cut_by:
            ending = f"timed out: cut by {attempt.cut_by} (process group killed)"
    else:
        ending = f"exit code {attempt.exit_code}"
    return (
        f"Command (bash, run {_where(criterion, context)}): {criterion.command}\n"
        f"Result: {ending}\n"
        f"Output (stdout, then stderr; last lines only):\n{output or '(no output)'}\n"
    )


def _no_judge(
    criterion: Criterion, context: RunContext, condition: NaturalLanguage, attempt: Attempt
) -> Result:
    """No plugin judged the condition (the agent plugin is not loaded): an error, never the
    exit code's verdict."""
    from pytest_acceptance.run.no_agent import no_agent_advice, no_agent_message

    ran = "timed out" if attempt.timed_out else f"the command exited with {attempt.exit_code}"
    issue = Issue(
        _condition_location(criterion, context),
        f"an agent's judgement of: {condition.text}",
        f"no agent configured to judge it ({ran})",
    )
    message = no_agent_message(criterion, "")
    advice = no_agent_advice("no plugin judges pass conditions in this run")
    return Result(Status.ERROR, 1, issues=(issue,), message=message, extra={"advice": advice})


def _where(criterion: Criterion, context: RunContext) -> str:
    if criterion.cwd is None:
        return "from the rootdir"
    return f"in {display_path(run_folder(criterion, context), Path(context.rootdir))}"


def _error(criterion: Criterion, context: RunContext, message: str, expected: str) -> Result:
    issue = Issue(_condition_location(criterion, context), expected, message)
    return Result(Status.ERROR, 0, issues=(issue,), message=message)


# --- one attempt: a process group that never outlives it --------------------------------


def _attempt(criterion: Criterion, context: RunContext) -> Attempt:
    timeout, cut_by = context.capped(_timeout(criterion, context))
    environment = _session_environment(replace(context, budget=None))
    attempt = run_command(
        criterion.command or "",
        run_folder(criterion, context),
        {**environment, "PYTEST_ACCEPTANCE_CRITERION": criterion.id},
        timeout,
    )
    return replace(attempt, cut_by=cut_by) if cut_by and attempt.timed_out else attempt


@functools.lru_cache(maxsize=8)
def _session_environment(context: RunContext) -> dict[str, str]:
    """``command_environment`` taken once per run (a context lives for one session; a
    criterion's budget is left out of the key): copying and encoding os.environ for every
    command adds up over hundreds of them."""
    return command_environment(None)


def command_environment(criterion_id: str | None) -> dict[str, str]:
    """The inherited environment, with this Python's bin first and no xdist worker marks."""
    # Under the Claude Code gate, the variables it set for the criteria only take effect.
    env = criteria_env({k: v for k, v in os.environ.items() if k not in _HIDDEN_VARIABLES})
    path = env.get("PATH") or os.defpath
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), path])
    if criterion_id is not None:
        env["PYTEST_ACCEPTANCE_CRITERION"] = criterion_id
    return env


def run_command(command: str, cwd: Path, env: dict[str, str], timeout: float) -> Attempt:
    """Run ``bash -c command``; kill everything it started on timeout and afterwards."""
    started = time.monotonic()
    with capture_file("stdout") as out, capture_file("stderr") as err:
        watching = live_output(out, err) if live_output else nullcontext()
        with contained(KILL_GRACE) as scope:  # ends killing what is left, however it ends
            process = scope.popen(
                ["bash", "-c", command],
                executable=_bash(env.get("PATH")),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
            with watching:
                exit_code = wait_for_exit(process, timeout)
        stdout, size = _read_stdout(out)
        return Attempt(
            exit_code, stdout, _read_tail(err), timeout, time.monotonic() - started, size
        )


@functools.lru_cache(maxsize=8)
def _bash(path: str | None) -> str | None:
    """bash's absolute path on this PATH, looked up once per run: otherwise the child
    tries every PATH directory before bash's on each command. None (the child searches
    as usual) when PATH has a relative entry, which depends on the command's cwd."""
    if path is None or not all(os.path.isabs(entry) for entry in path.split(os.pathsep)):
        return None
    return shutil.which("bash", path=path)


def _read_stdout(stream: IO[bytes]) -> tuple[str, int]:
    """All of stdout when conditions may read it (up to CHECK_LIMIT bytes), else its
    tail; and its size in bytes. Never more than CHECK_LIMIT in memory."""
    size = os.fstat(stream.fileno()).st_size
    if size <= CHECK_LIMIT:
        return read_range(stream, 0, size).decode("utf-8", errors="replace"), size
    return _read_tail(stream), size


def _read_tail(stream: IO[bytes]) -> str:
    """The last TAIL_BYTES of a file, from the first whole line within them."""
    size = os.fstat(stream.fileno()).st_size
    data = read_range(stream, max(size - TAIL_BYTES, 0), size)
    if size > TAIL_BYTES:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else data
    return data.decode("utf-8", errors="replace")


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
    """The last ``lines`` lines when they fit in ``chars`` characters, else the last
    ``chars`` characters. Only the end is split: splitting megabytes of short lines
    would cost far more memory than the output itself."""
    body = text.rstrip("\n")
    window = body[-(chars + 1) :]
    if lines > 0 and window.count("\n") >= lines:  # the last lines fit in the window
        kept = window.splitlines()[-lines:]
        cut = body.count("\n") + 1 - len(kept)
        return f"[… {cut} earlier lines cut]\n" + "\n".join(kept)
    if len(body) <= chars:
        return body
    return "[… earlier output cut]\n" + body[-chars:]


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
    lines = [line.strip() for line in text[-TAIL_BYTES:].splitlines() if line.strip()]
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
    """The first ``path:line`` in the output that names a file under the rootdir (a
    relative path is taken from where the command ran)."""
    rootdir = Path(context.rootdir)
    folder = run_folder(criterion, context)
    output = f"{attempt.stdout}\n{attempt.stderr}"
    candidates = heapq.merge(_python_frames(output), _path_colon_lines(output))
    for _, path, line in itertools.islice(candidates, _MAX_CANDIDATES):
        if folder != rootdir and not Path(path).is_absolute():
            path = str(folder / path)
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
