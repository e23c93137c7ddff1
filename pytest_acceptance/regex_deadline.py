"""``re.search`` with a deadline: ``output matches ^(a+)+$`` must not outlive its criterion.

Python's ``re`` backtracks, and some patterns take exponential time on a few dozen
characters; no static test tells those apart reliably. A thread cannot be stopped (``re``
holds the GIL), and an alarm signal belongs to whoever else uses it (pytest-timeout). So
the search runs in a forked child, which sees the compiled pattern and the output without
a copy (copy-on-write), answers through its exit status, and is killed at the deadline.
A fork costs about a millisecond, small next to the command that produced the output.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import time
import warnings

_MATCHED, _NOT_MATCHED = 0, 1


class RegexTimeout(Exception):
    """The search did not finish within its time."""


def search_within(pattern: re.Pattern[str], text: str, seconds: float) -> bool:
    """Whether ``pattern`` is found in ``text``; RegexTimeout after ``seconds``."""
    if not hasattr(os, "fork"):  # no fork (Windows): the search runs unbounded
        return pattern.search(text) is not None
    with warnings.catch_warnings():
        # Python >= 3.12 warns that forking a threaded process may deadlock the child;
        # this child only runs the C matcher and leaves with os._exit, taking no lock.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 2
        try:
            code = _MATCHED if pattern.search(text) else _NOT_MATCHED
        finally:
            os._exit(code)
    status = _wait(pid, seconds)
    if status is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise RegexTimeout(f"did not finish within {seconds:g} s")
    code = os.waitstatus_to_exitcode(status)
    if code not in (_MATCHED, _NOT_MATCHED):
        raise RegexTimeout(f"the search process ended with status {code}")
    return code == _MATCHED


def _wait(pid: int, seconds: float) -> int | None:
    """The child's wait status, or None when it is still running at the deadline."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return _poll_wait(pid, seconds)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(min(int(seconds * 1000) + 1, 2**31 - 1)):
            return None
    finally:
        os.close(pidfd)
    return os.waitpid(pid, 0)[1]


def _poll_wait(pid: int, seconds: float) -> int | None:
    deadline = time.monotonic() + seconds
    delay = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
