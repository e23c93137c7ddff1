"""The tests pinned at /implement for each witnessed criterion (witness.json in the flow).

One :class:`PinnedTests` per criterion: what its pytest selected and collected when the flow
started, and the test code outside the collected files it loaded then. The gate decides on
these records, so they are read back only in their exact shape: anything else in the file
is "cannot be read", which refuses the criterion, never a record with parts missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pytest_acceptance.gate.flow_state import write_json

FILE_NAME = "witness.json"


@dataclass(frozen=True)
class PinnedTests:
    """What one witnessed criterion's pytest did at /implement with ``--collect-only``."""

    ids: tuple[str, ...] = ()  # the node ids it selected, sorted
    marked: frozenset[str] = frozenset()  # those carrying a skip, skipif or xfail mark
    # (path relative to the rootdir, sha256) of every file it collected
    files: tuple[tuple[str, str], ...] = ()
    # (real path, sha256) of each project module pytest rewrote as test code outside `files`
    test_code: tuple[tuple[str, str], ...] = ()
    # its packages' folders, each with the .py files it held: nothing may be added
    test_code_folders: tuple[tuple[str, tuple[str, ...]], ...] = ()
    note: str | None = None  # why nothing is pinned (its collection did not finish)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "ids": list(self.ids),
            "marked": sorted(self.marked),
            "files": dict(self.files),
            "test_code": dict(self.test_code),
            "test_code_folders": {folder: list(held) for folder, held in self.test_code_folders},
        }
        if self.note is not None:
            record["note"] = self.note
        return record

    @classmethod
    def from_json(cls, value: object) -> PinnedTests | None:
        """The record `value` holds, or None when it is not exactly one."""
        if not isinstance(value, dict) or not set(value) <= _FIELDS:
            return None
        ids, marked = value.get("ids"), value.get("marked")
        files, code, note = value.get("files", {}), value.get("test_code", {}), value.get("note")
        if not (_strings(ids) and _strings(marked) and _text_map(files) and _text_map(code)):
            return None
        folders = value.get("test_code_folders", {})
        if not isinstance(folders, dict) or not all(map(_strings, folders.values())):
            return None
        if not _strings(list(folders)) or (note is not None and not isinstance(note, str)):
            return None
        return cls(
            ids=tuple(ids),  # type: ignore[arg-type]
            marked=frozenset(marked),  # type: ignore[arg-type]
            files=tuple(sorted(files.items())),
            test_code=tuple(sorted(code.items())),
            test_code_folders=tuple((k, tuple(v)) for k, v in sorted(folders.items())),
            note=note,
        )


_FIELDS = frozenset({"ids", "marked", "files", "test_code", "test_code_folders", "note"})


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _text_map(value: object) -> bool:
    return isinstance(value, dict) and _strings([*value, *value.values()])


def file_of(ident: str) -> str:
    """The file part of a node id."""
    return ident.split("::", 1)[0]


def write(folder: Path, pins: Mapping[str, PinnedTests]) -> None:
    write_json(folder / FILE_NAME, {key: pin.to_json() for key, pin in pins.items()})


def read(folder: Path) -> dict[str, PinnedTests] | None:
    """Each criterion's record; None when the file is missing, unreadable or not exactly
    records (one bad record makes the whole file unreadable: it was written in one piece)."""
    try:
        raw = json.loads((folder / FILE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    pins = {str(key): PinnedTests.from_json(value) for key, value in raw.items()}
    if any(pin is None for pin in pins.values()):
        return None
    return {key: pin for key, pin in pins.items() if pin is not None}
