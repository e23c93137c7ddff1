"""``re.search`` with a deadline: ``output matches ^(a+)+$`` must not outlive its criterion.

Python's ``re`` backtracks, and some patterns take exponential time on a few dozen
characters; no static test tells those apart reliably. A thread cannot be stopped (``re``
holds the GIL), but ``re`` does check for signals while it matches. So:

- in the main thread, when nobody else uses SIGALRM (pytest-timeout would), an interval
  timer interrupts the search in process: no copy, microseconds of overhead;
- otherwise the search runs in a forked child, which sees the compiled pattern and the
  output without a copy (copy-on-write), answers through its exit status, and is killed
  at the deadline. A fork costs a few milliseconds, more with a large resident set.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import threading
import time
import warnings
from types import FrameType

_MATCHED, _NOT_MATCHED = 0, 1


class RegexTimeout(Exception):
    """The search did not finish within its time."""


def search_within(pattern: re.Pattern[str], text: str, seconds: float) -> bool:
    """Whether ``pattern`` is found in ``text``; RegexTimeout after ``seconds``."""
    if _alarm_is_free():
        return _search_under_alarm(pattern, text, seconds)
    if not hasattr(os, "fork"):  # no fork (Windows): the search runs unbounded
        return pattern.search(text) is not None
    return _search_in_child(pattern, text, seconds)


class _Expired(Exception):
    pass


def _alarm_is_free() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )


def _search_under_alarm(pattern: re.Pattern[str], text: str, seconds: float) -> bool:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Expired

    signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return pattern.search(text) is not None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise RegexTimeout(f"did not finish within {seconds:g} s") from None
    finally:
        # A signal still pending now finds the default action, which Python skips.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def _search_in_child(pattern: re.Pattern[str], text: str, seconds: float) -> bool:
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
