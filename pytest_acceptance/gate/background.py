"""What the session left running when it stops: background tasks, scheduled wake-ups, and
processes that left the CLI's process tree.

Claude Code 2.1.328 lists the first two in the Stop hook's payload: ``background_tasks`` (a
shell started with ``run_in_background``, a background agent), each
``{"id", "type", "status", "description", "command"}``, and ``session_crons``. A stop inside
an /implement flow is let through only when nothing of the session still runs: a task left
running can change the tree after the gate's run judged it.

Processes that left the CLI's process tree are in no payload: a daemon (``setsid`` and a
second fork), a ``nohup … &`` that outlived the shell of its tool call. The CLI puts
``CLAUDE_CODE_SESSION_ID`` in the environment of every tool call, and every process a tool
call starts inherits it, whatever it then does to its process group, session or parent:
:func:`escaped` finds each live process carrying this session's id that no longer descends
from the CLI (Linux's /proc; elsewhere nothing is found). What it cannot bound counts
against the stop: an environment too large to read whole, a process of your user started
after the CLI whose environment cannot be read, scans of /proc that never settle (a
process that hops from pid to pid faster than /proc can be read). A process whose main
thread alone ended lives on in its other threads, and is read through one. One that
cleared its environment is out of its sight: see the threat model; a block names the
isolation the stop had.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from pytest_acceptance.tree.hostile import read_regular_or_none

# Statuses of a task that no longer runs; any other status (or none) counts as running.
ENDED = frozenset({"completed", "failed", "killed", "stopped", "cancelled", "canceled", "error"})
LISTED = 5
SESSION_VARIABLE = b"CLAUDE_CODE_SESSION_ID="
CLI_VARIABLE = "CLAUDE_PID"  # the CLI's own pid, in the environment of what it starts
_PROC = "/proc"
_ENVIRON_LIMIT = 1 << 28  # far past what the kernel lets an environment hold
_SCAN_PAUSE = 0.05  # seconds between two scans
SCANS = 5  # at most; two in a row must agree
# How long one scan chases the pids born while it read, waiting for a round with no birth:
# on a busy machine (a test suite forking all the while) such a round comes, if rarely.
_CHASE_SECONDS = 2.0
_PROBED = 4096  # pids given in one round, at most, tried one by one rather than listed
_STAT_LIMIT = 4096


def left_running(payload: dict[str, Any]) -> list[str]:
    """A short description of each task or scheduled wake-up the payload lists as live."""
    found = []
    tasks = payload.get("background_tasks")
    for task in tasks if isinstance(tasks, list) else []:
        status = task.get("status") if isinstance(task, dict) else None
        if status not in ENDED:
            found.append(_describe(task, "background task"))
    crons = payload.get("session_crons")
    for cron in crons if isinstance(crons, list) else []:
        found.append(_describe(cron, "scheduled wake-up"))
    return found


def escaped(session_id: str, proc: str = _PROC) -> list[str]:
    """A short description of each live process that may be session `session_id`'s and left
    the CLI's process tree (the hook itself, its callers and what it started excluded).

    What cannot be bounded counts against the stop. A process counts when its environment
    names the session, when its environment cannot be read whole, or when it is of your
    user, started after the CLI and its environment cannot be read at all (a process made
    undumpable). The scan is repeated until two settled scans in a row find the same
    processes; past :data:`SCANS` scans that never settle, that counts too."""
    if not session_id or not os.path.isdir(proc):
        return []
    marker = SESSION_VARIABLE + session_id.encode("utf-8", "replace")
    earlier: Scan | None = None
    for _ in range(SCANS):
        scan = _scan(marker, proc)
        if earlier is not None and not scan.unsettled and scan.found == earlier.found:
            return [f"{_process(pid, proc)} ({why})" for pid, why in scan.found]
        earlier = scan
        time.sleep(_SCAN_PAUSE)
    return [
        f"processes that could be this session's kept appearing and vanishing over {SCANS} "
        f"scans of {proc} (what the session left running cannot be told)"
    ]


@dataclass(frozen=True)
class Scan:
    """One pass over ``/proc``: each process that counts as the session's with why, and
    whether processes kept being born while it read (a fork that hands on)."""

    found: tuple[tuple[int, str], ...]
    unsettled: bool


def _scan(marker: bytes, proc: str) -> Scan:
    looked, unsettled = _look(marker, proc)
    parents = {pid: seen.parent for pid, seen in looked.items()}
    lineage = _ancestors(os.getpid(), parents)
    cli = _cli_pid(lineage)
    roots = {cli} if cli is not None else set(lineage) - {0, 1}
    roots.add(os.getpid())
    reference = looked.get(cli if cli is not None else _oldest(lineage))
    since = reference.owner.started if reference is not None else None
    found = []
    for pid, seen in sorted(looked.items()):
        if pid in lineage or roots & set(_ancestors(pid, parents)[1:]):
            continue  # the hook and its callers, or still inside the CLI's tree
        if seen.environment in (OURS, TOO_LARGE) or (
            seen.environment == UNREADABLE and seen.owner.mine_since(since)
        ):
            found.append((pid, seen.environment))
    return Scan(tuple(found), unsettled)


@dataclass(frozen=True)
class Seen:
    """One process as a scan read it: its parent, its owner, what its environment said."""

    parent: int
    owner: Owner
    environment: str


def _look(marker: bytes, proc: str) -> tuple[dict[int, Seen], bool]:
    """Every process ``/proc`` lists, each read at once, newest first, and whether the
    chase below never settled.

    A listing of ``/proc`` is no snapshot: a process that forks and ends at once (a pid
    that hops) can end before the listing reaches it while its child is born behind it (a
    lower pid once pids wrap round). Whatever lives at the end of a round in which no
    process was born anywhere was alive through the whole round, so it was listed and read.
    The scan reads the pids born since (a pid reused too) again and again, until a round
    sees no birth; past :data:`_CHASE_SECONDS`, it has not settled. Where the kernel does
    not tell the last pid it gave, a round settles when nothing it listed ended unread."""
    looked: dict[int, Seen] = {}
    before = _last_pid(proc)
    pids = _listed(proc)
    give_up = time.monotonic() + _CHASE_SECONDS
    while True:
        lost = False
        for pid in sorted(pids, reverse=True):
            seen = _read(pid, marker, proc)
            lost = lost or seen is None or seen.environment == ENDED_UNREAD
            if seen is not None:
                looked[pid] = seen  # an ended process still listed is not read again
        after = _last_pid(proc)
        if (after == before) if after is not None else not lost:
            return looked, False
        if time.monotonic() >= give_up:
            return looked, True
        pids, before = _born_since(before, after, proc, looked), after


def _born_since(
    before: int | None, after: int | None, proc: str, looked: dict[int, Seen]
) -> set[int]:
    """The pids the next round reads: those the kernel gave after `before` up to `after`,
    tried one by one when they are few (a round of microseconds, so a quiet one comes even
    on a busy machine); else those of a new listing not read yet or given since."""
    if before is not None and after is not None and before < after <= before + _PROBED:
        return set(range(before + 1, after + 1))
    born = _born_between(before, after)
    return {pid for pid in _listed(proc) if pid not in looked or born(pid)}


def _last_pid(proc: str) -> int | None:
    """The last pid the kernel gave, in this pid namespace."""
    text = read_regular_or_none(f"{proc}/sys/kernel/ns_last_pid", _STAT_LIMIT) or b""
    return int(text) if text.strip().isdigit() else None


def _born_between(before: int | None, after: int | None) -> Callable[[int], bool]:
    """Whether a pid was given after `before` up to `after` (pids wrap round)."""
    if before is None or after is None:
        return lambda pid: False
    if after >= before:
        return lambda pid: before < pid <= after
    return lambda pid: pid > before or pid <= after


def _listed(proc: str) -> set[int]:
    return {int(name) for name in os.listdir(proc) if name.isdigit()}


def _read(pid: int, marker: bytes, proc: str) -> Seen | None:
    """One process: its parent, owner and environment; None when it was gone before
    anything of it could be read. Its environment counts only when the process was still
    alive once it had been read (an ended process, a zombie, reads as empty)."""
    stat = read_regular_or_none(f"{proc}/{pid}/stat", _STAT_LIMIT)
    fields = stat.rsplit(b")", 1)[-1].split() if stat else []
    if len(fields) < 20 or not fields[1].isdigit():
        return None
    started = _started_at(fields)
    environment = _environment(f"{proc}/{pid}/environ", marker)
    owner = _owner(pid, proc, started)
    thread = _live_thread(pid, proc) if owner is not None and not owner.alive else None
    if owner is not None and thread is not None:
        # The leader ended, a thread of its process runs on: the process lives, and its
        # environment is read through that thread (the leader's reads as empty).
        owner = replace(owner, alive=True)
        environment = _environment(f"{proc}/{pid}/task/{thread}/environ", marker)
        environment = UNREADABLE if environment == GONE else environment
    if owner is None or not owner.alive:
        environment = ENDED_UNREAD
    elif owner.thread_group not in (None, pid):
        environment = THREAD  # a pid tried by number can be a thread: its process is read
    elif environment == GONE:
        environment = NOT_OURS  # alive with no memory to read: a kernel thread
    return Seen(int(fields[1]), owner or Owner((), started), environment)


def _started_at(fields: list[bytes]) -> int | None:
    """When a process started, in clock ticks after boot: field 22 of its stat."""
    return int(fields[19]) if fields[19].isdigit() else None


OURS = "its environment names this session"
TOO_LARGE = "its environment is too large to read whole"
UNREADABLE = "a process of your user whose environment cannot be read"
GONE = "gone"
ENDED_UNREAD = "it ended before it was read"
THREAD = "a thread of another process"
NOT_OURS = "not this session's"


def _environment(path: str, marker: bytes) -> str:
    """Whether the environment at `path` holds `marker` as one of its entries, read whole
    in chunks (a long entry is skipped, never kept); past :data:`_ENVIRON_LIMIT` bytes,
    TOO_LARGE."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, ProcessLookupError):
        return GONE
    except PermissionError:
        return UNREADABLE
    except OSError:
        return UNREADABLE
    try:
        return _holds_entry(descriptor, marker)
    except ProcessLookupError:
        return GONE
    except OSError:
        return UNREADABLE
    finally:
        os.close(descriptor)


