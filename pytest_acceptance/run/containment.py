"""Containment: every process a criterion or a judge starts dies when its command ends.

Two ways, the best one available is used:

- **cgroup** (Linux cgroup v2 with a writable hierarchy, e.g. as root): each process that
  runs commands moves itself, once, into a cgroup of its own below the run's::

      <our cgroup>/pytest-acceptance-<controller pid>/<worker id, or "main">

  and its commands are born there. No process can leave a cgroup on its own (``setsid``,
  double forks, ``set -m`` jobs all stay), and a worker runs one item at a time, so when a
  command ends, every process in the cgroup that started after it is the command's:
  stopped (SIGSTOP, so none can fork any more), then killed. (What a Python test or
  fixture of the same session started earlier is left alone.) (A cgroup per command would
  be simpler to kill, but moving a process between cgroups waits for an RCU grace period:
  ~1 ms a command.) The controller kills a worker's cgroup when the worker goes down (even
  a worker killed by its own criterion), and the whole run's at the end; the cgroup of a
  run that died (SIGKILL) is removed by the next run.
- **tracking** (elsewhere on Linux): the process running commands is a child subreaper
  (orphans of its commands reparent to it, not to init), and a command's processes are
  its process group and session, every process whose parent chain leads to it, and the
  orphans reparented to us since it started. When a worker dies, its commands' orphans
  reach the controller (a subreaper too), which kills its children that are not workers.
  Out of reach: what another service starts on the command's behalf (``systemd-run``,
  ``at``, a daemon's RPC).
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
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MODE_VARIABLE = "PYTEST_ACCEPTANCE_CONTAINMENT"
RUN_PREFIX = "pytest-acceptance-"
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_POLL = 0.02
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --- where this process puts its commands ---------------------------------------------------


@dataclass
class _Place:
    mode: str  # "cgroup", "tracking" or "group"
    cgroup: Path | None = None  # ours, where our commands are born
    home: Path | None = None  # where we were before, to return to at the end
    residents: frozenset[int] = frozenset()  # in our cgroup before any command: not theirs
    reaper: bool = False  # tracking: orphans of our commands reparent to us
    # We made this process a subreaper for the run: it stops being one when the run ends.
    # Left one, every process orphaned later in it (a wrapper's child whose parent exited
    # first: bubblewrap's, at each gate run) becomes its zombie, never reaped by anyone.
    reaper_made_here: bool = False
    implicit: bool = False  # no caller chose it: it lasts while a command of ours runs
    commands: int = 0  # commands running under an implicit place
    # cgroup: our cgroup's directory and its cgroup.procs, kept open for the whole run:
    # after each command one fstat and one pread tell what is left (opening the files by
    # path for every command cost more than the rest of the check).
    directory_fd: int | None = None
    procs_fd: int | None = None

    def keep_open(self) -> None:
        """Open our cgroup's directory and cgroup.procs for the run (where that fails,
        each check goes by path)."""
        assert self.cgroup is not None
        with contextlib.suppress(OSError):
            self.directory_fd = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
            self.procs_fd = os.open(self.cgroup / "cgroup.procs", os.O_RDONLY | _CLOEXEC)

    def cgroup_pids(self) -> list[int]:
        """Every process in our cgroup and in the cgroups a command made below it."""
        assert self.cgroup is not None
        # A directory's link count is 2 + its subdirectories: 2 means no cgroup below
        # ours (the usual case), where our own cgroup.procs is the whole answer.
        with contextlib.suppress(OSError):
            if self.procs_fd is not None and self._subdirectories() == 0:
                return _parse_pids(_read_at_start(self.procs_fd))
        return [pid for directory in _walk(self.cgroup) for pid in _cgroup_pids(directory)]

    def _subdirectories(self) -> int | None:
        if self.directory_fd is None:
            return None
        return os.fstat(self.directory_fd).st_nlink - 2

    def close(self) -> None:
        for fd in (self.directory_fd, self.procs_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.directory_fd = self.procs_fd = None


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
    run = home / f"{RUN_PREFIX}{os.getpid()}{_NAMESPACE_MARK}{_pid_namespace()}"
    try:
        run.mkdir(exist_ok=True)
    except OSError:
        return None
    return run


def _sweep_dead_runs(home: Path) -> None:
    """Remove the cgroups of runs that died. A run is named by its controller's pid and pid
    namespace (the gate starts runs in namespaces of their own, where pids repeat): one of
    this namespace is dead when its pid is, and what is left in it is killed; one of
    another namespace is only ever removed empty (:func:`_remove_if_abandoned`)."""
    ours = _pid_namespace()
    for entry in _listdir(home):
        if not entry.name.startswith(RUN_PREFIX):
            continue
        owner, _, namespace = entry.name[len(RUN_PREFIX) :].partition(_NAMESPACE_MARK)
        if not owner.isdigit():
            continue
        if namespace not in ("", ours):
            _remove_if_abandoned(entry)
        elif not _alive(int(owner)):
            remove_cgroup(entry)


_ABANDONED_AFTER = 60.0  # seconds: a live run's cgroup is populated within moments of its making


def _remove_if_abandoned(cgroup: Path) -> None:
    """Another namespace's run: its processes all end with the namespace, so a dead run's
    cgroup is empty. Nothing is signalled (what is inside is a live run's, and a check for
    "empty" followed by a kill would race a run moving in): the cgroups are removed
    children first, and the kernel refuses to remove one a process is in. A young one is
    left alone, as its run may not have moved in yet."""
    with contextlib.suppress(OSError):
        if time.time() - cgroup.stat().st_mtime < _ABANDONED_AFTER:
            return
        for directory in reversed(list(_walk(cgroup))):
            directory.rmdir()


_NAMESPACE_MARK = "-ns"


def _pid_namespace() -> str:
    """This process's pid namespace, by inode ("" where that cannot be read)."""
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return "".join(c for c in link if c.isdigit())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def use(run: Path | None, label: str = "main") -> str:
    """Make this process run its commands inside ``run``/``label`` (``run`` made by
    ``start_run``), or track them when that is unavailable. Returns the mode in use."""
    global _place
    _forget_place()
    home = own_cgroup() if run is not None else None
    if run is not None and home is not None:
        directory = run / label
        with contextlib.suppress(OSError):
            directory.mkdir(exist_ok=True)
            if _move(os.getpid(), directory):
                residents = frozenset(_cgroup_pids(directory))
                _place = _Place("cgroup", directory, home, residents)
                _place.keep_open()
                return "cgroup"
    mode = _default_mode()
    already = is_subreaper()
    reaper = mode == "tracking" and (already or become_subreaper())
    _place = _Place(mode, reaper=reaper, reaper_made_here=reaper and not already)
    return mode


