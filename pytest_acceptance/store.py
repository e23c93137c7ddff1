"""Where pytest-acceptance keeps what it writes: ``<rootdir>/.acceptance/``.

The directory ignores itself in git (like pytest's own cache), so a verification run never
changes what ``git status`` shows — or the tree fingerprint the verdict records.
"""

from __future__ import annotations

import json
import os
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


def write_json_atomic(path: Path, data: Any) -> None:
    """Temp file + rename: a reader never sees half a file, even with concurrent writers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Compact: json's C encoder only runs without indent, and verdicts can be large.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    temp.write_text(text + "\n", encoding="utf-8")
    os.replace(temp, path)