def _holds_entry(descriptor: int, marker: bytes) -> str:
    pending = b""  # the start of the entry the last chunk ended in, while it may be `marker`
    skipping = False  # the entry under way is already longer than `marker`
    total = 0
    while True:
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            return OURS if not skipping and pending == marker else NOT_OURS
        total += len(chunk)
        if total > _ENVIRON_LIMIT:
            return TOO_LARGE
        entries = chunk.split(b"\0")
        for index, entry in enumerate(entries):
            last = index == len(entries) - 1
            whole = entry if index else pending + entry
            long_entry = (skipping and index == 0) or len(whole) > len(marker)
            if last:
                pending, skipping = (b"", True) if long_entry else (whole, False)
            elif not long_entry and whole == marker:
                return OURS
            else:
                skipping = False


@dataclass(frozen=True)
class Owner:
    """Who a process runs as (its real, effective, saved and file-system user ids), when
    it started (clock ticks after boot; None when unknown) and whether it is still alive
    (neither a zombie nor dead)."""

    uids: tuple[int, ...]
    started: int | None
    alive: bool = True
    thread_group: int | None = None

    def mine_since(self, since: int | None) -> bool:
        """Of your user, started after `since` (None: any start counts): a process the
        session could have started."""
        mine = os.getuid() in self.uids
        return mine and (since is None or self.started is None or self.started >= since)


