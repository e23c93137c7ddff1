"""The processes a session left running outside the CLI's process tree, found by the
session id the CLI puts in every tool call's environment (gate/background.py), with real
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_acceptance.gate import background

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


# --- what cannot be bounded counts against the stop -------------------------------------------

MARKER = b"CLAUDE_CODE_SESSION_ID=s-1"


@given(
    before=st.lists(st.binary(max_size=70_000).map(lambda b: b.replace(b"\0", b"")), max_size=4),
    after=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\0", b"")), max_size=4),
    present=st.booleans(),
    trailing=st.booleans(),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_environment_is_read_whole_entry_by_entry(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[bytes],
    after: list[bytes],
    present: bool,
    trailing: bool,
) -> None:
    """The session's entry is found wherever it is, across chunk boundaries (entries of up
    to 70 kB before it), and only as a whole entry (never as the end of a longer one)."""
    entries = [*before, *([MARKER] if present else [b"X" + MARKER]), *after]
    path = tmp_path_factory.mktemp("environ") / "environ"
    path.write_bytes(b"\0".join(entries) + (b"\0" if trailing else b""))
    expected = background.OURS if MARKER in entries else background.NOT_OURS
    assert background._environment(str(path), MARKER) == expected


def test_an_environment_past_the_bound_counts_as_the_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "_ENVIRON_LIMIT", 1 << 16)
    path = tmp_path / "environ"
    path.write_bytes(b"A=" + b"x" * (1 << 17) + b"\0")
    assert background._environment(str(path), MARKER) == background.TOO_LARGE


def test_a_daemon_whose_environment_is_larger_than_a_megabyte_is_named(
    tmp_path: Path, session: str
) -> None:
    """1.5 MB of variables before the session's id (each under the kernel's 128 kB a string):
    the whole environment is read, and the id found."""
    padding = {f"PAD_{index:02d}": "p" * 100_000 for index in range(15)}
    pidfile = tmp_path / "daemon.pid"
    env = {**padding, **os.environ, "CLAUDE_CODE_SESSION_ID": session}
    subprocess.run([sys.executable, "-c", DAEMON, str(pidfile)], env=env, check=True)
    while not pidfile.exists() or not pidfile.read_text():
        time.sleep(0.01)
    pid = int(pidfile.read_text())
    try:
        found = background.escaped(session)
        assert [f for f in found if f.startswith(f"process {pid},")], found
    finally:
        os.kill(pid, 9)


def fake_process(
    proc: Path,
    pid: int,
    uid: int,
    environ: bytes | None,
    state: str = "S (sleeping)",
    thread_of: int | None = None,
) -> None:
    """A /proc/<pid> of stat, status and environ (None: an environ that cannot be read)."""
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    fields = ["S", "1"] + ["0"] * 17 + ["500"]  # state, parent 1, ..., start time (field 22)
    (folder / "stat").write_text(f"{pid} (sleep) {' '.join(fields)}\n")
    uids = "\t".join([str(uid)] * 4)
    group = thread_of or pid
    (folder / "status").write_text(f"Name:\tsleep\nState:\t{state}\nTgid:\t{group}\nUid:\t{uids}\n")
    (folder / "cmdline").write_bytes(b"sleep\x0060\x00")
    if environ is None:
        (folder / "environ").mkdir()  # open works, read fails: unreadable
    else:
        (folder / "environ").write_bytes(environ)


def test_an_unreadable_environment_counts_only_for_a_process_of_your_user(
    tmp_path: Path,
) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 900, os.getuid(), None)
    fake_process(proc, 901, os.getuid() + 1, None)
    fake_process(proc, 902, os.getuid(), b"A=1\0B=2\0")
    found = background.escaped("s-1", str(proc))
    assert len(found) == 1 and found[0].startswith("process 900,"), found
    assert background.UNREADABLE in found[0]


def test_scans_that_never_agree_count_against_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that hops from pid to pid is seen at a new pid in every scan."""
    pids = iter(range(1000, 1100))
    monkeypatch.setattr(
        background,
        "_scan",
        lambda marker, proc: background.Scan(((next(pids), background.OURS),), False),
    )
    monkeypatch.setattr(background, "_SCAN_PAUSE", 0.0)
    (found,) = background.escaped("s-1")
    assert "kept appearing and vanishing" in found


def test_a_block_names_the_isolation_it_had() -> None:
    assert "Isolation of the gate's run:" in background.reason(["process 7"])


