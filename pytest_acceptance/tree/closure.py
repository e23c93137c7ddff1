"""The environment a verification runs in, pinned by content: every file, not known shapes.

At /implement the gate pins the *closure* of what its run can execute outside the project's
own tree: every file under the interpreter's site folders, its standard library, its
``bin`` folder, the sources of editable installs that live outside the project, and the
pytest configuration files in every folder above the project. At the gate each is
compared: any file added, removed or changed is named, whatever it is (a third-party
module, an import hook, a ``.pth`` file, a console script), so a new kind of tampering
needs no new detector.

Bytecode is not part of it: ``__pycache__`` folders are left out, and the gate's runs read
no bytecode the agent can write (a private ``PYTHONPYCACHEPREFIX``). A ``.pyc`` file
*outside* ``__pycache__`` is different: Python imports it even without a source (a
sourceless module), so it is pinned like any other file.

The pin doubles as a cache: each file's stat key (device, inode, size, ctime: no process
can set ctime) is kept beside its digest, and an unchanged key is not read again. Keys taken
within ``RACY_SECONDS`` of the pin are never trusted (a write in the same clock tick).

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import importlib.machinery
import os
import stat
import time
from typing import Dict, List

from pytest_acceptance.tree import folders
from pytest_acceptance.tree.file_hash import stat_key
from pytest_acceptance.tree.hostile import file_digest

# path -> [stat key, digest or what the entry is]
Pin = Dict[str, List[str]]
RACY_SECONDS = 3.0
MAX_FILES = 400_000
_LEFT_OUT = folders.NOT_IN_THE_CLOSURE
# What Python imports as a module, longest first (an extension's suffix ends in ".so").
_IMPORTABLE = tuple(sorted(set(importlib.machinery.all_suffixes()), key=len, reverse=True))
# pytest's configuration files, in its order of precedence (pytest 9 reads the .toml ones):
# the one list the pin, the gate and criterion integrity use.
PYTEST_CONFIG_FILES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
# What pytest could read in the folders above a project.
_READ_ABOVE = (*PYTEST_CONFIG_FILES, "conftest.py")


class ClosureError(Exception):
    """The closure cannot be pinned or checked (too large, too slow)."""


class Places:
    """What a closure covers: folders walked file by file, single files (present or not),
    and folders inside the roots that are left out (not on the interpreter's path)."""

    def __init__(self, roots: list[str], files: list[str], left_out: list[str]) -> None:
        self.roots, self.files, self.left_out = roots, files, frozenset(left_out)

    def as_dict(self) -> dict[str, list[str]]:
        return {"roots": self.roots, "files": self.files, "left_out": sorted(self.left_out)}


def pin(places: Places, deadline_at: float, known: Pin | None = None) -> Pin:
    """Every file under the roots and each single file (present or not), by content; a
    digest in ``known`` (an earlier pin) is taken while its file's stat key is unchanged."""
    known = known or {}
    pinned: Pin = {}
    for path in _listing(places, deadline_at):
        pinned[path] = _describe(path, known.get(path))
    return pinned


def changes(pinned: Pin, places: Places, deadline_at: float) -> list[str]:
    """``path: how`` for every file added, removed or changed since ``pinned``."""
    found = []
    now = set()
    for path in _listing(places, deadline_at):
        now.add(path)
        before = pinned.get(path)
        if before is None:
            found.append(f"{path}: added")
        elif _describe(path, before)[1] != before[1]:
            found.append(f"{path}: changed")
    found += [f"{path}: removed" for path in pinned if path not in now]
    return found


def _describe(path: str, before: list[str] | None) -> list[str]:
    """[stat key, digest]; the digest of ``before`` when the stat key says unchanged."""
    try:
        info = os.lstat(path)
    except OSError:
        return ["", "absent"]
    if stat.S_ISLNK(info.st_mode):
        try:
            return ["", "link:" + os.readlink(path)]
        except OSError:
            return ["", "link:unreadable"]
    if not stat.S_ISREG(info.st_mode):
        return ["", f"special:{stat.S_IFMT(info.st_mode)}"]
    key = stat_key(info).decode()
    if before is not None and before[0] == key:  # an untrusted key ("") never matches
        return before
    trusted = time.time_ns() - info.st_ctime_ns > RACY_SECONDS * 1e9
    return [key if trusted else "", file_digest(path, follow=False) or "unreadable"]


def _listing(places: Places, deadline_at: float) -> list[str]:
    listed = list(dict.fromkeys(places.files))
    for root in _outermost(places.roots):
        listed += _walk(root, places.left_out, deadline_at, len(listed))
    return listed


def _outermost(roots: list[str]) -> list[str]:
    """The roots no other root's walk reaches (a venv's lib folder holds its site-packages;
    a checkout's walk does not enter its hidden .venv, so a site folder there stays a root)."""
    unique = sorted(set(roots))
    return [root for root in unique if not any(_reaches(other, root) for other in unique)]


def _reaches(outer: str, inner: str) -> bool:
    prefix = outer.rstrip(os.sep) + os.sep
    if inner == outer or not inner.startswith(prefix):
        return False
    between = inner[len(prefix) :].split(os.sep)
    return not any(_unimportable(part) for part in between)


def _walk(
    root: str,
    left_out: frozenset[str],
    deadline_at: float,
    count: int,
    skipped: frozenset[str] = _LEFT_OUT,
    folders_too: bool = False,
) -> list[str]:
    """Every entry under ``root`` (links listed, never followed; with ``folders_too`` each
    folder walked too, ending in a separator), ``__pycache__`` and ``.git`` left out;
    ClosureError past ``MAX_FILES`` or the deadline."""
    found: list[str] = []
    pending = [root]
    while pending:
        if time.monotonic() > deadline_at:
            raise ClosureError(f"listing {root} did not finish within the gate's deadline")
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:  # closed on a Ctrl-C mid-listing too
                entries = list(listing)
        except OSError:
            continue  # a folder that vanished or is unreadable: its files count as removed
        for entry in entries:
            if entry.name in skipped:
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.path not in left_out and not _unimportable(entry.name):
                    pending.append(entry.path)
                    if folders_too:
                        found.append(os.path.join(entry.path, ""))
            else:
                found.append(entry.path)
        if count + len(found) > MAX_FILES:
            raise ClosureError(
                f"more than {MAX_FILES:,} files in the interpreter's environment; pin a "
                "smaller virtualenv for the gate (ACCEPTANCE_GATE_PYTHON)"
            )
    return found


def _unimportable(name: str) -> bool:
    """A folder no import reaches: hidden ones (.hypothesis, .mypy_cache, .venv: a dotted
    name is no package) and another project's environments. An editable install's root is
    a whole checkout; only what can be imported from it is its code."""
    return name.startswith(".") or name in folders.ENVIRONMENTS


def config_above(repo: str) -> list[str]:
    """The pytest configuration files pytest could read in the folders above ``repo``
    (present or not: one created later counts as added)."""
    found = []
    folder = os.path.dirname(os.path.realpath(repo))
    while True:
        found += [os.path.join(folder, name) for name in _READ_ABOVE]
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def outside(roots: list[str], repo: str) -> list[str]:
    """The roots that are not the project itself or inside it (the project's own files are
    the agent's work, fingerprinted by the gate as the tree), deduplicated, real paths."""
    real_repo = os.path.realpath(repo)
    kept = []
    for root in roots:
        real = os.path.realpath(root)
        if real == real_repo or (real.startswith(real_repo + os.sep) and not in_environment(real)):
            continue
        if os.path.isdir(real) and real not in kept:
            kept.append(real)
    return kept


def in_environment(path: str) -> bool:
    """A virtualenv's folder inside the project is the environment, not the work."""
    return "site-packages" in path.split(os.sep) or os.path.basename(path) == "bin"


# What Python's site imports at start-up wherever it finds it on the import path, before any
# code of the run can watch: a new project module of these names would run in every Python
# whose path holds the project (PYTHONPATH=., python -m).
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})


