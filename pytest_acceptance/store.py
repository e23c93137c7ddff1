"""Where pytest-acceptance keeps what it writes: ``<rootdir>/.acceptance/``.

The directory ignores itself in git (like pytest's own cache), so a verification run never
changes what ``git status`` shows — or the tree fingerprint the verdict records.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pytest_acceptance.tree.hostile import write_atomic

OUTPUT_DIR = ".acceptance"
VERDICT_FILE = "verdict.json"


def output_dir(rootdir: Path) -> Path:
    """``<rootdir>/.acceptance``, created with its ``.gitignore``; OSError when it cannot be
    (``describe_os_error`` says why in words)."""
    directory = rootdir / OUTPUT_DIR
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(directory))
    directory.mkdir(exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by pytest-acceptance automatically.\n*\n")
    return directory


def optional_dir(rootdir: Path, name: str) -> Path | None:
    """``.acceptance/<name>`` for something the run can do without (a cache): None when it
    cannot be created (a read-only project, ``.acceptance`` not a directory)."""
    try:
        return output_dir(rootdir) / name
    except OSError:
        return None


def verdict_path(rootdir: Path) -> Path:
    """``<rootdir>/.acceptance/verdict.json``: where a run's verdict goes (nothing created)."""
    return rootdir / OUTPUT_DIR / VERDICT_FILE


def forget_verdict(rootdir: Path) -> None:
    """Remove the last run's verdict.json as a run starts: if this run is killed before it
    decides, no verdict is better than an old one that looks current."""
    with contextlib.suppress(OSError):
        verdict_path(rootdir).unlink()


def describe_os_error(error: BaseException) -> str:
    """An OSError in words a user acts on: the cause first, the path last."""
    if isinstance(error, OSError):
        causes = {
            errno.ENOSPC: "the disk is full",
            errno.EDQUOT: "the disk quota is exceeded",
            errno.EROFS: "the file system is read-only",
            errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted",
            errno.ENOTDIR: "a path component is not a directory",
            errno.ENOENT: "the directory no longer exists",
            errno.ENAMETOOLONG: "the file name is too long",
            errno.EEXIST: "a file is in the way",
        }
        cause = causes.get(error.errno or 0, error.strerror or str(error))
        where = f" ({error.filename})" if error.filename else ""
        return f"{cause}{where}"
    if isinstance(error, RecursionError):
        return "the data is nested too deeply"
    return str(error)


def write_json_atomic(path: Path, data: Any) -> None:
    """Compact JSON (json's C encoder only runs without indent), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")


class RunLocked(Exception):
    """Another run held the lock for longer than this run would wait; ``str()`` names it."""


LOCK_POLL = 0.1  # seconds between tries while another run holds the lock


def lock_run(
    path: Path,
    what: str,
    wait: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
) -> IO[str] | None:
    """Hold the lock file ``path`` for this run (released when the process ends, however
    it ends). While another live run holds it, wait up to ``wait`` seconds, first telling
    ``on_wait`` who holds it. None when there is nowhere to lock (the run then fails on
    writing anyway); RunLocked when the other run still holds it after ``wait`` seconds."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115
    except OSError:
        return None
    try:
        _wait_for_lock(handle, fcntl, what, wait, on_wait)
    except OSError:
        handle.close()
        return None
    except BaseException:  # RunLocked, or Ctrl-C while waiting
        handle.close()
        raise
    with contextlib.suppress(OSError):  # unbuffered: closing must never fail on a full disk
        os.ftruncate(handle.fileno(), 0)
        os.write(handle.fileno(), f"pid {os.getpid()}".encode())
    return handle


def _wait_for_lock(
    handle: IO[str],
    fcntl: Any,
    what: str,
    wait: float,
    on_wait: Callable[[str], None] | None,
) -> None:
    """Take the lock, polling (so Ctrl-C stops the wait) until ``wait`` seconds are over."""
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = lock_holder(handle)
        if time.monotonic() >= deadline:
            waited = f"waited {round(wait, 1):g} s for it" if wait > 0 else "does not wait for it"
            raise RunLocked(
                f"another pytest-acceptance run ({holder}) is verifying {what}; this run "
                f"{waited} (ini acceptance_lock_timeout): let it finish (its verdict goes to "
                ".acceptance/verdict.json), or stop it, then run again"
            ) from None
        if not told and on_wait is not None:
            on_wait(
                f"another pytest-acceptance run ({holder}) is verifying {what}: waiting up to "
                f"{round(wait, 1):g} s for it to finish (ini acceptance_lock_timeout)"
            )
            told = True
        time.sleep(min(LOCK_POLL, max(deadline - time.monotonic(), 0.0)))


def lock_holder(handle: IO[str]) -> str:
    """``pid N`` as the holding run wrote it, or ``another process``."""
    with contextlib.suppress(OSError, ValueError):
        handle.seek(0)
        return handle.read(100).strip() or "another process"
    return "another process"