# Leaves the caller (a fork, setsid), then hops from pid to pid until argv[1] exists: each
# hop forks argv[3] times in a row (a child, its child...), the forking ones ending, then
# sleeps argv[2] seconds. Gives up after a minute.
HOPPER = (
    "import os, sys, time\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "pause, depth, end = float(sys.argv[2]), int(sys.argv[3]), time.time() + 60\n"
    "while time.time() < end and not os.path.exists(sys.argv[1]):\n"
    "    for _ in range(depth):\n"
    "        if os.fork(): os._exit(0)\n"
    "    time.sleep(pause)\n"
)


@contextlib.contextmanager
def hopping(tmp_path: Path, session: str, pause: float, depth: int = 1) -> Iterator[None]:
    stop = tmp_path / f"stop-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": session}
    argv = [sys.executable, "-c", HOPPER, str(stop), str(pause), str(depth)]
    subprocess.run(argv, env=env, check=True)
    try:
        time.sleep(0.2)
        yield
    finally:
        stop.touch()


@pytest.mark.parametrize("pause", [0.02, 0.001])
def test_a_process_hopping_from_pid_to_pid_is_not_missed(
    tmp_path: Path, session: str, pause: float
) -> None:
    """Attack: no pid of it lives longer than the pause. A listing of /proc is no
    snapshot: the pid listed had ended (or was a zombie, whose environment reads empty)
    when it was read, its child born after the listing or behind it once pids wrapped.
    At a millisecond's pause most scans missed it. Now a scan reads the pids born since
    until a round sees no process born, so every scan of five finds it."""
    with hopping(tmp_path, session, pause):
        for _ in range(5):
            assert background.escaped(session), "the hopping process was missed"


def test_a_process_hopping_through_a_chain_of_forks_is_not_missed(
    tmp_path: Path, session: str
) -> None:
    """Second variant, written after the fix: each hop is three forks in a row, the
    forking ones ending, so two of every three pids are gone before a scan can reach
    them. Found with no new code."""
    with hopping(tmp_path, session, 0.001, depth=3):
        for _ in range(5):
            assert background.escaped(session), "the hopping process was missed"


def test_a_busy_machine_is_no_reason_to_block(tmp_path: Path, session: str) -> None:
    """Honest control: processes of no session are born and end all the while (a shell
    starting a short program in a loop, as a test suite does); a session that left
    nothing running is let through, every time."""
    churn = subprocess.Popen(
        ["sh", "-c", "end=$(( $(date +%s) + 20 )); while [ $(date +%s) -lt $end ]; do :; done"],
        env={k: v for k, v in os.environ.items() if k != "CLAUDE_CODE_SESSION_ID"},
    )
    try:
        time.sleep(0.2)
        assert all(background.escaped(session) == [] for _ in range(10))
    finally:
        churn.kill()
        churn.wait()


def test_a_zombie_is_not_read_as_a_process_of_no_session(tmp_path: Path) -> None:
    """A process that ended and was not yet reaped still has its pid, and its environment
    reads empty: it is counted as ended (what it handed on to is looked for), never as a
    process of another session, and it does not count against the stop."""
    proc = tmp_path / "proc"
    fake_process(proc, 900, os.getuid(), b"", state="Z (zombie)")
    fake_process(proc, 901, os.getuid(), b"A=1\0")
    seen = background._read(900, b"CLAUDE_CODE_SESSION_ID=s-1", str(proc))
    assert seen is not None and seen.environment == background.ENDED_UNREAD
    assert background.escaped("s-1", str(proc)) == []


def test_a_thread_tried_by_its_number_is_not_a_process_of_its_own(tmp_path: Path) -> None:
    """The pids born during a scan are tried by number, and a thread's id is one of them:
    a new thread of a process outside the session's tree (the CLI's own) is read as the
    thread it is, never counted as a process the session left running; its process, read
    by its own pid, decides."""
    proc = tmp_path / "proc"
    fake_process(proc, 900, os.getuid(), b"A=1\0")
    fake_process(proc, 901, os.getuid(), b"CLAUDE_CODE_SESSION_ID=s-1\0", thread_of=900)
    seen = background._read(901, b"CLAUDE_CODE_SESSION_ID=s-1", str(proc))
    assert seen is not None and seen.environment == background.THREAD
    assert background.escaped("s-1", str(proc)) == []
