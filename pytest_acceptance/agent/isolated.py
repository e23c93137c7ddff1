"""Running one agent process contained, in this process or in a helper process of its own.

Containment (``run/containment.py``) kills, when a command ends, what the command left,
judged by what started in this process after it: right for one command at a time, wrong
for two at once (the end of one would kill the other). Agent calls that run beside others
in one process (the checks of a wave, the votes of a criterion) each go through a small
helper, ``python -m pytest_acceptance.agent.isolated``: it takes a place of its own in the
run's containment (a cgroup of its own, or tracking as its own subreaper), runs the agent
contained there, and reports what it printed. The helper dies with the process that
started it, killing its agent first; a helper that outlives its deadline is killed too.

This module imports only the standard library and ``run/containment.py``, so a helper
starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_acceptance.run.containment import (
    capture_file,
    contained,
    fill,
    read_range,
    stop_using,
    use,
    wait_for_exit,
)

KILL_GRACE_SECONDS = 5.0
# Bytes of an agent's stdout read: a verdict is small. This only caps memory for an answer.
AGENT_OUTPUT_LIMIT = 16 * 1024 * 1024
# What a helper may take beyond its agent's timeout: its own start, the agent's kill grace.
HELPER_MARGIN_SECONDS = 2 * KILL_GRACE_SECONDS + 10.0
_PR_SET_PDEATHSIG = 1
_helpers: set[subprocess.Popen[bytes]] = set()  # running, so that a stopped run can end them
_helpers_lock = threading.Lock()


class StartError(Exception):
    """The agent process could not be started; ``str()`` says why."""


@dataclass(frozen=True)
class Finished:
    """How one agent process ended: its output, and its exit code (None: timed out)."""

    stdout: str
    stderr: str
    code: int | None


def run_contained(
    argv: list[str],
    stdin: bytes | None,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run to completion within ``timeout`` in this process's containment, its output in
    files (not pipes, so a detached child cannot hold the run open). StartError when it
    cannot start."""
    environment = {**os.environ, **env} if env else None
    with (
        capture_file("agent-stdin") as given,
        capture_file("agent-stdout") as out,
        capture_file("agent-stderr") as err,
    ):
        fill(given, stdin or b"")
        with contained(KILL_GRACE_SECONDS) as scope:  # ends killing what is left
            try:
                process = scope.popen(
                    argv, cwd=cwd, stdin=given, stdout=out, stderr=err, env=environment
                )
            except OSError as error:
                raise StartError(str(error)) from None
            code = wait_for_exit(process, timeout)
        return Finished(_read_all(out), _read_all(err), code)


def run_in_helper(
    argv: list[str],
    stdin: bytes | None,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    run_cgroup: Path | None = None,
) -> Finished:
    """``run_contained`` in a helper process of its own: safe beside other agent calls of
    this process. ``run_cgroup`` is the run's cgroup, where the helper makes its own."""
    request = {
        "argv": argv,
        "stdin": (stdin or b"").decode("utf-8", errors="surrogateescape"),
        "cwd": str(cwd),
        "timeout": timeout,
        "env": dict(env or {}),
        "run_cgroup": str(run_cgroup) if run_cgroup else None,
    }
    with (
        capture_file("helper-stdin") as given,
        capture_file("helper-stdout") as out,
        capture_file("helper-stderr") as err,
    ):
        fill(given, json.dumps(request).encode("utf-8", errors="surrogateescape"))
        helper = subprocess.Popen(
            [sys.executable, "-m", "pytest_acceptance.agent.isolated"],
            stdin=given,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        with _helpers_lock:
            _helpers.add(helper)
        try:
            code = wait_for_exit(helper, timeout + HELPER_MARGIN_SECONDS)
        finally:
            _stop(helper)  # nothing when it ended; on an interruption it kills its agent
            with _helpers_lock:
                _helpers.discard(helper)
        if code is None:
            return Finished("", "the agent's helper process overran its deadline", None)
        return _answer(_read_all(out), _read_all(err), code)


def stop_helpers() -> None:
    """Ask every running helper to stop: each kills its agent's processes and exits."""
    with _helpers_lock:
        running = list(_helpers)
    for helper in running:
        with contextlib.suppress(OSError):
            helper.terminate()


def _stop(helper: subprocess.Popen[bytes]) -> None:
    if helper.poll() is not None:
        return
    helper.terminate()  # the helper kills its agent's processes, then exits
    try:
        helper.wait(KILL_GRACE_SECONDS * 2 + 5)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def _answer(stdout: str, stderr: str, code: int) -> Finished:
    try:
        data = json.loads(stdout)
        if data.get("start_error") is not None:
            raise StartError(str(data["start_error"]))
        return Finished(str(data["stdout"]), str(data["stderr"]), data["code"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise StartError(f"its helper process failed (exit {code}): {stderr[-500:]}") from None


def _read_all(stream: IO[bytes]) -> str:
    end = min(os.fstat(stream.fileno()).st_size, AGENT_OUTPUT_LIMIT)
    return read_range(stream, 0, end).decode(errors="replace")


# --- the helper process -------------------------------------------------------------------


def _die_with_parent() -> None:
    """SIGTERM when the process that started us dies (Linux), so our agent dies too."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _raise_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through `contained`, which kills the agent


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _raise_on_signal)
    _die_with_parent()
    request = json.loads(sys.stdin.read())
    run = Path(request["run_cgroup"]) if request["run_cgroup"] else None
    label = f"agent-{os.getpid()}"
    use(run, label)
    try:
        stdin = request["stdin"].encode("utf-8", errors="surrogateescape")
        finished = run_contained(
            request["argv"], stdin, Path(request["cwd"]), request["timeout"], request["env"]
        )
        answer: dict[str, object] = {
            "stdout": finished.stdout,
            "stderr": finished.stderr,
            "code": finished.code,
        }
    except StartError as error:
        answer = {"start_error": str(error)}
    finally:
        stop_using()
        if run is not None:
            with contextlib.suppress(OSError):
                (run / label).rmdir()
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
