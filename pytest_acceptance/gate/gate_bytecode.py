"""The gate's Pythons read bytecode only the gate wrote, and witnessed unchanged since.

Compiling pytest, its plugins and the standard library afresh in every process of every
gate run costs seconds. Keeping bytecode between runs is only safe for bytecode the gate
compiled itself, that nothing has touched since: a ``.pyc`` is code Python runs without
reading its source. So the gate keeps two kinds of folder in the plugin's state
(``bytecode/``), each built and witnessed the same way:

- ``gate-<key>``, for the gate's own pytest and its workers (and the probe at /implement):
  ``compileall`` of the packages that run imports (plugin autoload is off there), plus one
  import of them for the standard library they load; its key names the interpreter and the
  digests the flow pinned of those packages, so an upgrade builds a new one;
- ``criteria-<key>``, for the Pythons the criteria start: the modules a criterion's pytest
  imports at start-up with the installed plugins loaded (found by one start-up in a
  throwaway folder), the project's own files left out; its key names the interpreter and
  those source files.

Both are compiled as *checked-hash* ``.pyc`` files: Python uses one only while its source
still hashes the same, so a folder can never stand for code other than the source as it is
now, whatever became of the environment since the build.

Each is built in a fresh folder, moved into place, and then the gate records the stat key of
every file and folder in it: device, inode, size and ctime, which no process can set back.
Before each run, and after it, every key must be exactly as recorded; after the run, as the
run's own check witnessed them before it started. A file rewritten, replaced, added or
removed, even and restored, changes a key (a folder's ctime changes with its entries).
Before a run, that means: rebuild. After it: the run is not trusted. Every Python of the run
reads with writing off (``PYTHONDONTWRITEBYTECODE``, ``-B``), so an honest run leaves both
folders as they were; what the criteria's Pythons compile besides stays in memory.

The folders are kept across flows, as the environment's digests are
(environment_digests.py): what a kept folder can decide is the bytecode of the environment
as it is at the flow's start, and code that could plant a folder and its record before
/implement could as well rewrite the environment itself. Paths in a record are relative to
its folder, so a folder moved whole with its record keeps its keys.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, Mapping

from pytest_acceptance.gate.flow_state import data_dir, write_json
from pytest_acceptance.tree.hostile import read_regular_or_none, write_atomic

try:
    import fcntl
except ImportError:  # pragma: no cover - not Unix: builds are not serialised
    fcntl = None  # type: ignore[assignment]

Keys = Dict[str, str]
_BUILD_TIMEOUT = 300.0
STORE = "bytecode"  # in the plugin's state
GATE = "gate"
CRITERIA = "criteria"
_UNUSED_DAYS = 14.0  # a folder no gate run asked for in that long is removed
_POINTER_LIMIT = 16 << 20  # bytes: a pointer with the sources the witness may list
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


@dataclass(frozen=True)
class Folder:
    """A bytecode folder the gate built, and its keys as witnessed when a run was to use it."""

    path: Path
    keys: Keys

    def untouched(self) -> bool:
        """Whether every file and folder in it still has the key witnessed then."""
        return keys(self.path) == self.keys


def ready(python: str, packages: Mapping[str, str], env: dict[str, str]) -> Folder:
    """The gate's own folder for ``python`` with ``packages`` (path: digest of the files of
    the packages its run imports, as pinned), exactly as recorded, or built now."""
    identity = _identity(python, GATE, sorted(packages.items()))
    folder = _ready(GATE, identity, lambda target: _build(python, target, GATE_MODULES, env))
    with contextlib.suppress(OSError):  # only the probe's speed depends on it
        write_atomic(_pointer(python), folder.path.name, mode=0o600)
    return folder


def latest(python: str) -> Folder | None:
    """The gate's own folder the last run of ``python`` used, while it is exactly as
    recorded; None otherwise. The probe at /implement reads it: before the pin, which
    packages the gate's run imports is not known yet, and checked-hash bytecode stands only
    for its sources as they are."""
    raw = read_regular_or_none(_pointer(python), 256)
    name = raw.decode("ascii", "replace").strip() if raw else ""
    if re.fullmatch(GATE + "-[0-9a-f]{32}", name) is None:
        return None
    target = data_dir() / STORE / name
    recorded = _recorded(target.with_name(f"{name}.json"))
    return Folder(target, recorded) if recorded and keys(target) == recorded else None


def _pointer(python: str) -> Path:
    return data_dir() / STORE / f"latest-{_identity(python, GATE, None)}"


@dataclass(frozen=True)
class Sources:
    """What the criteria's folder is built from: source files of the environment."""

    plain: tuple[str, ...]
    rewritten: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"plain": list(self.plain), "rewritten": list(self.rewritten)}

    @classmethod
    def from_json(cls, value: object) -> Sources | None:
        """The sources `value` holds, or None when it is not exactly a record of them."""
        if not isinstance(value, dict) or set(value) != {"plain", "rewritten"}:
            return None
        plain, rewritten = value["plain"], value["rewritten"]
        if not all(isinstance(part, list) and _all_str(part) for part in (plain, rewritten)):
            return None
        return cls(tuple(plain), tuple(rewritten))


