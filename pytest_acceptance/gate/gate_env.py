"""The gate's PATH and HOME: resolved and pinned at /implement (pins/path_and_home.py),
never looked up again.

Everything the agent can write is a place to plant a stand-in: a ``grep`` that always
succeeds in a folder early on PATH (``~/.local/bin``), a dotfile the code under test reads
from HOME. So the gate's run takes neither from the session:

- **PATH.** At /implement, each tool a criterion names (the first word of each simple
  command of a bash criterion, plus ``bash``, ``sh``, ``env``, ``python3`` and ``python``)
  is resolved on the PATH of that moment, to its real file, whose sha256 is pinned. The
  pin's own ``tools/`` folder (in the plugin's state, out of the agent's reach) holds one
  link per tool to that real file, and comes right after the interpreter's folder on the
  run's PATH, before the PATH pinned at /implement: a named tool is never looked up again
  in a folder the agent can write. Before each run every pinned tool is hashed again; a
  changed one blocks (restore it, or /escalate). A tool the criteria do not name (one a
  test script calls) is still looked up on the pinned PATH, whose folders are pinned entry
  by entry (pins/path_folders.py).
- **HOME.** The run gets a fresh, empty HOME of its own. Into it go exactly: git's global
  configuration as it was at /implement (identity and settings the criteria's git commands
  read), Claude Code's configuration (``~/.claude.json``) as it was at /implement, and the
  Claude credentials (``~/.claude/.credentials.json``) as they are at the run (tokens are
  refreshed; a forged one only fails the agent criteria that use it). Toolchains that live
  in HOME by default keep working through their variables, set to where they were at
  /implement: RUSTUP_HOME, CARGO_HOME, GOPATH (when those folders existed then).

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol

from pytest_acceptance.gate.flow_state import Flow, write_bytes
from pytest_acceptance.tree import shell
from pytest_acceptance.tree.hostile import read_regular_or_none

ALWAYS_PINNED = ("bash", "sh", "env", "python3", "python")
# Files of HOME a criterion may legitimately need, copied at /implement (their content then).
HOME_PINNED = (".gitconfig", ".config/git/config", ".claude.json")
# Copied at each run: credentials are refreshed while a flow runs.
HOME_AT_RUN = (".claude/.credentials.json",)
# Toolchains whose default home is in HOME: (variable, folder under HOME).
TOOLCHAIN_HOMES = (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo"), ("GOPATH", "go"))
HOME_FILE_LIMIT = 1 << 20


class Pinned(Protocol):
    """What the run takes from the pin (pins/path_and_home.py)."""

    @property
    def path(self) -> str:
        """The PATH at /implement."""

    @property
    def home(self) -> str:
        """The HOME at /implement."""

    @property
    def toolchains(self) -> tuple[tuple[str, str], ...]:
        """(variable, folder) of each toolchain that lived in HOME at /implement."""


def named_tools(commands: list[str]) -> list[str]:
    """The tools the commands name, as PATH lookups (names with a "/" are not looked up)."""
    names = dict.fromkeys(ALWAYS_PINNED)
    for command in commands:
        for read in shell.commands(command):
            programs = [wrapper[0] for wrapper in read.wrappers] + list(read.argv[:1])
            for program in programs:  # `timeout 60 pytest`: timeout is looked up too
                if "/" not in program and program.strip():
                    names[program] = None
    return list(names)


def tools_folder(flow: Flow) -> Path:
    return flow.folder / "tools"


def home_copy(flow: Flow) -> Path:
    return flow.folder / "home"


def apply(
    env: dict[str, str], pinned: Pinned, flow: Flow, python: str, run_folder: str
) -> dict[str, str]:
    """The run's environment `env` with the pinned PATH and a fresh HOME in `run_folder` (a
    folder only this run uses)."""
    folder = os.path.dirname(python)
    parts = [folder] if folder else []
    parts += [str(tools_folder(flow)), pinned.path or os.defpath]
    env["PATH"] = os.pathsep.join(parts)
    env["HOME"] = _fresh_home(flow, pinned.home, run_folder)
    env.update(dict(pinned.toolchains))
    return env


def rest_of_path(pinned: Pinned, flow: Flow) -> str:
    """The run's PATH after the interpreter's folder."""
    return os.pathsep.join([str(tools_folder(flow)), pinned.path or os.defpath])


def _fresh_home(flow: Flow, real_home: str, run_folder: str) -> str:
    home = Path(run_folder) / "home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(mode=0o700, parents=True)
    copies = home_copy(flow)
    for relative in HOME_PINNED:
        data = read_regular_or_none(str(copies / relative), HOME_FILE_LIMIT)
        if data is not None:
            write_bytes(home / relative, data)
    for relative in HOME_AT_RUN if real_home else ():
        data = read_regular_or_none(os.path.join(real_home, relative), HOME_FILE_LIMIT)
        if data is not None:
            write_bytes(home / relative, data)
    return str(home)
