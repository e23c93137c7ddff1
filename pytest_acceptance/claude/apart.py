"""Runs apart: what the hooks start that runs the project's code gets a PID namespace of its
own, with its own ``/proc``.

The gate's pytest runs the criteria, and so the project's code, as your user. Without a
namespace that code can find the hook that started the run (its parent's parent, or any
process in ``/proc``) and open what the hook holds through ``/proc/<pid>/fd``: its standard
output, the hook's answer to Claude Code (a second JSON value there and the CLI acts on
neither), or signal it. Inside a namespace of its own the run sees no process but its own:
nothing outside it can be named, opened or signalled, whatever shape the code takes. And
when the run's first process ends, the kernel ends every process left in it.

The wrapper is a system binary at a fixed path (never looked up on PATH, which the agent can
write): util-linux's ``unshare``, then bubblewrap. Each is tried once per hook process with
a probe that must see its own pid namespace and the same user id; with neither working,
the run goes as before, in the hook's namespace (docs/threat-model.md says what that
leaves open).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

_BWRAP = ("/usr/bin/bwrap", "/bin/bwrap")
_UNSHARE = ("/usr/bin/unshare", "/bin/unshare")
_PROBE_TIMEOUT = 10.0  # seconds: a wrapper that needs longer to start is not used


def candidates() -> list[tuple[str, ...]]:
    """The wrappers this machine has, best first, each ending where the command begins.
    ``unshare`` first: it waits for its command, so the run's CPU time counts as the hook's
    children's (bubblewrap's does not). Either ends the whole namespace when it dies
    itself: SIGKILL to its first process (a namespace's first process ignores a SIGTERM it
    has no handler for), whose end is the end of every process in it."""
    found: list[tuple[str, ...]] = []
    unshare = next((path for path in _UNSHARE if os.access(path, os.X_OK)), None)
    if unshare is not None:
        user = () if os.geteuid() == 0 else ("--user", "--map-current-user")
        found.append(
            (unshare, *user, "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL", "--")
        )
    bwrap = next((path for path in _BWRAP if os.access(path, os.X_OK)), None)
    if bwrap is not None:  # the whole file system as it is, but a /proc of its own
        mounts = ("--dev-bind", "/", "/", "--proc", "/proc")
        found.append((bwrap, *mounts, "--unshare-pid", "--die-with-parent", "--"))
    return found


@functools.lru_cache(maxsize=1)
def prefix() -> tuple[str, ...]:
    """The first wrapper that works here, or () when none does."""
    return next((wrapper for wrapper in candidates() if _works(wrapper)), ())


def _works(wrapper: tuple[str, ...]) -> bool:
    """The wrapper starts a command in a pid namespace of its own (its pid is 1 or 2 there)
    as the same user."""
    check = f"import os, sys; sys.exit(os.getpid() > 2 or os.getuid() != {os.getuid()})"
    try:
        done = subprocess.run(
            [*wrapper, sys.executable, "-I", "-S", "-c", check],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def command(words: list[str]) -> list[str]:
    """`words`, to be run apart when this machine can."""
    return [*prefix(), *words]
