"""Containment: every process a criterion or a judge starts dies when its command ends.

Two ways, the best one available is used:

- **cgroup** (Linux cgroup v2 with a writable hierarchy, e.g. as root): every command runs
  in a cgroup of its own, below one cgroup per run::

      <our cgroup>/pytest-acceptance-<controller pid>/<worker>/<n>

  No process can leave a cgroup on its own (``setsid``, double forks, ``set -m`` jobs all
  stay), so killing it (``cgroup.kill``) ends all of it. The controller kills a crashed
  worker's subtree and the whole run's at the end; the subtree of a run that died
  (SIGKILL) is removed by the next run.
- **tracking** (elsewhere on Linux): the process running commands is a child subreaper
  (orphans of its commands reparent to it, not to init), and a command's processes are
  its process group and session, every process whose parent chain leads to it, and the
  orphans reparented to us since it started. Out of reach: what another service starts on
  the command's behalf (``systemd-run``, ``at``, a daemon's RPC), and, when the worker
  itself dies, the orphans of its commands (they go to init).
- **group** (no /proc): the command's process group and session only; a ``setsid`` +
  double fork escapes.

``PYTEST_ACCEPTANCE_CONTAINMENT=tracking`` (or ``group``) forces a weaker way, for
machines where writing cgroups is not wanted, and for the tests that prove each way.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MODE_VARIABLE = "PYTEST_ACCEPTANCE_CONTAINMENT"
RUN_PREFIX = "pytest-acceptance-"
_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.02


# --- where this process puts its commands ---------------------------------------------------


@dataclass
class _Place:
    mode: str  # "cgroup", "tracking" or "group"
    parent: Path | None = None  # cgroup under which each command gets its own
    home: Path | None = None  # our own cgroup, to return to after starting a command
    counter: int = 0


_place: _Place | None = None


def wanted_mode() -> str:
    value = os.environ.get(MODE_VARIABLE, "").strip().lower()
    return value if value in ("tracking", "group") else "cgroup"


def own_cgroup() -> Path | None:
    """This process's cgroup v2 directory, when the hierarchy is mounted and writable."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as lines:
            relative = next((line[3:].strip() for line in lines if line.startswith("0::")), None)
        mount = _cgroup2_mount()
    except OSError:
        return None
    if relative is None or mount is None:
        return None
    directory = mount / relative.lstrip("/")
    if not (directory / "cgroup.procs").is_file() or not os.access(directory, os.W_OK):
        return None
    return directory


def _cgroup2_mount() -> Path | None:
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            before, _, after = line.partition(" - ")
            if after.split(" ", 1)[0] == "cgroup2":
                return Path(before.split()[4])
    return None


def start_run() -> Path | None:
    """Controller: create the run's cgroup (None when cgroups cannot be used), after
    killing and removing what runs that died left behind."""
    home = own_cgroup() if wanted_mode() == "cgroup" else None
    if home is None:
        return None
    _sweep_dead_runs(home)
    run = home / f"{RUN_PREFIX}{os.getpid()}"
    try:
        run.mkdir(exist_ok=True)
    except OSError:
        return None
    return run


