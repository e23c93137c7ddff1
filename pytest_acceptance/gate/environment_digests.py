"""The environment's file digests, kept across flows so that /implement reads a file again
only when it changed.

Each /implement pins every file of the interpreter's environment by content (tree/closure.py):
hundreds of megabytes for a common virtualenv, read again at every /implement though little
of it changes between them. The last pin of an interpreter is kept in the plugin's state,
``environments/<interpreter key>.json``, and the next pin takes a file's digest from it
while the file's stat key (device, inode, size, ctime: no process can set ctime) is the one
it was hashed under; ``closure.pin`` never stores a key taken within a clock tick of a write.

What the kept digests can change is only what the pin of an environment records at
/implement, which is the environment as it is then: code that rewrites the kept file before
/implement could as well rewrite the environment itself, and the pin is what every later
check compares with. The file lives beside the flows, in the state the guard keeps the
agent's tools out of and the gate's run sees read-only. A missing, unreadable or garbled file
is an empty one; one that cannot be written is simply not kept.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from pytest_acceptance.gate.flow_state import data_dir
from pytest_acceptance.tree.closure import MAX_FILES, Pin
from pytest_acceptance.tree.hostile import read_regular_or_none, write_atomic

FOLDER = "environments"  # in the plugin's state
LIMIT = 256 << 20  # bytes: a kept pin of MAX_FILES files fits well below it


def kept_file(python: str) -> Path:
    key = hashlib.sha256(python.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return data_dir() / FOLDER / f"{key}.json"


def known(python: str) -> Pin:
    """The digests the last pin of ``python``'s environment took, by path ({} when none)."""
    raw = read_regular_or_none(kept_file(python), LIMIT)
    if raw is None:
        return {}
    try:
        loaded = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {path: entry for path, entry in loaded.items() if _entry(entry)}


def _entry(entry: object) -> bool:
    """[stat key, digest], the key present (an untrusted one is never kept)."""
    return (
        isinstance(entry, list)
        and len(entry) == 2
        and all(isinstance(part, str) and part for part in entry)
    )


def keep(python: str, pinned: Pin) -> None:
    """Keep the digests ``pinned`` took under a trusted stat key, for the next pin."""
    entries = {path: entry for path, entry in pinned.items() if _entry(entry)}
    if len(entries) > MAX_FILES:
        return
    target = kept_file(python)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, json.dumps(entries, separators=(",", ":")))
