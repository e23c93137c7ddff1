"""Each isolation level of the gate's run (pytest_acceptance/gate/isolation.py), for real.

A test of a guarantee that depends on the level runs at every level and expects what that
level promises. A level below this machine's own is made the real way: the hook runs in a
mount namespace of its own where the wrapper's system paths (apart.SYSTEM_PATHS) are
covered by /dev/null, which is not executable, so apart.py's probe finds the wrapper
missing, exactly as on a machine without it. Hiding needs the right to mount: root, as
here; elsewhere such a level skips and says why. A level above this machine's own (full
without bubblewrap) cannot be made, and skips saying so.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence

import pytest

from pytest_acceptance.gate import apart, isolation

HIDDEN_AT = {
    isolation.FULL: (),
    isolation.VIEW: ("bwrap",),
    isolation.PID: ("bwrap", "mount"),
    isolation.NONE: ("bwrap", "unshare"),
}
LEVELS = tuple(HIDDEN_AT)


def machine_level() -> str:
    """This machine's own level, nothing hidden (probed in this process, as a hook does)."""
    return isolation.current().name


def hiding(tools: Sequence[str]) -> list[str]:
    """The words that start a command with `tools` hidden from apart.py; [] for none."""
    paths = sorted(
        {
            os.path.realpath(path)
            for tool in tools
            for path in apart.SYSTEM_PATHS[tool]
            if os.path.exists(path)
        }
    )
    if not paths:
        return []
    # The mounts run `mount`: hiding it comes last.
    hidden_mount = {os.path.realpath(path) for path in apart.SYSTEM_PATHS["mount"]}
    paths.sort(key=lambda path: path in hidden_mount)
    mounts = " && ".join(f"mount --bind /dev/null {shlex.quote(p)}" for p in paths)
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return [unshare, "--mount", "--", "/bin/sh", "-c", f'{mounts} && exec "$@"', "sh"]


def wrapper_for(level: str) -> list[str]:
    """The words that run a hook at `level` here; skips (saying why) when it cannot be made."""
    here = machine_level()
    if level == here:
        return []
    if LEVELS.index(level) < LEVELS.index(here):
        pytest.skip(f"this machine's gate run is at level {here!r}: {level!r} cannot be made")
    if os.geteuid() != 0:
        hidden = ", ".join(HIDDEN_AT[level])
        pytest.skip(f"level {level!r} is made by hiding {hidden}, which needs root to mount")
    return hiding(HIDDEN_AT[level])
