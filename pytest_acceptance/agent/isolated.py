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
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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
_kept = threading.local()  # a thread's helper, kept for its next call


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
    keep: bool = False,
) -> Finished:
    """``run_contained`` in a helper process of its own: safe beside other agent calls of
    this process. ``run_cgroup`` is the run's cgroup, where the helper makes its own.
    ``keep``: this thread keeps its helper for its next call (``close_helpers`` ends it),
    which saves starting a Python process per call."""
    request = {
        "argv": argv,
        "stdin": (stdin or b"").decode("utf-8", errors="surrogateescape"),
        "cwd": str(cwd),
        "timeout": timeout,
        "env": dict(env or {}),
    }
    helper = getattr(_kept, "helper", None) if keep else None
    if helper is None or helper.process.poll() is not None:
        helper = _Helper(run_cgroup)
    answer, failure = None, ""
    try:
        answer = helper.ask(request, timeout + HELPER_MARGIN_SECONDS)
        failure = helper.failure() if answer is None else ""
    finally:
        reusable = keep and answer is not None and not answer.get("overran")
        if not reusable:
            helper.close()  # done, overran, failed or interrupted: it kills its agent
        _kept.helper = helper if reusable else None
    if answer is None:
        raise StartError(f"its helper process failed: {failure}")
    if answer.get("start_error") is not None:
        raise StartError(str(answer["start_error"]))
    if answer.get("overran"):
        return Finished("", "the agent's helper process overran its deadline", None)
    code = answer["code"]
    return Finished(
        str(answer["stdout"]), str(answer["stderr"]), code if isinstance(code, int) else None
    )


class _Helper:
    """One helper process: a JSON request line in, a JSON answer line out, until EOF."""

    def __init__(self, run_cgroup: Path | None) -> None:
        self.errors = capture_file("helper-stderr")
        command = [sys.executable, "-m", "pytest_acceptance.agent.isolated"]
        self.process = subprocess.Popen(
            [*command, str(run_cgroup or "")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            start_new_session=True,
        )
        with _helpers_lock:
            _helpers.add(self.process)

    def ask(self, request: dict[str, object], seconds: float) -> dict[str, object] | None:
        """The answer, ``{"overran": True}`` past ``seconds``, or None when it failed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request).encode(errors="surrogateescape"))
            self.process.stdin.write(b"\n")
            self.process.stdin.flush()
        except OSError:
            return None
        deadline = time.monotonic() + seconds
        line = _read_line(self.process.stdout.fileno(), deadline)
        if line is None and time.monotonic() < deadline:  # its output ended: it exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(KILL_GRACE_SECONDS * 2 + 5)
            return None
        if line is None:
            return {"overran": True}
        try:
            answer = json.loads(line)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    def failure(self) -> str:
        return f"exit {self.process.poll()}: {_read_all(self.errors)[-500:]}"

    def close(self) -> None:
        """End of input: it exits; one that does not (busy, stuck) is stopped."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            _stop(self.process)
        with _helpers_lock:
            _helpers.discard(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.errors.close()


def _read_line(fd: int, deadline: float) -> bytes | None:
    """One line from a pipe by ``deadline``; None at its end or past the deadline."""
    chunks: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(min(math.ceil(left * 1000), 2**31 - 1)):
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


def close_helpers() -> None:
    """End every helper kept for later calls (each exits at the end of its input)."""
    with _helpers_lock:
        running = list(_helpers)
    for process in running:
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()


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
    run = Path(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else None
    label = f"agent-{os.getpid()}"
    use(run, label)
    try:
        for line in sys.stdin.buffer:  # one request a line, until the caller closes
            sys.stdout.write(json.dumps(_serve(json.loads(line))) + "\n")
            sys.stdout.flush()
    finally:
        stop_using()
        if run is not None:
            with contextlib.suppress(OSError):
                (run / label).rmdir()
    return 0


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    stdin = request["stdin"].encode("utf-8", errors="surrogateescape")
    try:
        finished = run_contained(
            request["argv"], stdin, Path(request["cwd"]), request["timeout"], request["env"]
        )
    except StartError as error:
        return {"start_error": str(error)}
    return {"stdout": finished.stdout, "stderr": finished.stderr, "code": finished.code}


if __name__ == "__main__":
    sys.exit(main())