def stop_using() -> None:
    """Back to where this process was (so removing the run's cgroup never kills it)."""
    if _place is not None and _place.home is not None:
        _move(os.getpid(), _place.home)
    _forget_place()


def _forget_place() -> None:
    global _place
    if _place is not None:
        _place.close()
        if _place.reaper_made_here:
            _set_subreaper(False)
    _place = None


def become_subreaper() -> bool:
    """Make orphans of our descendants reparent to us instead of init (Linux >= 3.4)."""
    return _set_subreaper(True)


def _set_subreaper(on: bool) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def is_subreaper() -> bool:
    """Whether orphans of our descendants reparent to us (False where that is unknown)."""
    try:
        flag = ctypes.c_int(0)
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return done == 0 and flag.value != 0


def _current() -> _Place:
    """Where this process runs its commands; a caller that never chose (the runner used as
    a library) tracks them, as a subreaper where Linux allows, while any of its commands
    runs (see :func:`contained`)."""
    if _place is None:
        use(None)
        assert _place is not None
        _place.implicit = True
    assert _place is not None
    return _place


def _default_mode() -> str:
    return "group" if wanted_mode() == "group" or not os.path.isdir("/proc") else "tracking"


# --- one command's processes ---------------------------------------------------------------


class Contained:
    """The processes of one command: started with ``popen``, all killed by ``kill``."""

    def __init__(self) -> None:
        place = _current()
        self.place = place
        self.mode = place.mode
        self.cgroup = place.cgroup
        self.residents = place.residents | {os.getpid()}
        self.leader = 0
        self.leader_start = 0
        self.process: subprocess.Popen[bytes] | None = None
        # Our children before the command: as a subreaper, every orphan of the command
        # becomes our child, so once it has exited, "no new child" means nothing is left.
        # Without the subreaper, orphans go to init and "no new child" would prove nothing.
        self.children_before = _children() if self.mode == "tracking" and place.reaper else None

    def popen(self, argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen`` in a session of its own (and in our cgroup, by birth)."""
        options["start_new_session"] = True
        # In /proc's unit (clock ticks since boot), taken before the fork: what started
        # later may be the command's; without reading /proc for each command.
        self.leader_start = int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS) - 1
        try:
            process = subprocess.Popen(argv, **options)
        except BaseException:
            # A signal that lands while Popen waits for the exec (a stopped run, a Ctrl-C)
            # ends it with an exception, yet the child runs: found by its birth, it is
            # killed with the rest when the scope ends.
            self.leader = self._born_since()
            raise
        self.leader = process.pid
        self.process = process
        return process

    def _born_since(self) -> int:
        """A child of ours born since this command's start began, or 0."""
        for pid in sorted(_children() or ()):
            stat = _stat(pid)
            if stat is not None and stat[0] != "Z" and stat[4] >= self.leader_start:
                return pid
        return 0

    def members(self) -> list[int]:
        """The live processes of this command (zombies excluded)."""
        if self.cgroup is not None:
            pids = self.place.cgroup_pids()
            return [pid for pid in pids if pid not in self.residents and self._since(pid)]
        if self.mode == "group" or not self.leader:
            return _group_members(self.leader)
        return [] if self._nothing_left() else self._tracked()

    def _since(self, pid: int) -> bool:
        """Started once the command had started: a process that a test or fixture of the
        same session started earlier (one item runs at a time) is never the command's."""
        stat = _stat(pid)
        return stat is not None and stat[4] >= self.leader_start

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

    def _nothing_left(self) -> bool:
        """Tracking as a subreaper: the command exited and no new child of ours (living
        or dead) appeared, so nothing of it is left; one read, without scanning /proc."""
        if self.children_before is None or self.process is None:
            return False
        if self.process.poll() is None:
            return False
        now = _children()
        return now is not None and not (now - self.children_before - {self.leader})

    def end(self, grace: float) -> None:
        """Kill what the command left (``kill``) and reap the command itself."""
        if self.process is None and not self.leader:
            return  # it never started
        self.kill(grace)
        if self.process is not None:
            self.process.wait()
        else:  # its start was interrupted after the fork: reaped here
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.leader, 0)

    def kill(self, grace: float) -> None:
        """SIGTERM what is left, give it ``grace`` seconds, then SIGKILL; reap orphans."""
        if self.mode == "tracking" and self._nothing_left():
            return  # the common case: no orphan either, living or dead
        members = [pid for pid in self.members() if pid != os.getpid()]
        if members:
            _signal_all(members, signal.SIGTERM)
            _signal_all(members, signal.SIGCONT)  # a stopped process acts on SIGTERM only then
            if not self._wait_empty(grace):
                self._kill_now()
                self._wait_empty(grace)
        self._reap_orphans()

    def _kill_now(self) -> None:
        """Stop every member until none runs (a stopped process cannot fork), then kill
        them all; a few rounds outside a cgroup, where a new process can appear unseen."""
        for _ in range(50 if self.cgroup is not None else 3):
            members = self.members()
            if not members:
                return
            _signal_all(members, signal.SIGSTOP)
            if self.cgroup is not None and set(self.members()) != set(members):
                continue  # something forked meanwhile: stop it too first
            _signal_all(members, signal.SIGKILL)

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
        our new children, never another Popen's)."""
        if self.children_before is None:
            return
        new = (_children() or set()) - self.children_before - {self.leader}
        for pid in new:
            stat = _stat(pid)
            if stat is not None and stat[0] == "Z" and stat[4] >= self.leader_start:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def contained(grace: float) -> Iterator[Contained]:
    """The scope of one command (or judge): when the block ends, however it ends (also on
    KeyboardInterrupt from SIGINT, SIGTERM or SIGHUP), whatever the command left running
    gets SIGTERM, ``grace`` seconds, then SIGKILL, and the command is reaped."""
    with _implicit_lock:
        scope = Contained()
        scope.place.commands += 1
    try:
        yield scope
    finally:
        try:
            scope.end(grace)
        finally:
            _leave(scope.place)


