"""The isolation level the gate's run gets on this machine, and what each level leaves open.

The gate's run executes the project's code as your user, outside Claude Code's sandbox
(hooks run outside it). How far that code is kept from what judges it depends on which
wrapper of apart.py starts here:

- ``full``: bubblewrap. A PID namespace with a ``/proc`` of its own, in a world built from
  nothing (apart.py): the system's own folders (apart.SYSTEM_FOLDERS), the plugin, its
  state, Claude Code's configuration and what the pin table names (the pinned
  environments, the interpreter's path, each PATH folder and pinned tool, the toolchains'
  folders, what the configuration declares in ``acceptance_reads``), all read-only; the
  project and the gate's private folders (the run's HOME and TMPDIR among them)
  writable; a fresh ``/tmp``, ``/dev`` and ``/proc``. Nothing else of the machine: a file
  no pin covers (in HOME, beside the project, in ``/var/tmp``) is not there. At this level
  /done's and /escalate's answers say what the run saw.
- ``view``: util-linux's ``unshare`` and ``mount``, no working bubblewrap. The PID
  namespace, and the same read-only view of what the hooks trust, made in a mount
  namespace of the run's own; the rest of the file system stays visible to the run as it
  is, and Claude Code's own sandbox, which needs bubblewrap, cannot run.
- ``pid``: util-linux's ``unshare`` without its ``mount``. The PID namespace holds; the
  read-only view does not: the run can rewrite the plugin's hooks and the modules they
  import next.
- ``none``: neither starts (no unprivileged user namespaces). The run also sees the hook
  that started it, and can write into its answer or signal it.

Each level below ``full`` has one sentence a person acts on. The hooks say it at /implement
and in every answer of a flow's stop, /done and /escalate (where at ``full`` they say what
the run saw instead); ``doctor`` says it with the reason
the probe found. The level is probed in each hook process (apart.prefix), never cached in a
file the agent could write.
"""

from __future__ import annotations

import dataclasses

from pytest_acceptance.gate import apart, hook_io

FULL, VIEW, PID, NONE = "full", "view", "pid", "none"
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
    def said(self) -> str:
        """The sentence of /done's and /escalate's answers: below full what is left open,
        at full what the run saw."""
        return self.warning or f"pytest-acceptance: {self.gives} (isolation: {self.name})."

    @property
    def warning(self) -> str | None:
        """The sentence the hooks say at this level; None at full."""
        if not self.leaves_open:
            return None
        return f"pytest-acceptance: {self.leaves_open}. To close it, {self.fix}."


LEVELS = {
    FULL: Level(
        FULL,
        "the gate's run sees only the project, the system's folders, the pinned environments "
        "and tools, and the declared inputs (acceptance_reads)",
        "",
        "",
    ),
    VIEW: Level(
        VIEW,
        "unshare and mount: a PID namespace, and what the hooks trust read-only",
        "the gate's run has a PID namespace and what the hooks trust read-only, but no "
        "bubblewrap to show it only what was pinned, so files outside the project that no "
        "pin covers stay visible to the run, and Claude Code's own sandbox cannot run",
        INSTALL_BUBBLEWRAP,
    ),
    PID: Level(
        PID,
        "unshare: a PID namespace, no read-only view",
        "the gate's run has a PID namespace but no read-only view (no working bubblewrap), "
        "so the project's code it runs can rewrite the plugin's hooks, their modules and "
        "state, and what judges the next /done, and read files no pin covers",
        INSTALL_BUBBLEWRAP,
    ),
    NONE: Level(
        NONE,
        "none: the run shares the hook's namespace",
        "the gate's run is not set apart (neither bubblewrap nor unshare starts a PID "
        "namespace here), so the project's code it runs can signal the hook, write into "
        "its answer, rewrite the plugin's hooks and state, and read files no pin covers",
        f"allow unprivileged user namespaces, {INSTALL_BUBBLEWRAP}",
    ),
}


def current() -> Level:
    """The level of this machine, from the wrapper apart.py would use."""
    wrapper = apart.prefix()
    if not wrapper:
        return LEVELS[NONE]
    if wrapper[0].rsplit("/", 1)[-1] == "bwrap":
        return LEVELS[FULL]
    return LEVELS[VIEW if apart.has_view(wrapper) else PID]


def why() -> str:
    """What the probe found: each tool missing, then each wrapper in the order apart.py
    tries them, with what it started."""
    found = [
        f"{tool}: not at {' or '.join(paths)}"
        for tool, paths in apart.SYSTEM_PATHS.items()
        if apart.installed(tool) is None
    ]
    for wrapper in apart.candidates():
        if apart.has_view(wrapper):
            name, what = "unshare and mount", "a PID namespace with a read-only view"
        else:
            name, what = wrapper[0].rsplit("/", 1)[-1], "a PID namespace"
        works = "starts" if apart.works(wrapper) else "does not start"
        found.append(f"{name}: {wrapper[0]} {works} {what} as your user")
    return "; ".join(found)


def doctor_pointer(agent: str = "") -> str:
    """The sentence after a warning that sends the user to the whole check (for `agent`,
    the doctor's --agent)."""
    doctor = f"pytest-acceptance-doctor --agent {agent}" if agent else "pytest-acceptance-doctor"
    return f"Run `{doctor}` for the whole check."


def tell() -> None:
    """Add this level's sentence to /done's or /escalate's answer, at every level."""
    hook_io.tell_user(current().said)


def tell_if_open() -> None:
    """Add this level's sentence to the hook's answer, shown to the user (nothing at full)."""
    warning = current().warning
    if warning is not None:
        hook_io.tell_user(warning)