NOTHING = Sources((), ())


def criteria_ready(python: str, sources: Sources, env: dict[str, str], repo: str = "") -> Folder:
    """The criteria's folder for these `sources`, exactly as recorded, or built now (a new
    one also when the witness has seen new modules since). With `repo`, the folder and its
    sources are what the next /implement of that project starts from (latest_criteria)."""
    identity = _criteria_identity(python, sources)
    folder = _ready(CRITERIA, identity, lambda target: build_criteria(python, target, sources, env))
    if repo:
        kept = {"folder": folder.path.name, "sources": sources.to_json()}
        with contextlib.suppress(OSError):  # only the next pin's speed depends on it
            for pointer in (_criteria_pointer(python, repo), _criteria_pointer(python, "")):
                write_atomic(pointer, json.dumps(kept), mode=0o600)
    return folder


def latest_criteria(python: str, repo: str = "") -> tuple[Folder, Sources] | None:
    """The criteria's folder the last gate run of `repo` (or of any project, for "") read,
    with what it was built from, while it is exactly as recorded; None otherwise. The pin at
    /implement collects with it (checked-hash, it stands only for its sources as they are)
    and starts the flow's list of modules from the sources of the project's own: names of
    files to compile, never code to trust."""
    raw = read_regular_or_none(_criteria_pointer(python, repo), _POINTER_LIMIT)
    try:
        kept = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(kept, dict) or set(kept) != {"folder", "sources"}:
        return None
    sources = Sources.from_json(kept["sources"])
    if sources is None or kept["folder"] != f"{CRITERIA}-{_criteria_identity(python, sources)}":
        return None
    target = data_dir() / STORE / kept["folder"]
    recorded = _recorded(target.with_name(f"{kept['folder']}.json"))
    if not recorded or keys(target) != recorded:
        return None
    return Folder(target, recorded), sources


def _all_str(items: list[object]) -> bool:
    return all(isinstance(item, str) for item in items)


def _criteria_identity(python: str, sources: Sources) -> str:
    return _identity(python, CRITERIA, [list(sources.plain), list(sources.rewritten)])


def _criteria_pointer(python: str, repo: str) -> Path:
    return data_dir() / STORE / f"latest-{_identity(python, CRITERIA, repo)}"


def _identity(python: str, name: str, built_from: object) -> str:
    text = json.dumps([python, name, built_from])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _ready(name: str, identity: str, build: Callable[[Path], None]) -> Folder:
    store = data_dir() / STORE
    target = store / f"{name}-{identity}"
    record = store / f"{name}-{identity}.json"
    with _building(store):
        recorded = _recorded(record)
        if recorded and keys(target) == recorded:
            _mark_used(record)
            return Folder(target, recorded)
        record.unlink(missing_ok=True)  # never a record of a half build
        fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=store))
        try:
            build(fresh)
            _replace(fresh, target)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        witnessed = keys(target)
        write_json(record, witnessed)
        _prune(store, name)
    return Folder(target, witnessed)


