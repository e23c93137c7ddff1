"""Runs apart: what the hooks start that runs the project's code gets a PID namespace of its
own, with its own ``/proc``.

The gate's pytest runs the criteria, and so the project's code, as your user. Without a
namespace that code can find the hook that started the run (its parent's parent, or any
process in ``/proc``) and open what the hook holds through ``/proc/<pid>/fd``: its standard
output, the hook's answer to Claude Code (a second JSON value there and the CLI acts on
neither), or signal it. Inside a namespace of its own the run sees no process but its own:
nothing outside it can be named, opened or signalled, whatever shape the code takes. And
when the run's first process ends, the kernel ends every process left in it.

Under bubblewrap the run also sees what the hooks trust read-only (:func:`trusted`): the
plugin, its state, Claude Code's configuration, the pinned interpreter. The run executes
the project's code outside Claude Code's sandbox (hooks run outside it), so without this
that code could rewrite the hook that judges the next /done.

The wrapper is a system binary at a fixed path (never looked up on PATH, which the agent can
write): bubblewrap, then util-linux's ``unshare`` (a PID namespace only). Each is tried
once per hook process with a probe that must see its own pid namespace and the same user
id; with neither working, the run goes as before, in the hook's namespace
(docs/threat-model.md says what that leaves open).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from typing import Iterable

from pytest_acceptance.gate.flow_state import Flow, data_dir
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.pins import table

# Where each wrapper is looked for, best first (isolation.py names the level each gives).
SYSTEM_PATHS = {
    "bwrap": ("/usr/bin/bwrap", "/bin/bwrap"),
    "unshare": ("/usr/bin/unshare", "/bin/unshare"),
}
_PROBE_TIMEOUT = 10.0  # seconds: a wrapper that needs longer to start is not used


def candidates() -> list[tuple[str, ...]]:
    """The wrappers this machine has, best first, each ending where the command begins.
    bubblewrap first: it also gives the run a read-only view of what the hooks trust
    (:func:`command`). Either ends the whole namespace when it dies itself (SIGKILL to its
    first process; a namespace's first process ignores a SIGTERM it has no handler for)."""
    found: list[tuple[str, ...]] = []
    bwrap = installed("bwrap")
    if bwrap is not None:  # the whole file system as it is, but a /proc of its own
        mounts = ("--dev-bind", "/", "/", "--proc", "/proc")
        found.append((bwrap, *mounts, "--unshare-pid", "--die-with-parent", "--"))
    unshare = installed("unshare")
    if unshare is not None:
        user = () if os.geteuid() == 0 else ("--user", "--map-current-user")
        found.append(
            (unshare, *user, "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL", "--")
        )
    return found


def installed(tool: str) -> str | None:
    """The first of the tool's system paths that is an executable file, or None."""
    return next((path for path in SYSTEM_PATHS[tool] if os.access(path, os.X_OK)), None)


@functools.lru_cache(maxsize=1)
def prefix() -> tuple[str, ...]:
    """The first wrapper that works here, or () when none does."""
    return next((wrapper for wrapper in candidates() if works(wrapper)), ())


def works(wrapper: tuple[str, ...]) -> bool:
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


def command(
    words: list[str], flow: Flow, writable: Iterable[str] = (), read_only: Iterable[str] = ()
) -> list[str]:
    """`words`, to be run apart when this machine can. Under bubblewrap, what the hooks
    trust is read-only to the run (:func:`trusted`): code the run executes cannot rewrite
    the plugin's hooks, its state, Claude Code's settings and transcripts, or the pinned
    interpreter's files; the project and `writable` stay writable, but for `read_only`
    (what the gate puts into the run's own processes, inside a writable folder)."""
    wrapper = prefix()
    if not wrapper or os.path.basename(wrapper[0]) != "bwrap":
        return [*wrapper, *words]
    binds: list[str] = []
    kept = _existing([*trusted(flow), *read_only])
    opened = _existing([flow.repo, *writable])
    for path in kept:
        binds += ["--ro-bind", path, path]
    for path in opened:
        binds += ["--bind", path, path]
    # A later mount covers an earlier one: what the hooks trust inside the project (its own
    # .venv, pinned as a criterion's or the gate's environment) is made read-only again.
    for path in kept:
        if any(_within(path, folder) for folder in opened):
            binds += ["--ro-bind", path, path]
    return [*wrapper[:-1], *binds, "--", *words]


def _within(path: str, folder: str) -> bool:
    """Strictly inside: the project itself is never made read-only."""
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def trusted(flow: Flow) -> list[str]:
    """What the hooks read to decide, and what the gate's runs are made of: the plugin (its
    hooks and package), its state, Claude Code's configuration folder (settings,
    transcripts, installed plugins), and what each pin of the gate's table names
    (pins/table.py: the folders and files of the pinned interpreter and of each environment
    a criterion ran in at /implement, ...)."""
    home = os.path.expanduser("~")
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    return [str(PLUGIN_ROOT), str(data_dir()), config, *table.read_only(flow)]


def _existing(paths: Iterable[str]) -> list[str]:
    """Each path that exists, by its real path (a link is followed to what it names), once:
    a mount over it covers every way of naming it."""
    found: dict[str, None] = {}
    for path in paths:
        real = os.path.realpath(path)
        if os.path.isabs(real) and os.path.exists(real):
            found[real] = None
    return list(found)
