"""Checks every host shares, each made by doing: the host's file of hooks read as the host
reads it, the hooks' launcher run as the agent runs it, a file written into the state
folder and removed, the isolation level probed as the hooks probe it, a synthetic stop fed
to the installed stop hook."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Check, Options
from pytest_acceptance.doctor.claude_stop import StopOutcome
from pytest_acceptance.gate import isolation
from pytest_acceptance.gate.hosts import HostAdapter, installer_command

OurHooks = dict[str, dict[str, Any]]  # our hook of each event, by event

# What the launcher must be able to run: the hooks' own package, under python3 -E -S.
_LAUNCHER_PROBE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import pytest_acceptance.gate.hook_io; "
    "print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"
)
PYTHON_FIX = (
    "put a python3 >= 3.8 first on the PATH the agent starts with, outside the project, "
    "neither a virtualenv's nor a version manager's shim"
)


def launcher_python(host: str, root: Path, project: Path, env: Mapping[str, str]) -> Check:
    """Run the plugin's hooks launcher as the agent does (from the project, with this PATH):
    the python3 it picks must run the hooks' package."""
    launcher = root / "hooks" / "python3"
    try:
        done = subprocess.run(
            ["/bin/sh", str(launcher), "-B", "-c", _LAUNCHER_PROBE, str(root)],
            cwd=project if project.is_dir() else None,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        found = f"{launcher} did not run ({error})"
        return Check(host, "hooks' python3", FAIL, found, PYTHON_FIX)
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        found = f"the launcher's python3 fails: {said}"
        return Check(host, "hooks' python3", FAIL, found, PYTHON_FIX)
    return Check(host, "hooks' python3", OK, f"{lines[0]} (Python {lines[1]})")


def writable_folder(host: str, folder: Path) -> Check:
    """Write into the state folder (or, before its first use, into the folder it will be
    made in), take the write back, and give the folder its times back."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    fix = f"make {existing} writable by your user (its owner, its mode, a read-only mount)"
    try:
        times = existing.stat()
        if existing == folder:
            handle, name = tempfile.mkstemp(prefix=".doctor-", dir=folder)
            os.close(handle)
            os.unlink(name)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".doctor-", dir=existing))
        os.utime(existing, ns=(times.st_atime_ns, times.st_mtime_ns))
    except OSError as error:
        return Check(host, "state folder", FAIL, f"{existing} is not writable ({error})", fix)
    return Check(host, "state folder", OK, f"{folder} writable")


def isolation_level(host: str) -> Check:
    level = isolation.current()
    found = f"{level.name}: {level.gives} ({isolation.why()})"
    if level.warning is None:
        return Check(host, "gate run isolation", OK, found)
    return Check(host, "gate run isolation", FAIL, found, level.fix)


def our_hooks(
    host: str,
    project: Path,
    relative: Path,
    ours: Callable[[Mapping[str, Any]], OurHooks],
    fix: str,
) -> OurHooks | Check:
    """Our hooks in the host's file of hooks (`relative` to the project), by event; or the
    one row that says why there are none: the file missing or without a hook of ours (not
    installed), or unreadable (a failure)."""
    path = project / relative
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Check(host, "installed", NOT_INSTALLED, f"no {relative} in {project}", fix)
    except (OSError, ValueError) as error:
        return Check(host, "hooks installed", FAIL, f"{path} cannot be read ({error})", fix)
    hooks = ours(data) if isinstance(data, dict) else {}
    return hooks or Check(host, "installed", NOT_INSTALLED, f"no hook of ours in {path}")


def installed(host: str, hooks: OurHooks, problems: list[str], fix: str) -> Check:
    """Our hooks as the host would run them: each problem that makes it skip one fails."""
    if problems:
        return Check(host, "hooks installed", FAIL, "; ".join(problems), fix)
    return Check(host, "hooks installed", OK, ", ".join(sorted(hooks)))


def plugin_root(command: object) -> Path | None:
    """The plugin whose launcher a hook's command starts (`/bin/sh LAUNCHER SCRIPT`)."""
    try:
        words = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return None
    launchers = [Path(w) for w in words if w.endswith("/hooks/python3")]
    return launchers[0].parent.parent if launchers else None


def hooks_python(host: str, root: Path | None, project: Path, fix: str) -> Check:
    """The launcher of the plugin our hooks name (`root`), run as the agent runs it."""
    if root is None:
        return Check(
            host, "hooks' python3", FAIL, "no hook of ours names the plugin's launcher", fix
        )
    return launcher_python(host, root, project, {})


def synthetic(host: str, fix: str, run: Callable[[], StopOutcome]) -> Check:
    """The synthetic stop's row: the installed stop hook must block the failing flow."""
    name = "synthetic stop"
    try:
        outcome = run()
    except Exception as error:  # whatever went wrong, the check failed and says why
        return Check(host, name, FAIL, f"could not run: {error}", fix)
    if outcome.blocked:
        return Check(host, name, OK, f"blocked: {outcome.reason}")
    return Check(host, name, FAIL, f"not blocked: {outcome.reason}", fix)


class HookFileHost(Protocol):
    """A host whose hooks live in a JSON file of the project (its gate module, host_<name>):
    the file, our hook of each event in it, why the host would skip one, the field of a
    hook that holds its command, the hook set's folder, its adapter (the state folder)."""

    HOOKS_FILE: Path
    HOOK_COMMAND: str
    HOOK_SET: str
    ADAPTER: HostAdapter

    def our_hooks(self, config: Mapping[str, Any]) -> OurHooks: ...

    def hooks_problems(self, project: Path) -> list[str]: ...


def installer(host: HookFileHost, project: Path) -> str:
    return installer_command(host.HOOK_SET, project)


def hook_file(host: HookFileHost, options: Options) -> tuple[dict[str, str], list[Check]]:
    """Our hook commands by event (none when not installed), and the rows every host with
    a hook file shares: installed as the host runs them, the launcher's python3, the state
    folder, the isolation level."""
    name, project, fix = (
        host.ADAPTER.contract.name,
        options.project,
        installer(host, options.project),
    )
    hooks = our_hooks(name, project, host.HOOKS_FILE, host.our_hooks, fix)
    if isinstance(hooks, Check):
        return {}, [hooks]
    commands = {event: str(hook.get(host.HOOK_COMMAND)) for event, hook in hooks.items()}
    root = options.plugin_root or next(filter(None, map(plugin_root, commands.values())), None)
    rows = [
        installed(name, hooks, host.hooks_problems(project), fix),
        hooks_python(name, root, project, fix),
    ]
    state = host.ADAPTER.state_dir()
    if state is not None:
        rows.append(writable_folder(name, state))
    return commands, [*rows, isolation_level(name)]
