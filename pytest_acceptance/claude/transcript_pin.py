"""What the hooks have read of a session's transcript, pinned (transcript-pin.json in the flow).

Claude Code only appends to a session's transcript, and the agent can write that file. Each
time a hook reads it inside an open pinned flow (pinned_flow.resolve), the whole lines it
read are pinned: their length and sha256, one record per transcript path. A later read whose
first bytes differ from a pinned prefix is tampering -- history the hooks already judged was
rewritten -- and the flow holds. The record is taken at /implement (the transcript as it was
then, or none yet), so a record that is missing, or not in its exact shape, in an open flow
is tampering too, never "nothing to check".

Two hooks reading at once may each write their own read; the one written last may be the
shorter. A pin that is shorter than it could be still holds what it covers.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Union

from pytest_acceptance.claude.flow_state import write_json
from pytest_acceptance.tree.hostile import read_regular_or_none

FILE_NAME = "transcript-pin.json"
VERSION = 1
# A transcript past this at /implement is read by the hooks (mapped), not here in one piece:
# its pin then starts empty and the first hook's read takes it.
_TAKE_LIMIT = 1 << 30

Data = Union[bytes, mmap.mmap]  # what Transcript.data holds


@dataclass(frozen=True)
class TranscriptRead:
    """The whole lines a hook read of one transcript: the first `length` bytes."""

    path: str
    length: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "length": self.length, "sha256": self.sha256}

    @classmethod
    def from_json(cls, value: object) -> TranscriptRead | None:
        """The record `value` holds, or None when it is not exactly one."""
        if not isinstance(value, dict) or set(value) != _READ_FIELDS:
            return None
        path, length, digest = value["path"], value["length"], value["sha256"]
        if not isinstance(path, str) or not isinstance(digest, str) or len(digest) != 64:
            return None
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            return None
        return cls(path, length, digest)


_READ_FIELDS = frozenset({"path", "length", "sha256"})


@dataclass(frozen=True)
class TranscriptPin:
    """Every transcript path the flow's hooks read, with what they read of it."""

    reads: tuple[TranscriptRead, ...] = ()

    def of(self, path: str) -> TranscriptRead | None:
        return next((read for read in self.reads if read.path == path), None)

    def with_read(self, read: TranscriptRead) -> TranscriptPin:
        others = tuple(earlier for earlier in self.reads if earlier.path != read.path)
        return replace(self, reads=(*others, read))

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "reads": [read.to_json() for read in self.reads]}

    @classmethod
    def from_json(cls, value: object) -> TranscriptPin | None:
        if not isinstance(value, dict) or set(value) != {"version", "reads"}:
            return None
        if value["version"] != VERSION or not isinstance(value["reads"], list):
            return None
        reads = [TranscriptRead.from_json(item) for item in value["reads"]]
        if any(read is None for read in reads):
            return None
        return cls(tuple(read for read in reads if read is not None))


def read_of(path: str, data: Data) -> TranscriptRead:
    """The whole lines of `data` (a line still being written is left for a later read)."""
    length = data.rfind(b"\n") + 1
    with memoryview(data) as view:
        digest = hashlib.sha256(view[:length]).hexdigest()
    return TranscriptRead(path, length, digest)


def _reread(earlier: TranscriptRead, data: Data) -> TranscriptRead | None:
    """`data`'s whole lines when it still starts with what `earlier` pinned, else None
    (one pass: the digest of the pinned prefix is carried on to the end)."""
    length = data.rfind(b"\n") + 1
    if length < earlier.length:
        return None
    with memoryview(data) as view:
        digest = hashlib.sha256(view[: earlier.length])
        if digest.hexdigest() != earlier.sha256:
            return None
        digest.update(view[earlier.length : length])
    return TranscriptRead(earlier.path, length, digest.hexdigest())


def load(folder: Path) -> TranscriptPin | None:
    """The flow's record; None when it is missing, unreadable or not exactly a record."""
    try:
        return TranscriptPin.from_json(json.loads((folder / FILE_NAME).read_bytes()))
    except (OSError, ValueError):
        return None


def save(folder: Path, pin: TranscriptPin) -> None:
    write_json(folder / FILE_NAME, pin.to_json())


def take(folder: Path, path: object) -> None:
    """At /implement: pin the transcript as it is (none yet is an empty record)."""
    data = read_regular_or_none(path, _TAKE_LIMIT) if isinstance(path, str) and path else None
    pin = TranscriptPin()
    if isinstance(path, str) and data is not None:
        pin = pin.with_read(read_of(path, data))
    save(folder, pin)


def check(folder: Path, path: str, data: Data, spec: object) -> str | None:
    """None when every read pinned for `path` still holds (the longer read is pinned now);
    otherwise why not, for the hook's block. `spec` names the flow in that sentence."""
    pin = load(folder)
    if pin is None:
        return (
            f"The plugin's record of what its hooks have read of this session's transcript "
            f"({folder / FILE_NAME}) is missing or damaged, so a rewrite of that history could "
            f"not be seen. The pinned /implement flow for {spec!r} holds and cannot end as "
            "verified in this session: a person must look at what happened."
        )
    earlier = pin.of(path)
    now = read_of(path, data) if earlier is None else _reread(earlier, data)
    if now is None:
        return (
            f"The transcript {path} no longer starts with what the hooks had already read of "
            f"it (its first {earlier.length if earlier else 0} bytes, pinned when a hook read "
            "them). Claude Code only appends to a transcript: history that was read has been "
            f"rewritten. The pinned /implement flow for {spec!r} holds and cannot end as "
            "verified in this session: a person must look at what happened."
        )
    if earlier is None or now.length > earlier.length:
        save(folder, pin.with_read(now))
    return None