_implicit_lock = threading.Lock()


def _leave(place: _Place) -> None:
    """The last running command of a place no caller chose ends it: the process stops being
    a subreaper until its next command, rather than for the rest of its life."""
    with _implicit_lock:
        place.commands -= 1
        if place.implicit and place.commands == 0 and _place is place:
            _forget_place()


# --- waiting and capturing ----------------------------------------------------------------


def capture_file(name: str) -> IO[bytes]:
    """A nameless file for a command's output: memory-backed where Linux offers memfd
    (creating a temp file costs more than running a short command), else a temp file.
    Never a pipe: a background child that keeps a pipe open would hang the run."""
    try:  # unbuffered: the command writes through its own descriptor; we pread it
        return open(os.memfd_create(name, os.MFD_CLOEXEC), "w+b", buffering=0)
    except (AttributeError, OSError):
        return tempfile.TemporaryFile(buffering=0)


def read_range(stream: IO[bytes], start: int, end: int) -> bytes:
    """Bytes ``start``..``end`` of a capture file (fewer if it is shorter), read without
    moving its offset (a child may still hold it); an empty range costs no read."""
    fd, chunks = stream.fileno(), []
    while start < end and (chunk := os.pread(fd, end - start, start)):
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)


def fill(stream: IO[bytes], data: bytes) -> None:
    """Write ``data`` at the start of a capture file, its offset left at 0 (where a child
    given it as stdin starts reading)."""
    fd, written = stream.fileno(), 0
    while written < len(data):
        written += os.pwrite(fd, data[written:], written)


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
        with open(cgroup / "cgroup.procs", "rb") as procs:
            return _parse_pids(procs.read())
    except OSError:
        return []


