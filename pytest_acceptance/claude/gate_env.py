"""The gate's PATH and HOME: resolved and pinned at /implement, never looked up again.

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
  test script calls) is still looked up on the pinned PATH.
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
from typing import Any

from pytest_acceptance.claude import world
from pytest_acceptance.claude.flow_state import Flow, write_bytes
from pytest_acceptance.tree import shell
from pytest_acceptance.tree.hostile import file_digest, read_regular_or_none

ALWAYS_PINNED = ("bash", "sh", "env", "python3", "python")
# Files of HOME a criterion may legitimately need, copied at /implement (their content then).
HOME_PINNED = (".gitconfig", ".config/git/config", ".claude.json")
# Copied at each run: credentials are refreshed while a flow runs.
HOME_AT_RUN = (".claude/.credentials.json",)
# Toolchains whose default home is in HOME: (variable, folder under HOME).
TOOLCHAIN_HOMES = (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo"), ("GOPATH", "go"))
HOME_FILE_LIMIT = 1 << 20


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


def pin(flow: Flow, python: str) -> None:
    """Record the run's PATH, HOME, tools and HOME files as they are now (at /implement). A
    pin that cannot be made is recorded: every later run then blocks with the reason."""
    try:
        _pin(flow, python)
    except OSError as error:
        flow.data["gate_env"] = {"error": f"{type(error).__name__}: {error}"}


def _pin(flow: Flow, python: str) -> None:
    path = os.environ.get("PATH", os.defpath)
    home = os.path.expanduser("~")
    commands = [
        str(item["command"])
        for item in flow.get("criteria") or []
        if item.get("method") == "bash" and item.get("command")
    ]
    interpreter_folder = os.path.realpath(os.path.dirname(python)) if python else ""
    search = f"{os.path.dirname(python)}{os.pathsep}{path}" if python else path
    tools: dict[str, dict[str, str]] = {}
    folder = tools_folder(flow)
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in named_tools(commands):
        found = shutil.which(name, path=search)
        if found is None:
            continue
        if os.path.realpath(os.path.dirname(found)) == interpreter_folder:
            continue  # the interpreter's folder is pinned entry by entry (interpreter_paths)
        target = os.path.realpath(found)
        digest = file_digest(target)
        if digest is None:
            continue
        tools[name] = {"target": target, "sha256": digest}
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    flow.data["gate_env"] = {
        "path": path,
        "home": home,
        "tools": tools,
        "toolchains": {
            variable: os.environ.get(variable) or os.path.join(home, default)
            for variable, default in TOOLCHAIN_HOMES
            if os.path.isdir(os.environ.get(variable) or os.path.join(home, default))
        },
    }
    for relative in HOME_PINNED:
        data = read_regular_or_none(os.path.join(home, relative), HOME_FILE_LIMIT)
        if data is not None:
            write_bytes(home_copy(flow) / relative, data)


def tools_folder(flow: Flow) -> Path:
    return flow.folder / "tools"


def home_copy(flow: Flow) -> Path:
    return flow.folder / "home"


def changes(flow: Flow) -> list[str]:
    """Pinned tools whose file changed (or whose link in the pin's folder did) since
    /implement."""
    pinned = _pinned(flow)
    if pinned is None:
        return []
    if pinned.get("error"):
        return [f"the gate's PATH and HOME (they could not be pinned: {pinned['error']})"]
    found = []
    for name, tool in sorted((pinned.get("tools") or {}).items()):
        target = str(tool.get("target"))
        link = tools_folder(flow) / name
        try:
            linked = os.readlink(link)
        except OSError:
            linked = None
        if linked != target or file_digest(target) != tool.get("sha256"):
            found.append(f"{target} (the tool `{name}` the criteria run, pinned at /implement)")
    return found


def apply(env: dict[str, str], flow: Flow, python: str, run_folder: str) -> dict[str, str]:
    """The run's environment `env` with the pinned PATH and a fresh HOME in `run_folder` (a
    folder only this run uses). A flow pinned without them is left as it is."""
    pinned = _pinned(flow)
    if pinned is None:
        return env
    folder = os.path.dirname(python)
    parts = [folder] if folder else []
    parts += [str(tools_folder(flow)), str(pinned.get("path") or os.defpath)]
    env["PATH"] = os.pathsep.join(parts)
    env["HOME"] = _fresh_home(flow, str(pinned.get("home") or ""), run_folder)
    toolchains = pinned.get("toolchains")
    for variable, value in (toolchains if isinstance(toolchains, dict) else {}).items():
        env[str(variable)] = str(value)
    return env


def given(flow: Flow) -> dict[str, str]:
    """What of the user's files outside the system's folders the run is given because of
    this pin (world.from_home): each toolchain home, each named tool's installation."""
    pinned = _pinned(flow)
    if pinned is None or pinned.get("error"):
        return {}
    tools = pinned.get("tools")
    toolchains = pinned.get("toolchains")
    targets = {
        str(name): str(tool.get("target"))
        for name, tool in (tools.items() if isinstance(tools, dict) else ())
        if isinstance(tool, dict) and tool.get("target")
    }
    homes = toolchains if isinstance(toolchains, dict) else {}
    return world.from_home(
        targets, {str(k): str(v) for k, v in homes.items()}, str(pinned.get("home") or "")
    )


def shown(flow: Flow) -> str | None:
    """The sentence that lists what of the user's files the gate's run is given, or None."""
    pinned = _pinned(flow) or {}
    return world.shown(given(flow), str(pinned.get("home") or ""))


def rest_of_path(flow: Flow, fallback: str) -> str:
    """The run's PATH after the interpreter's folder."""
    pinned = _pinned(flow)
    if pinned is None:
        return fallback
    return os.pathsep.join([str(tools_folder(flow)), str(pinned.get("path") or os.defpath)])


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


def _pinned(flow: Flow) -> dict[str, Any] | None:
    pinned = flow.get("gate_env")
    return pinned if isinstance(pinned, dict) else None
