"""Where pytest-acceptance keeps what it writes: ``<rootdir>/.acceptance/``.

The directory ignores itself in git (like pytest's own cache), so a verification run never
changes what ``git status`` shows — or the tree fingerprint the verdict records.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

OUTPUT_DIR = ".acceptance"


def output_dir(rootdir: Path) -> Path:
    directory = rootdir / OUTPUT_DIR
    directory.mkdir(exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by pytest-acceptance automatically.\n*\n")
    return directory


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` through a temp file unique to this process and thread, then rename:
    a reader never sees half a file, and concurrent writers (xdist workers) never tear it.
    (mkstemp's random names cost up to a millisecond each on some file systems.)"""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:  # os-level calls: a fragment per criterion makes every syscall count
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(handle, view) :]
        finally:
            os.close(handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Compact JSON (json's C encoder only runs without indent), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
