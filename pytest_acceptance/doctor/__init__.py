"""``pytest-acceptance-doctor``: is the gate really on in each agent it is installed in, and
how strong is it on this machine?

Each host (an agent the plugin installs into) is one entry of :data:`hosts.HOSTS`: a function
that takes the :class:`Options` and returns its :class:`Check` rows. Each check is made by
doing what the agent would (running the hooks' launcher, writing into the state folder,
probing the isolation wrapper, feeding a synthetic stop to the installed hook), and changes
nothing on the machine: the synthetic flow lives in a temporary HOME and state, removed after.

The report is one table; the exit code is 0 when every check holds, 1 when one failed (each
failed check is named, with its fix), 2 on bad arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

OK, WARN, FAIL = "ok", "warn", "FAIL"
NOT_INSTALLED = "-"  # the gate is not installed for this agent: nothing to check


@dataclasses.dataclass(frozen=True)
class Options:
    """What the user named: the project whose settings count, and where the plugin is (None:
    where the host installed it)."""

    project: Path
    plugin_root: Path | None = None
    synthetic_stop: bool = True


@dataclasses.dataclass(frozen=True)
class Check:
    """One row of the report: what was checked, what was found, and what to do about it."""

    host: str
    name: str
    status: str
    found: str
    fix: str = ""


def table(checks: Sequence[Check]) -> str:
    """The report: one row per check, columns aligned; a failed check's fix on its row."""
    header = ("agent", "check", "status", "found", "fix")
    rows = [header, *((c.host, c.name, c.status, c.found, c.fix or "-") for c in checks)]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    return "\n".join(lines)


def exit_code(checks: Sequence[Check]) -> int:
    return 1 if any(check.status == FAIL for check in checks) else 0


def summary(checks: Sequence[Check]) -> str:
    failed = [f"{check.host} {check.name}" for check in checks if check.status == FAIL]
    if not failed:
        return "healthy: the gate is on and every check holds."
    return f"not healthy: {len(failed)} check(s) failed: {', '.join(failed)}."
