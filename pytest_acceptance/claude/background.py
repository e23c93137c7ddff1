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
from the CLI (Linux's /proc; elsewhere nothing is found). One that cleared its environment
is out of its sight: see the threat model.
"""

from __future__ import annotations

import os
from typing import Any

from pytest_acceptance.tree.hostile import read_regular_or_none

# Statuses of a task that no longer runs; any other status (or none) counts as running.
ENDED = frozenset({"completed", "failed", "killed", "stopped", "cancelled", "canceled", "error"})
LISTED = 5
SESSION_VARIABLE = b"CLAUDE_CODE_SESSION_ID="
CLI_VARIABLE = "CLAUDE_PID"  # the CLI's own pid, in the environment of what it starts
_PROC = "/proc"
_ENVIRON_LIMIT = 1 << 20
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
    """A short description of each live process of session `session_id` that left the
    CLI's process tree (the hook itself, its callers and what it started excluded)."""
    if not session_id or not os.path.isdir(proc):
        return []
    parents = _parents(proc)
    lineage = _ancestors(os.getpid(), parents)
    cli = _cli_pid(lineage)
    roots = {cli} if cli is not None else set(lineage) - {0, 1}
    roots.add(os.getpid())
    marker = SESSION_VARIABLE + session_id.encode("utf-8", "replace")
    found = []
    for pid in sorted(parents):
        if pid in lineage or roots & set(_ancestors(pid, parents)[1:]):
            continue  # the hook and its callers, or still inside the CLI's tree
        environ = read_regular_or_none(f"{proc}/{pid}/environ", _ENVIRON_LIMIT)
        if environ is not None and marker in environ.split(b"\0"):
            found.append(_process(pid, proc))
    return found


def _parents(proc: str) -> dict[int, int]:
    """Each live process's parent, from ``/proc/<pid>/stat``: the fields after the last
    ``)`` (the command name before it, in parentheses, may hold both spaces and ``)``)."""
    parents = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        stat = read_regular_or_none(f"{proc}/{name}/stat", _STAT_LIMIT)
        fields = stat.rsplit(b")", 1)[-1].split() if stat else []
        if len(fields) > 1 and fields[1].isdigit():
            parents[int(name)] = int(fields[1])
    return parents


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


def reason(found: list[str]) -> str:
    shown = "; ".join(found[:LISTED]) + (
        f"; and {len(found) - LISTED} more" if len(found) > LISTED else ""
    )
    return (
        f"This session still has {len(found)} background task(s), process(es) or scheduled "
        f"wake-up(s) running: {shown}. Something left running can change the tree after the "
        "gate judged it, so the /implement flow cannot end while it runs. Stop it (kill the "
        "process, or the CLI's tool for stopping a task; delete a scheduled wake-up) or wait "
        "for it to finish, then stop again."
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