def _parse_pids(listed: bytes) -> list[int]:
    """The pids of a ``cgroup.procs``, as this pid namespace sees them: a process outside
    it is listed as 0, which is no process to signal (``kill(0, ...)`` is our own group)."""
    try:
        return [int(pid) for pid in listed.split() if int(pid) > 0]
    except ValueError:
        return []


def _read_at_start(fd: int) -> bytes:
    """The whole of a kernel-generated file through a descriptor kept open: reading at
    offset 0 regenerates it (a cgroup.procs read now lists the processes in it now)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 65536, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def kill_cgroup(cgroup: Path, spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL every process in ``cgroup`` and below but those in ``spare`` (pytest's own:
    the controller and its xdist workers, which end their own way)."""
    if not spare and _write(cgroup / "cgroup.kill", "1"):  # Linux >= 5.14
        return
    for _ in range(50):
        members = [pid for d in _walk(cgroup) for pid in _cgroup_pids(d) if pid not in spare]
        if not members:
            return
        _signal_all(members, signal.SIGSTOP)  # a stopped process cannot fork any more
        _signal_all(members, signal.SIGKILL)


def await_a_death(candidates: frozenset[int], timeout: float = 5.0) -> frozenset[int]:
    """Those of ``candidates`` that have exited (zombies or gone), waiting up to ``timeout``
    for one. A worker's channel closes as the dying worker closes its files, before Linux
    hands its orphans to us: until the worker is a zombie, they are not ours to find."""
    deadline = time.monotonic() + timeout
    while True:
        table = process_table()
        dead = frozenset(pid for pid in candidates if pid not in table or table[pid][0] == "Z")
        if dead or time.monotonic() >= deadline:
            return dead
        time.sleep(0.01)


def kill_adopted(known: frozenset[int]) -> int:
    """Without a cgroup, on the controller (a subreaper): the orphans of a dead worker's
    commands reparent to us. Kill our children not in ``known`` (the workers) and all
    their descendants; returns how many processes were signalled."""
    table = process_table()
    me = os.getpid()
    doomed = {pid for pid, stat in table.items() if stat[1] == me and pid not in known}
    changed = True
    while changed:
        changed = False
        for pid, stat in table.items():
            if pid not in doomed and stat[1] in doomed:
                doomed.add(pid)
                changed = True
    _signal_all(doomed, signal.SIGKILL)
    for pid in doomed:  # our own zombies now
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    return len(doomed)


def children() -> frozenset[int]:
    return frozenset(_children() or ())


def pytest_processes() -> frozenset[int]:
    """This process and its direct children (the xdist workers, on the controller)."""
    return frozenset({os.getpid(), *(_children() or ())})


def remove_cgroup(cgroup: Path, wait: float = 2.0, spare: frozenset[int] = frozenset()) -> None:
    """Kill everything in ``cgroup`` (but ``spare``) and remove it with its children."""
    kill_cgroup(cgroup, spare)
    deadline = time.monotonic() + wait
    for directory in reversed(list(_walk(cgroup))):  # children before parents
        while True:
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # busy while the killed exit, or a spared process is inside
                if time.monotonic() > deadline or (spare and _cgroup_pids(directory)):
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


def _children() -> set[int] | None:
    """Our direct children, living or zombie (None when the kernel does not list them)."""
    found: set[int] = set()
    try:
        with os.scandir("/proc/self/task") as tasks:
            names = [task.name for task in tasks]
        for name in names:
            with open(f"/proc/self/task/{name}/children", encoding="ascii") as listed:
                found.update(int(pid) for pid in listed.read().split())
    except (OSError, ValueError):
        return None
    return found


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
