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

from pytest_acceptance.claude.flow_state import write_json

FILE_NAME = "witness.json"


@dataclass(frozen=True)
class PinnedTests:
    """What one witnessed criterion's pytest did at /implement with ``--collect-only``."""

    ids: tuple[str, ...] = ()  # the node ids it selected, sorted
    marked: frozenset[str] = frozenset()  # those carrying a skip, skipif or xfail mark
    files: frozenset[str] = frozenset()  # every file it collected, relative to the rootdir
    # (real path, sha256) of each project module pytest rewrote as test code outside `files`
    test_code: tuple[tuple[str, str], ...] = ()
    note: str | None = None  # why nothing is pinned (its collection did not finish)

    def collected_files(self) -> frozenset[str]:
        """The files it collected, those holding its pinned tests included."""
        return self.files | {file_of(ident) for ident in self.ids}

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "ids": list(self.ids),
            "marked": sorted(self.marked),
            "files": sorted(self.files),
            "test_code": dict(self.test_code),
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
        files, code, note = value.get("files", []), value.get("test_code", {}), value.get("note")
        if not (_strings(ids) and _strings(marked) and _strings(files)):
            return None
        if not isinstance(code, dict) or not _strings([*code, *code.values()]):
            return None
        if note is not None and not isinstance(note, str):
            return None
        return cls(
            ids=tuple(ids),  # type: ignore[arg-type]
            marked=frozenset(marked),  # type: ignore[arg-type]
            files=frozenset(files),
            test_code=tuple(sorted(code.items())),
            note=note,
        )


_FIELDS = frozenset({"ids", "marked", "files", "test_code", "note"})


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


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