def module_names(pinned: Pin, roots: list[str]) -> set[str]:
    """The top-level modules and packages the environment's folders offer, and those Python
    looks for at start-up: what a module of the same name in the project would shadow on
    the run's import path."""
    names = set(STARTUP_MODULES)
    for path in pinned:
        for root in roots:
            if path.startswith(root.rstrip(os.sep) + os.sep):
                first = path[len(root.rstrip(os.sep)) + 1 :].split(os.sep, 1)[0]
                name = first.split(".", 1)[0]
                if name.isidentifier() and not first.endswith((".dist-info", ".egg-info", ".pth")):
                    names.add(name)
    return names


def project_modules(repo: str, deadline_at: float) -> dict[str, str]:
    """relative path -> module name, for the modules the project's folders put first on an
    import path: every file Python imports as a module (source, sourceless ``.pyc``, native
    extension: ``importlib.machinery.all_suffixes()``) in folders that are no package
    (pytest's rootdir-relative imports and ``python -c`` put such folders on ``sys.path``),
    packages whose parent is no package, and inside packages the files that are not source
    (found before a ``.py`` of the same name, or with none). In a folder that is no
    package, also each folder that is none either (ending in a separator: a namespace
    package, imported where no module of its name exists anywhere) and each link (never
    followed: it may stand for a module, a package or a namespace package). An
    ``__init__`` that is not source, wherever it stands. Virtualenvs and .git are not the
    project's."""
    walked = _walk(repo, frozenset(), deadline_at, 0, folders.NOT_PROJECT_MODULES, True)
    relatives = [
        os.path.relpath(path, repo) + (os.sep if path[-1:] == os.sep else "") for path in walked
    ]
    packages = {os.path.dirname(r) for r in relatives if os.path.basename(r) == "__init__.py"}
    found = {}
    for relative in relatives:
        if relative.endswith(os.sep):
            folder, name = os.path.split(relative[:-1])
            if folder not in packages and relative[:-1] not in packages and name.isidentifier():
                found[relative] = name
            continue
        folder, name = os.path.split(relative)
        suffix = next((s for s in _IMPORTABLE if name.endswith(s)), None)
        stem = name[: -len(suffix)] if suffix else ""
        if (
            suffix is None
            and folder not in packages
            and os.path.islink(os.path.join(repo, relative))
        ):
            stem, suffix = name, ""  # a link, by its own name: whatever it points to
        if not stem or "." in stem:
            continue  # not a module name Python would import
        if stem == "__init__":
            # A package's own source is its parent package's business; an __init__ that is
            # not source makes its folder a package of that code wherever it stands.
            sourceless = suffix not in importlib.machinery.SOURCE_SUFFIXES
            if sourceless or (folder and os.path.dirname(folder) not in packages):
                found[relative] = os.path.basename(folder) or stem
        elif folder not in packages or suffix not in importlib.machinery.SOURCE_SUFFIXES:
            found[relative] = stem
    return found


