"""The gate's Pythons read bytecode only the gate wrote, and witnessed unchanged since.

Compiling pytest, its plugins and the standard library afresh in every process of every
gate run costs seconds. Keeping bytecode between runs is only safe for bytecode the gate
compiled itself, that nothing has touched since: a ``.pyc`` is code Python runs without
reading its source. So the flow keeps two folders, each built and witnessed the same way:

- ``flows/<key>/bytecode``, for the gate's own pytest and its workers: ``compileall`` of
  the packages that run imports (plugin autoload is off there), plus one import of them for
  the standard library they load;
- ``flows/<key>/criteria-bytecode``, for the Pythons the criteria start: the modules a
  criterion's pytest imports at start-up with the installed plugins loaded (found by one
  start-up in a throwaway folder), the project's own files left out. They are compiled as
  *checked-hash* ``.pyc`` files: Python uses one only while its source still hashes the
  same, so the folder can never stand for code other than the source as it is now;

then the gate records the stat key of every file and folder in each: device, inode, size
and ctime, which no process can set back. Before each run, and after it, every key must be
exactly as recorded. A file rewritten, replaced, added or removed, even and restored,
changes a key (a folder's ctime changes with its entries). Before a run, that means:
rebuild. After it: the run is not trusted. Every Python of the run reads with writing off
(``PYTHONDONTWRITEBYTECODE``, ``-B``), so an honest run leaves both folders as they were;
what the criteria's Pythons compile besides stays in memory.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict

from pytest_acceptance.claude.flow_state import Flow, write_json

Keys = Dict[str, str]
_BUILD_TIMEOUT = 300.0
GATE = "bytecode"
CRITERIA = "criteria-bytecode"
_BUILT_FROM = ""  # in a folder's record: what it was built from (never a path)
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


def folder(flow: Flow, name: str = GATE) -> Path:
    return flow.folder / name


def ready(flow: Flow, python: str, env: dict[str, str]) -> str:
    """The gate's own folder, exactly as the gate last recorded it, or rebuilt now."""
    return _ready(flow, GATE, lambda target: _build(python, target, GATE_MODULES, env))


@dataclass(frozen=True)
class Sources:
    """What the criteria's folder is built from: source files of the environment."""

    plain: tuple[str, ...]
    rewritten: tuple[str, ...]

    def identity(self) -> str:
        text = json.dumps([self.plain, self.rewritten])
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


NOTHING = Sources((), ())


def criteria_ready(flow: Flow, python: str, sources: Sources, env: dict[str, str]) -> str:
    """The criteria's folder, exactly as the gate last recorded it for these `sources`, or
    rebuilt now (also when the witness has seen new modules since)."""
    return _ready(
        flow,
        CRITERIA,
        lambda target: build_criteria(python, target, sources, env),
        sources.identity(),
    )


def untouched(flow: Flow, name: str = GATE) -> bool:
    """Whether every file and folder of the folder still has its recorded key."""
    recorded = _recorded(flow, name)
    recorded.pop(_BUILT_FROM, None)
    return bool(recorded) and keys(folder(flow, name)) == recorded


def _ready(flow: Flow, name: str, build: Callable[[Path], None], built_from: str = "") -> str:
    target = folder(flow, name)
    recorded = _recorded(flow, name)
    if recorded.pop(_BUILT_FROM, "") == built_from and recorded and keys(target) == recorded:
        return str(target)
    (flow.folder / f"{name}.json").unlink(missing_ok=True)  # never a record of a half build
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, mode=0o700)
    build(target)
    record = keys(target)
    if built_from:
        record[_BUILT_FROM] = built_from
    write_json(flow.folder / f"{name}.json", record)
    return str(target)


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


def _recorded(flow: Flow, name: str) -> Keys:
    try:
        data = json.loads((flow.folder / f"{name}.json").read_bytes())
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
    _compile([python, "-I", "-X", f"pycache_prefix={target}", "-c", script, *modules], environment)


# Compiles the source files named on stdin (JSON: "plain" and "rewritten" lists) where the
# prefix puts them, running none of them: "plain" as checked-hash .pyc files, "rewritten" as
# pytest's assertion rewriting caches them (its private helpers; where they are missing,
# those modules are simply rewritten afresh by each criterion's pytest).
_BUILD_SCRIPT = """
import importlib.util, json, os, py_compile, stat, sys
from pathlib import Path
wanted = json.loads(sys.stdin.read())
mode = py_compile.PycInvalidationMode.CHECKED_HASH
def regular(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)  # a FIFO would block the read
    except OSError:
        return False
for path in wanted["plain"]:
    try:
        if regular(path):
            cached = importlib.util.cache_from_source(path)
            py_compile.compile(path, cfile=cached, doraise=True, invalidation_mode=mode)
    except (OSError, ValueError, SyntaxError, py_compile.PyCompileError):
        pass  # compiled afresh where it is imported
try:  # every private name used below, or none of them
    from _pytest.assertion import rewrite
    rewrite._rewrite_test, rewrite._write_pyc_fp, rewrite.get_cache_dir, rewrite.PYC_TAIL
except (ImportError, AttributeError):
    wanted["rewritten"] = []
for path in wanted["rewritten"]:
    try:
        if regular(path):
            source = Path(path)
            source_hash, code = rewrite._rewrite_test(source, None)
            folder = rewrite.get_cache_dir(source)
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / (source.name[:-3] + rewrite.PYC_TAIL), "wb") as out:
                rewrite._write_pyc_fp(out, source_hash, code)
    except Exception:
        pass  # rewritten afresh where it is imported
"""


def build_criteria(python: str, target: Path, sources: Sources, env: dict[str, str]) -> None:
    """The criteria's bytecode of `sources` (the environment's modules a criterion's pytest
    imports, as the witness saw them), compiled by the pinned interpreter under ``-I``:
    nothing the project wrote runs here."""
    if not sources.plain and not sources.rewritten:
        return
    command = [python, "-I", "-X", f"pycache_prefix={target}", "-c", _BUILD_SCRIPT]
    wanted = {"plain": list(sources.plain), "rewritten": list(sources.rewritten)}
    _compile(command, env, json.dumps(wanted).encode("utf-8", "surrogateescape"))


def _compile(command: list[str], env: dict[str, str], stdin: bytes = b"") -> None:
    try:
        done = subprocess.run(
            command,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=_BUILD_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise BytecodeError(f"cannot compile the gate's bytecode ({error})") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace")[-300:]
        raise BytecodeError(f"compiling the gate's bytecode failed: {tail}")
