"""The gate's own pytest reads bytecode only the gate wrote, and witnessed unchanged since.

Compiling pytest, xdist and pytest-acceptance afresh in every process of every gate run
costs seconds. Keeping bytecode between runs is only safe for bytecode the gate compiled
itself, that nothing has touched since: a ``.pyc`` is code Python runs without reading its
source. So the flow keeps one folder (``flows/<key>/bytecode``):

- the gate fills it (``compileall`` of the packages its run imports, plus one import of
  them for the standard library they load), then records the stat key of every file and
  folder in it: device, inode, size and ctime, which no process can set back;
- before each run, and after it, every key must be exactly as recorded. A file rewritten,
  replaced, added or removed, even and restored, changes a key (a folder's ctime changes
  with its entries). Before a run, that means: rebuild. After it: the run is not trusted;
- the gate's pytest and its workers read it with writing off (``PYTHONDONTWRITEBYTECODE``),
  and the Pythons its criteria start use another folder, fresh for each run.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict

from pytest_acceptance.claude.flow_state import Flow, write_json

Keys = Dict[str, str]
_BUILD_TIMEOUT = 300.0
# What `python -m pytest --acceptance` imports in the gate's run (plugin autoload is off).
GATE_MODULES = (
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "xdist",
    "execnet",
    "pytest_acceptance",
    "yaml",
    "_yaml",
    "markdown_it",
    "mdurl",
)


class BytecodeError(Exception):
    """The gate's bytecode folder cannot be built or trusted."""


def folder(flow: Flow) -> Path:
    return flow.folder / "bytecode"


def ready(flow: Flow, python: str, env: dict[str, str]) -> str:
    """The folder, exactly as the gate last recorded it, or rebuilt and recorded now."""
    target = folder(flow)
    if keys(target) == _recorded(flow) and _recorded(flow):
        return str(target)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, mode=0o700)
    _build(python, target, GATE_MODULES, env)
    write_json(flow.folder / "bytecode.json", keys(target))
    return str(target)


def untouched(flow: Flow) -> bool:
    """Whether every file and folder of the bytecode folder still has its recorded key."""
    recorded = _recorded(flow)
    return bool(recorded) and keys(folder(flow)) == recorded


def keys(root: Path) -> Keys:
    """path -> stat key, for every entry under ``root`` and ``root`` itself."""
    found: Keys = {}
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        found[directory] = _key(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                found[entry.path] = _key(entry.path)
    return found


def _key(path: str) -> str:
    try:
        info = os.lstat(path)
    except OSError:
        return "absent"
    return f"{info.st_mode},{info.st_dev},{info.st_ino},{info.st_size},{info.st_ctime_ns}"


def _recorded(flow: Flow) -> Keys:
    try:
        data = json.loads((flow.folder / "bytecode.json").read_bytes())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _build(python: str, target: Path, modules: tuple[str, ...], env: dict[str, str]) -> None:
    """compileall of the packages (their folders), then an import of each module, so the
    standard library they load at import is compiled too; writing on, into ``target``."""
    environment = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(target)
    imports = "".join(
        f"try:\n import {name}\nexcept Exception:\n pass\n"
        for name in modules
        if name.isidentifier()
    )
    script = (
        "import compileall, importlib.util, os, sys\n"
        "for name in sys.argv[1:]:\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    for place in (spec and spec.submodule_search_locations) or []:\n"
        "        compileall.compile_dir(place, quiet=2)\n" + imports
    )
    try:
        done = subprocess.run(
            [python, "-I", "-X", f"pycache_prefix={target}", "-c", script, *modules],
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_BUILD_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise BytecodeError(f"cannot compile the gate's packages ({error})") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace")[-300:]
        raise BytecodeError(f"compiling the gate's packages failed: {tail}")