def _owner(pid: int, proc: str, started: int | None) -> Owner | None:
    """The process's owner from ``/proc/<pid>/status`` (readable for every process, an
    undumpable one too); None when it is gone."""
    status = read_regular_or_none(f"{proc}/{pid}/status", _STAT_LIMIT)
    if status is None:
        return None
    lines = status.splitlines()
    uid_line = next((line for line in lines if line.startswith(b"Uid:")), b"")
    state = next((line for line in lines if line.startswith(b"State:")), b"State: ?")
    group = next((line.split()[1:2] for line in lines if line.startswith(b"Tgid:")), [])
    uids = tuple(int(word) for word in uid_line.split()[1:] if word.isdigit())
    return Owner(
        uids,
        started,
        alive=state.split()[1:2] not in ([b"Z"], [b"X"]),
        thread_group=int(group[0]) if group and group[0].isdigit() else None,
    )


def _live_thread(pid: int, proc: str) -> int | None:
    """A thread of process `pid`, other than its leader, that is neither a zombie nor dead:
    a process whose main thread left by the `exit` system call (that thread only) lives on
    in its other threads, while /proc shows its leader as a zombie."""
    try:
        threads = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    for name in threads:
        if not name.isdigit() or int(name) == pid:
            continue
        thread = _owner(int(name), proc, None)  # /proc/<tid>: the thread's own status
        if thread is not None and thread.alive:
            return int(name)
    return None


