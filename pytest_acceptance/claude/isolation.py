"""The isolation level the gate's run gets on this machine, and what each level leaves open.

The gate's run executes the project's code as your user, outside Claude Code's sandbox
(hooks run outside it). How far that code is kept from what judges it depends on which
wrapper of apart.py starts here:

- ``full``: bubblewrap. A PID namespace with a ``/proc`` of its own, in a world built from
  nothing (apart.py): the system's own folders (apart.SYSTEM_FOLDERS), the plugin, its
  state, Claude Code's configuration and what the pin table names (the pinned
  environments, the interpreter's path, each PATH folder and pinned tool, the toolchains'
  folders), all read-only; the project and the gate's private folders (the run's HOME and
  TMPDIR among them) writable; a fresh ``/tmp``, ``/dev`` and ``/proc``. Nothing else of
  the machine: a file no pin covers (in HOME, beside the project, in ``/var/tmp``) is not
  there.
- ``pid``: util-linux's ``unshare`` only. The PID namespace holds; the read-only view does
  not: the run can rewrite the plugin's hooks and the modules they import next.
- ``none``: neither starts (no unprivileged user namespaces). The run also sees the hook
  that started it, and can write into its answer or signal it.

Each level below ``full`` has one sentence a person acts on. The hooks say it at /implement
and in every answer of a flow's stop, /done and /escalate; ``doctor`` says it with the reason
the probe found. The level is probed in each hook process (apart.prefix), never cached in a
file the agent could write.
"""

from __future__ import annotations

import dataclasses

from pytest_acceptance.claude import apart, hook_io

FULL, PID, NONE = "full", "pid", "none"
INSTALL_BUBBLEWRAP = (
    "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) and turn Claude "
    "Code's sandbox on (sandbox.enabled in your settings)"
)


@dataclasses.dataclass(frozen=True)
class Level:
    """One isolation level: what the run gets, and (below full) what is left open and the fix."""

    name: str
    gives: str
    leaves_open: str
    fix: str

    @property
    def warning(self) -> str | None:
        """The sentence the hooks say at this level; None at full."""
        if not self.leaves_open:
            return None
        return f"pytest-acceptance: {self.leaves_open}. To close it, {self.fix}."


LEVELS = {
    FULL: Level(
        FULL,
        "bubblewrap: a PID namespace in a world of its own: the system's folders and what "
        "the hooks trust and the pins name read-only, the project writable, nothing else",
        "",
        "",
    ),
    PID: Level(
        PID,
        "unshare: a PID namespace, no read-only view",
        "the gate's run has a PID namespace but no read-only view (no working bubblewrap), "
        "so the project's code it runs can rewrite the plugin's hooks, their modules and "
        "state, and what judges the next /done",
        INSTALL_BUBBLEWRAP,
    ),
    NONE: Level(
        NONE,
        "none: the run shares the hook's namespace",
        "the gate's run is not set apart (neither bubblewrap nor unshare starts a PID "
        "namespace here), so the project's code it runs can signal the hook, write into "
        "its answer, and rewrite the plugin's hooks and state",
        f"allow unprivileged user namespaces, {INSTALL_BUBBLEWRAP}",
    ),
}


def current() -> Level:
    """The level of this machine, from the wrapper apart.py would use."""
    wrapper = apart.prefix()
    if not wrapper:
        return LEVELS[NONE]
    return LEVELS[FULL if wrapper[0].rsplit("/", 1)[-1] == "bwrap" else PID]


def why() -> str:
    """What the probe found for each wrapper, in the order apart.py tries them."""
    found = []
    wrappers = {wrapper[0]: wrapper for wrapper in apart.candidates()}
    for tool in apart.SYSTEM_PATHS:
        path = apart.installed(tool)
        if path is None:
            found.append(f"{tool}: not at {' or '.join(apart.SYSTEM_PATHS[tool])}")
        elif path in wrappers and apart.works(wrappers[path]):
            found.append(f"{tool}: {path} starts a PID namespace")
        else:
            found.append(f"{tool}: {path} does not start a PID namespace as your user")
    return "; ".join(found)


def tell_if_open() -> None:
    """Add this level's sentence to the hook's answer, shown to the user (nothing at full)."""
    warning = current().warning
    if warning is not None:
        hook_io.tell_user(warning)