@contextlib.contextmanager
def _building(store: Path) -> Iterator[None]:
    """One gate process at a time checks or builds the kept folders: two flows' runs may
    share one, and neither may replace it under the other."""
    store.mkdir(parents=True, exist_ok=True, mode=0o700)
    if fcntl is None:
        yield
        return
    descriptor = os.open(store / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _replace(fresh: Path, target: Path) -> None:
    """``fresh`` moved to ``target``; what stood there (a stale or changed folder) removed."""
    if os.path.lexists(target):
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.rename(target, old / "folder")
        shutil.rmtree(old, ignore_errors=True)
    os.rename(fresh, target)


def _mark_used(record: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(record)


def _prune(store: Path, name: str) -> None:
    """Folders of this kind that no run asked for in _UNUSED_DAYS go, with their records,
    and the half builds of processes that died building (none is building: the lock)."""
    for leftover in store.glob(f".{name}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    limit = time.time() - _UNUSED_DAYS * 86400
    for record in store.glob(f"{name}-*.json"):
        with contextlib.suppress(OSError):
            if record.stat().st_mtime < limit:
                _remove(record)


def remove_changed(store: Path) -> None:
    """Every kept folder that is no longer as recorded goes, with its record: a folder
    changed since its build is never read again, only rebuilt."""
    with _building(store):
        for record in store.glob("*.json"):
            folder = record.with_name(record.name[: -len(".json")])
            if keys(folder) != _recorded(record):
                _remove(record)


def _remove(record: Path) -> None:
    with contextlib.suppress(OSError):
        record.unlink()
    shutil.rmtree(record.with_name(record.name[: -len(".json")]), ignore_errors=True)


def keys(root: Path) -> Keys:
    """path relative to ``root`` -> stat key, for every entry under ``root`` and ``root``
    itself (as ``.``); nothing for a root that is no folder of its own (a link is not
    followed: it would stand for whatever it points to)."""
    found: Keys = {}
    top = str(root)
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return found
    except OSError:
        return found
    pending = [top]
    while pending:
        directory = pending.pop()
        found[_relative(directory, top)] = _key(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                found[_relative(entry.path, top)] = _key(entry.path)
    return found


def _relative(path: str, top: str) -> str:
    return "." if path == top else path[len(top) + 1 :]


def _key(path: str) -> str:
    try:
        info = os.lstat(path)
    except OSError:
        return "absent"
    return f"{info.st_mode},{info.st_dev},{info.st_ino},{info.st_size},{info.st_ctime_ns}"


def _recorded(record: Path) -> Keys:
    try:
        data = json.loads(record.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        return {}
    return {str(k): v for k, v in data.items()}


# What the imports wrote (the standard library they load), compiled again as checked-hash.
_CHECKED_HASH_OF_IMPORTED = """
for module in list(sys.modules.values()):
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if isinstance(origin, str) and origin.endswith(".py") and os.path.isfile(origin):
        try:
            cached = importlib.util.cache_from_source(origin)
            py_compile.compile(origin, cfile=cached, doraise=True, invalidation_mode=mode)
        except Exception:
            pass
"""


def _build(python: str, target: Path, modules: tuple[str, ...], env: dict[str, str]) -> None:
    """compileall of the packages (their folders), then an import of each module, so the
    standard library they load at import is compiled too; writing on, into ``target``, every
    file checked-hash."""
    environment = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(target)
    imports = "".join(
        f"try:\n import {name}\nexcept Exception:\n pass\n"
        for name in modules
        if name.isidentifier()
    )
    script = (
        "import compileall, importlib.util, os, py_compile, sys\n"
        "mode = py_compile.PycInvalidationMode.CHECKED_HASH\n"
        "for name in sys.argv[1:]:\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    for place in (spec and spec.submodule_search_locations) or []:\n"
        "        compileall.compile_dir(place, quiet=2, invalidation_mode=mode)\n"
        + imports
        + _CHECKED_HASH_OF_IMPORTED
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
