"""The processes a session left running outside the CLI's process tree, found by the
session id the CLI puts in every tool call's environment (claude/background.py), with real
processes: a detached daemon is found, one still attached to the caller is not, nor one of
another session.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_acceptance.claude import background

# Detaches (a fork, setsid, a second fork), writes its pid to argv[1], then sleeps.
DAEMON = (
    "import os, sys, time\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): os._exit(0)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(120)\n"
)


@contextlib.contextmanager
def started(tmp_path: Path, session: str, detached: bool) -> Iterator[int]:
    """A sleeping Python whose environment names `session`: detached from this process, or
    its child; yields its pid and kills it after."""
    pidfile = tmp_path / f"{uuid.uuid4().hex}.pid"
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": session}
    if detached:
        subprocess.run([sys.executable, "-c", DAEMON, str(pidfile)], env=env, check=True)
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)  # the daemon writes it first thing; the loop ends when it has
        pid = int(pidfile.read_text())
        try:
            yield pid
        finally:
            os.kill(pid, 9)
    else:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)
        try:
            yield child.pid
        finally:
            child.kill()
            child.wait()


@pytest.fixture
def session() -> str:
    return str(uuid.uuid4())


def test_a_detached_process_of_the_session_is_named(tmp_path: Path, session: str) -> None:
    with started(tmp_path, session, detached=True) as pid:
        found = background.escaped(session)
        assert [f for f in found if f.startswith(f"process {pid},")], found
        assert "python" in " ".join(found)


def test_a_process_still_attached_to_the_caller_is_not(tmp_path: Path, session: str) -> None:
    with started(tmp_path, session, detached=False):
        assert background.escaped(session) == []


def test_a_detached_process_of_another_session_is_not(tmp_path: Path, session: str) -> None:
    with started(tmp_path, session, detached=True):
        assert background.escaped(str(uuid.uuid4())) == []
        assert background.escaped("") == []


def test_the_reason_names_what_is_left_and_how_to_end_it() -> None:
    reason = background.reason(["process 7, command 'sleep 60'"])
    assert "process 7, command 'sleep 60'" in reason and "kill the process" in reason
