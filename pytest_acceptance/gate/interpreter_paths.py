"""What the gate's interpreter path and its bin folder resolve to, pinned at /implement.

The gate runs the interpreter by the path it pinned (``<repo>/.venv/bin/python``: running
the resolved binary would lose the virtualenv), and puts that path's folder first on the
run's PATH (a criterion's ``python`` must be the venv's). Both are files the agent can
write: a swapped ``python`` symlink, or a ``bash``/``grep`` dropped into ``.venv/bin``,
would run instead of the real thing. So every symlink hop from the pinned path to the real
file, and every entry of the bin folder (type, link target, sha256), are recorded at pin
time and compared before each run. A new entry is accepted only when it shadows no command
of the rest of PATH (a console script pip installed, not a fake ``bash``).

Also the run's private bytecode folder: the gate's Pythons read no ``__pycache__`` of the
project or of the pinned packages (a forged unchecked-hash .pyc would run instead of the
source the gate hashed).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from pytest_acceptance.tree.hostile import file_digest

SYSTEM_FOLDERS = {"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"}
MAX_HOPS = 40


def absolute_python(python: str) -> str:
    """The pinned interpreter as an absolute path (a bare ``python3`` is looked up now, once)."""
    if os.sep in python:
        return os.path.abspath(python)
    return shutil.which(python) or python


def symlink_hops(path: str) -> list[list[str]]:
    """Each symlink met resolving `path` ([link, target]), then [final path, its sha256]."""
    hops: list[list[str]] = []
    pending = os.path.abspath(path)
    for _ in range(MAX_HOPS):
        parts = pending.split(os.sep)
        for index in range(2, len(parts) + 1):
            prefix = os.sep.join(parts[:index])
            try:
                target = os.readlink(prefix)
            except OSError:
                continue  # not a symlink (or missing: the digest below says so)
            hops.append([prefix, target])
            rest = parts[index:]
            pending = os.path.normpath(os.path.join(os.path.dirname(prefix), target, *rest))
            break
        else:
            return [*hops, [pending, file_digest(pending) or "not a regular file"]]
    return [*hops, [pending, "too many symbolic links"]]


def entry_kind(path: str) -> str:
    """One bin folder entry: "link -> target", "file <sha256>", "dir", or "other <mode>"."""
    try:
        status = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(status.st_mode):
        try:
            return f"link -> {os.readlink(path)}"
        except OSError:
            return "link"
    if stat.S_ISREG(status.st_mode):
        return f"file {file_digest(path)} mode {stat.S_IMODE(status.st_mode):o}"
    if stat.S_ISDIR(status.st_mode):
        return "dir"
    return f"other {status.st_mode:o}"


def bin_entries(python: str) -> dict[str, str]:
    """Every entry of the interpreter's folder (empty for a system folder: not the agent's,
    and too large to hash on every run)."""
    folder = os.path.dirname(python)
    if not folder or os.path.realpath(folder) in SYSTEM_FOLDERS:
        return {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    return {name: entry_kind(os.path.join(folder, name)) for name in names}


def changes(
    python: str, hops: list[list[str]], bin_before: dict[str, str], path_rest: str
) -> list[str]:
    """What differs from the pin (`hops`, `bin_before`): a changed hop, a changed/removed
    bin entry, a new bin entry that shadows a command found on `path_rest` (the run's PATH
    after the folder)."""
    found = []
    if symlink_hops(python) != hops:
        found.append(f"{python} (the interpreter path now resolves differently)")
    now = bin_entries(python)
    folder = os.path.dirname(python)
    for name, kind in bin_before.items():
        if now.get(name, "missing") != kind:
            found.append(os.path.join(folder, name))
    for name in sorted(set(now) - set(bin_before)):
        if shutil.which(name, path=path_rest) is not None:
            found.append(f"{os.path.join(folder, name)} (new, shadows {name} on PATH)")
    return found


@contextmanager
def private_pycache() -> Iterator[str]:
    """A fresh folder only this run uses for bytecode; removed afterwards."""
    folder = tempfile.mkdtemp(prefix="acceptance-gate-pycache-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
