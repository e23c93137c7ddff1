"""What the session left running when it stops: background tasks and scheduled wake-ups.

Claude Code 2.1.328 lists them in the Stop hook's payload: ``background_tasks`` (a shell
started with ``run_in_background``, a background agent), each
``{"id", "type", "status", "description", "command"}``, and ``session_crons``. A stop inside
an /implement flow is let through only when nothing of the session still runs: a task left
running can change the tree after the gate's run judged it. Processes started outside the
CLI's task list (a daemon that left its process group) are not in the payload: see the
threat model.
"""

from __future__ import annotations

from typing import Any

# Statuses of a task that no longer runs; any other status (or none) counts as running.
ENDED = frozenset({"completed", "failed", "killed", "stopped", "cancelled", "canceled", "error"})
LISTED = 5


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


def reason(found: list[str]) -> str:
    shown = "; ".join(found[:LISTED]) + (
        f"; and {len(found) - LISTED} more" if len(found) > LISTED else ""
    )
    return (
        f"This session still has {len(found)} background task(s) or scheduled wake-up(s) "
        f"running: {shown}. Something left running can change the tree after the gate judged "
        "it, so the /implement flow cannot end while it runs. Stop it (kill the process, or "
        "the CLI's tool for stopping a task; delete a scheduled wake-up) or wait for it to "
        "finish, then stop again."
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