def _native_init(relative: str) -> bool:
    """A native extension named ``__init__``: its folder becomes a package of that code."""
    base = os.path.basename(relative)
    sources = tuple(importlib.machinery.SOURCE_SUFFIXES)
    return base.startswith("__init__.") and not base.endswith(sources)


def new_modules(
    before: list[str], now: dict[str, str], names: set[str], missing: set[str]
) -> list[str]:
    """``path: why`` for each module the project gained that shadows one of ``names`` (the
    environment's modules, the project's own and those the environment's code asks for, as
    they were), each folder it gained that would be imported as a namespace package of a
    name in ``missing`` (one the environment's code asks for and nothing offers: a module
    of the name anywhere would be imported before it), each new sourceless ``.pyc``
    (bytecode Python imports without any source) and each new native ``__init__``."""
    known = set(before)
    found = []
    for relative, name in sorted(now.items()):
        if relative in known:
            continue
        if relative.endswith(tuple(importlib.machinery.BYTECODE_SUFFIXES)):
            found.append(f"{relative}: new bytecode without its source")
        elif _native_init(relative):
            found.append(f"{relative}: new native code that makes its folder a package")
        elif name in (missing if relative.endswith(os.sep) else names):
            found.append(f"{relative}: new, and named like a module the run could import")
    return found
