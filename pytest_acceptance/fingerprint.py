"""A fingerprint of the working tree, so a verdict can say which tree it was computed on.

Standard library only: the Claude Code hooks import this module by path (they run under
the user's python3 without the package installed) to check that the tree has not changed
since the last verification.

In a git work tree the fingerprint covers HEAD plus the content of every file that differs
from it (modified, staged, deleted, untracked and not ignored); ignored files never count.
Outside git it covers the path, size and mtime of every file under the root.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

# Directories that never describe the state under verification.
_SKIP_DIRS = frozenset(
    {".git", ".acceptance", "__pycache__", ".pytest_cache", "node_modules", ".venv", "venv"}
)


def tree_fingerprint(root: str | os.PathLike[str]) -> str:
    """``git:<sha256>`` inside a git work tree, else ``files:<sha256>``."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return "files:" + _files_digest(Path(root))
    return "git:" + _git_digest(Path(top.decode().strip()))


def _git(cwd: str | os.PathLike[str], *args: str) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _git_digest(top: Path) -> str:
    digest = hashlib.sha256()
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD")
    digest.update(b"head\0" + (head.strip() if head else b"none") + b"\0")
    status = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all") or b""
    entries = status.split(b"\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[:1] in (b"R", b"C"):  # -z prints the rename source as the next field
            index += 1
        digest.update(code + b"\0" + path + b"\0" + _content_hash(top / os.fsdecode(path)))
    return digest.hexdigest()


def _content_hash(path: Path) -> bytes:
    try:
        if path.is_symlink():
            return b"link:" + os.fsencode(os.readlink(path))
        if path.is_dir():  # an untracked nested repository
            return b"dir"
        content = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                content.update(chunk)
        return content.hexdigest().encode()
    except OSError:
        return b"missing"


def _files_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(directory, name)
            try:
                stat = path.lstat()
            except OSError:
                continue
            relative = path.relative_to(root).as_posix()
            digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()