def _sweep_dead_runs(home: Path) -> None:
    for entry in _listdir(home):
        if not entry.name.startswith(RUN_PREFIX):
            continue
        owner = entry.name[len(RUN_PREFIX) :]
        if owner.isdigit() and not _alive(int(owner)):
            remove_cgroup(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def use(parent: Path | None, label: str = "main") -> str:
    """Make this process put its commands under ``parent``/``label`` (a cgroup made by
    ``start_run``), or track them when that is unavailable. Returns the mode in use."""
    global _place
    home = own_cgroup() if parent is not None else None
    if parent is not None and home is not None:
        directory = parent / label
        try:
            directory.mkdir(exist_ok=True)
        except OSError:
            pass
        else:
            _place = _Place("cgroup", directory, home)
            return "cgroup"
    mode = "group" if wanted_mode() == "group" or not os.path.isdir("/proc") else "tracking"
    if mode == "tracking":
        become_subreaper()
    _place = _Place(mode)
    return mode


def stop_using() -> None:
    global _place
    _place = None


def become_subreaper() -> bool:
    """Make orphans of our descendants reparent to us instead of init (Linux >= 3.4)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _current() -> _Place:
    return _place if _place is not None else _Place(_default_mode())


def _default_mode() -> str:
    return "group" if wanted_mode() == "group" or not os.path.isdir("/proc") else "tracking"


# --- one command's processes ---------------------------------------------------------------


class Contained:
    """The processes of one command: started with ``popen``, all killed by ``kill``."""

    def __init__(self) -> None:
        place = _current()
        self.mode = place.mode
        self.cgroup: Path | None = None
        self.home = place.home
        if place.mode == "cgroup" and place.parent is not None:
            place.counter += 1
            self.cgroup = place.parent / str(place.counter)
            try:
                self.cgroup.mkdir()
            except FileExistsError:
                pass
            except OSError:
                self.cgroup, self.mode = None, _default_mode()
        self.leader = 0
        self.leader_start = 0

    def popen(self, argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen`` in a session of its own, inside this command's cgroup.

        We step into the cgroup for the fork and back out at once: a child inherits the
        cgroup at fork, so even a grandchild forked in bash's first microsecond is in it."""
        options["start_new_session"] = True
        if self.cgroup is None or not _move(os.getpid(), self.cgroup):
            self.cgroup = None
            if self.mode == "cgroup":
                self.mode = _default_mode()
            process = subprocess.Popen(argv, **options)
        else:
            try:
                process = subprocess.Popen(argv, **options)
            finally:
                if self.home is None or not _move(os.getpid(), self.home):
                    _move(os.getpid(), self.cgroup.parent)  # never stay in a kill target
        self.leader = process.pid
        self.leader_start = _start_time(process.pid) or 0
        return process

    def members(self) -> list[int]:
        """The live processes of this command (zombies excluded)."""
        if self.cgroup is not None:
            return _cgroup_pids(self.cgroup)
        if self.mode == "group" or not self.leader:
            return _group_members(self.leader)
        return self._tracked()

    def _tracked(self) -> list[int]:
        table = process_table()
        me = os.getpid()
        found = {self.leader}
        changed = True
        while changed:  # the closure over parent links
            changed = False
            for pid, (_, ppid, pgrp, session, start) in table.items():
                if pid in found:
                    continue
                if (
                    ppid in found
                    or pgrp == self.leader
                    or session == self.leader
                    or (ppid == me and start >= self.leader_start)
                ):
                    found.add(pid)
                    changed = True
        return [pid for pid in found if pid in table and table[pid][0] != "Z"]

    def kill(self, grace: float) -> None:
        """SIGTERM what is left, give it ``grace`` seconds, then SIGKILL; reap orphans."""
        members = [pid for pid in self.members() if pid != os.getpid()]
        if members:
            _signal_all(members, signal.SIGTERM)
            _signal_all(members, signal.SIGCONT)  # a stopped process acts on SIGTERM only then
            if not self._wait_empty(grace):
                self._kill_now()
                self._wait_empty(grace)
        self._reap_orphans()

    def _kill_now(self) -> None:
        if self.cgroup is not None and _write(self.cgroup / "cgroup.kill", "1"):
            return
        for _ in range(3):  # fork bombs: members may fork while we kill
            _signal_all(self.members(), signal.SIGKILL)

    def _wait_empty(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            self._reap_orphans()
            if not [pid for pid in self.members() if pid != os.getpid()]:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(_POLL)

    def _reap_orphans(self) -> None:
        """As a subreaper, dead orphans of the command are our zombies: reap them (only
        those started after the command, never another Popen's child)."""
        if self.mode != "tracking":
            return
        me = os.getpid()
        for pid, (state, ppid, _, _, start) in process_table().items():
            if state == "Z" and ppid == me and pid != self.leader and start >= self.leader_start:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    def close(self) -> None:
        """Remove the command's cgroup (after ``kill``)."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()


@contextlib.contextmanager
def contained() -> Iterator[Contained]:
    scope = Contained()
    try:
        yield scope
    finally:
        scope.close()


# --- waiting and capturing ----------------------------------------------------------------


def capture_file(name: str) -> IO[bytes]:
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


# --- cgroups --------------------------------------------------------------------------------


def _move(pid: int, cgroup: Path) -> bool:
    return _write(cgroup / "cgroup.procs", str(pid))


def _write(path: Path, text: str) -> bool:
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(handle, text.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        with open(cgroup / "cgroup.procs", encoding="ascii") as procs:
            return [int(line) for line in procs if line.strip()]
    except (OSError, ValueError):
        return []


def kill_cgroup(cgroup: Path) -> None:
    """SIGKILL every process in ``cgroup`` and below (``cgroup.kill``, Linux >= 5.14;
    before that, each process, a few rounds)."""
    if _write(cgroup / "cgroup.kill", "1"):
        return
    for _ in range(3):
        for directory in _walk(cgroup):
            _signal_all(_cgroup_pids(directory), signal.SIGKILL)


def remove_cgroup(cgroup: Path, wait: float = 2.0) -> None:
    """Kill everything in ``cgroup`` and remove it with its children."""
    kill_cgroup(cgroup)
    deadline = time.monotonic() + wait
    for directory in reversed(list(_walk(cgroup))):  # children before parents
        while True:
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # still busy while the killed processes exit
                if time.monotonic() > deadline:
                    break
                time.sleep(_POLL)


def _walk(cgroup: Path) -> Iterator[Path]:
    yield cgroup
    for entry in _listdir(cgroup):
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)


def _listdir(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            return [Path(entry.path) for entry in entries]
    except OSError:
        return []


# --- /proc -----------------------------------------------------------------------------------

_Stat = tuple[str, int, int, int, int]  # state, ppid, process group, session, start time


def process_table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    try:
        with os.scandir("/proc") as entries:
            pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    except OSError:
        return table
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:
            table[pid] = stat
    return table


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        # after the name: state(0) ppid(1) pgrp(2) session(3) ... starttime(19)
        return (fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (OSError, IndexError, ValueError):
        return None


def _start_time(pid: int) -> int | None:
    stat = _stat(pid)
    return stat[4] if stat else None


def _group_members(leader: int) -> list[int]:
    """The live members of the leader's process group or session. Without /proc: the
    leader itself while the group exists."""
    if not leader:
        return []
    if not os.path.isdir("/proc"):
        try:
            os.killpg(leader, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [leader]
    return [
        pid
        for pid, (state, _, pgrp, session, _) in process_table().items()
        if (pgrp == leader or session == leader) and state != "Z"
    ]


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
