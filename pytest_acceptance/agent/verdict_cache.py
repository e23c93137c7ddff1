"""Opt-in cache of agent passes: re-verifying an unchanged tree costs no agent call.

An entry is keyed by everything the agent was asked (criterion text, agent configuration,
prompt version, evidence for judged conditions) and records the working-tree fingerprint it
was computed on. Only a pass is ever stored, and only reused on the very same fingerprint;
a fail or an error removes the entry. Entries live in ``<rootdir>/.acceptance/cache/``,
which git ignores through ``.acceptance/.gitignore`` so the cache never changes the tree
it describes.

The fingerprint leaves out the bytes of the run's spec files (their presence still counts):
a criterion's own text is in its key, so editing one criterion invalidates its entry and
no other, while an edit anywhere else in the tree invalidates them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Result, Status
from pytest_acceptance.store import OUTPUT_DIR, output_dir, write_json_atomic
from pytest_acceptance.tree.file_hash import Limits
from pytest_acceptance.tree.fingerprint import tree_fingerprint
from pytest_acceptance.tree.hash_cache import HashCache

SCHEMA = "pytest-acceptance/agent-cache"
SPEC_TEXT = b"spec:text-keyed-per-criterion"  # what a spec file counts as in the fingerprint


def cache_key(criterion: Criterion, configuration: dict[str, Any]) -> str:
    """A digest of the criterion's text and the agent configuration that judged it."""
    text = {
        f.name: _plain(getattr(criterion, f.name))
        for f in fields(criterion)
        if f.name not in ("location", "verification_line")  # moving a criterion changes nothing
    }
    payload = json.dumps({"criterion": text, "agent": configuration}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class VerdictCache:
    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        self.directory = rootdir / OUTPUT_DIR / "cache"

    def lookup(self, key: str, fingerprint: str) -> Result | None:
        """The stored pass for this key, if it was computed on this very tree."""
        try:
            entry = json.loads((self.directory / f"{key}.json").read_text())
            if entry.get("schema") != SCHEMA or entry.get("fingerprint") != fingerprint:
                return None
            result = Result.from_dict(entry["result"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # absent or unreadable: ask the agent
        return result if result.status is Status.PASSED else None

    def store(self, key: str, fingerprint: str, result: Result) -> None:
        if result.status is not Status.PASSED:
            self.forget(key)
            return
        entry = {
            "schema": SCHEMA,
            "fingerprint": fingerprint,
            "stored_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "result": result.to_dict(),
        }
        output_dir(self.rootdir)  # creates .acceptance/ and its .gitignore
        write_json_atomic(self.directory / f"{key}.json", entry)

    def forget(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{key}.json").unlink()


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "value"):  # enums
        return value.value
    return value


def judged_tree(rootdir: Path, specs: Iterable[Path]) -> str:
    """The working-tree fingerprint an entry is stored with: the tree's, with each of
    ``specs`` counted by its path but not its bytes (FingerprintError as for the tree)."""
    hashes = _SpecBlindHashes(rootdir / OUTPUT_DIR / "cache" / "tree-hashes", specs)
    return tree_fingerprint(rootdir, cache=hashes)


class _SpecBlindHashes(HashCache):
    """The tree's file hashes (kept between runs, as the gate keeps its own), with one
    constant description for every spec file."""

    def __init__(self, path: Path, specs: Iterable[Path]) -> None:
        super().__init__(path)
        self.specs = {os.fsencode(os.path.realpath(spec)) for spec in specs}

    def hash_files(self, files: list[tuple[bytes, bytes]], limits: Limits) -> list[bytes]:
        records = super().hash_files(files, limits)
        return [
            relative + b"\0" + SPEC_TEXT if os.path.realpath(path) in self.specs else record
            for (relative, path), record in zip(files, records, strict=True)
        ]