def _oldest(lineage: list[int]) -> int:
    """The hook's oldest ancestor but the system's first process."""
    kept = [pid for pid in lineage if pid > 1]
    return kept[-1] if kept else os.getpid()


def _ancestors(pid: int, parents: dict[int, int]) -> list[int]:
    """`pid`, its parent, and so on up to the first process whose parent is unknown."""
    chain = [pid]
    while parents.get(chain[-1], 0) > 0 and len(chain) <= len(parents):
        chain.append(parents[chain[-1]])
    return chain


def _cli_pid(lineage: list[int]) -> int | None:
    """The CLI among the hook's ancestors, by the pid it gives what it starts."""
    named = os.environ.get(CLI_VARIABLE, "")
    return int(named) if named.isdigit() and int(named) in lineage else None


def _process(pid: int, proc: str) -> str:
    command = read_regular_or_none(f"{proc}/{pid}/cmdline", _STAT_LIMIT) or b""
    words = command.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return f"process {pid}" + (f", command {words[:120]!r}" if words else "")


def _shown(found: list[str]) -> str:
    """The first :data:`LISTED` of `found`, and how many more."""
    more = f"; and {len(found) - LISTED} more" if len(found) > LISTED else ""
    return "; ".join(found[:LISTED]) + more


def reason(found: list[str]) -> str:
    return (
        f"This session still has {len(found)} background task(s), process(es) or scheduled "
        f"wake-up(s) running: {_shown(found)}. Something left running can change the tree "
        "after the gate judged it, so the /implement flow cannot end while it runs. Stop it "
        "(kill the process, or the CLI's tool for stopping a task; delete a scheduled "
        f"wake-up) or wait for it to finish, then stop again. {isolation()}"
    )


def running_during_the_run(found: list[str], skill: str) -> str:
    """Why /done or /escalate is refused while processes of the session run beside it."""
    return (
        f"This session has {len(found)} process(es) running outside the CLI's tool calls: "
        f"{_shown(found)}. A process left running can change the tree while the gate's run reads "
        f"it, and change it back after, so /pytest-acceptance:{skill} is verified only when "
        f"none runs. Stop it (kill the process), then call /pytest-acceptance:{skill} again. "
        f"{isolation()}"
    )


def isolation() -> str:
    """The isolation this stop had, in the sentence its answer ends with."""
    from pytest_acceptance.gate import isolation as levels  # its probe runs only for a block

    level = levels.current()
    return (
        f"Isolation of the gate's run: {level.name} ({level.gives}). The stop sees the "
        "session's processes by the session id in their environment; one that sheds it (a "
        "cleared environment, a process another service of your user starts) is kept from "
        "outliving its command only by Claude Code's sandbox."
    )


def _describe(entry: object, kind: str) -> str:
    if not isinstance(entry, dict):
        return f"a {kind} ({str(entry)[:80]!r})"
    ident = entry.get("id")
    words = [f"{kind} {ident}" if isinstance(ident, (str, int)) else kind]
    for key in ("description", "command", "prompt", "cron", "schedule"):
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            words.append(f"{key} {' '.join(value.split())[:120]!r}")
    return ", ".join(words)
