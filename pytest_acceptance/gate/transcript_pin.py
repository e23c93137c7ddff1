"""What the hooks have read of a session's transcript, pinned (transcript-pin.json in the flow).

Claude Code only appends to a session's transcript, and the agent can write that file. Each
time a hook reads it inside an open pinned flow, the whole lines it read are pinned, one
record per transcript path: a prefix checked whole (its length and sha256) and, after it,
the tails the guard hooks read since (each its end and the sha256 of its own bytes). A later
read whose first bytes differ from what is pinned -- the prefix or any tail -- is tampering,
history the hooks already read was rewritten, and the flow holds. The record is taken at
/implement (the transcript as it was then, or none yet), so a record that is missing, or not
in its exact shape, in an open flow is tampering too, never "nothing to check".

Two kinds of read, one pin:

- ``check`` (the hooks that decide on what the transcript says: the Stop hook, the /done
  and /escalate gate, the prompt hook) hashes everything pinned again, refuses on any
  difference, and pins the whole lines read now as one prefix;
- ``note_tail`` (the guard before every tool call, which decides on the pin, never on the
  transcript) hashes only the bytes after what is pinned and adds them as a tail. It never
  vouches for what came before: the next ``check`` hashes that again, tails included, so
  a rewrite made before or after the guard's read is seen there. A guard call costs the
  bytes written since the last one, not the whole transcript.

Two hooks reading at once may each write their own read; the one written last may be the
shorter. A pin that is shorter than it could be still holds what it covers.
"""

from __future__ import annotations

import hashlib
import json

from pytest_acceptance.gate.flow_state import write_json
from pytest_acceptance.tree.frozen import Frozen
from pytest_acceptance.tree.hostile import read_regular_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    from pathlib import Path
    from typing import Any, Union

    Data = Union[bytes, mmap.mmap]  # what Transcript.data holds

FILE_NAME = "transcript-pin.json"
# 2: the tails the guard read, after the prefix. A version 1 record is a prefix alone.
VERSION = 2
_PREFIX_ONLY = 1
# A transcript past this at /implement is read by the hooks (mapped), not here in one piece:
# its pin then starts empty and the first hook's read takes it.
_TAKE_LIMIT = 1 << 30


class Tail(Frozen):
    """Bytes a guard read after what was pinned before it: up to `end`, their sha256."""

    __slots__ = ("end", "sha256")
    end: int
    sha256: str

    def __init__(self, end: int, sha256: str) -> None:
        self._init(end=end, sha256=sha256)


class TranscriptRead(Frozen):
    """The whole lines the hooks read of one transcript: the first `length` bytes, checked
    whole (`sha256`), then the `tails` guards read after them, in file order."""

    __slots__ = ("length", "path", "sha256", "tails")
    path: str
    length: int
    sha256: str
    tails: tuple[Tail, ...]

    def __init__(self, path: str, length: int, sha256: str, tails: tuple[Tail, ...] = ()) -> None:
        self._init(path=path, length=length, sha256=sha256, tails=tails)

    @property
    def end(self) -> int:
        """Where what is pinned ends."""
        return self.tails[-1].end if self.tails else self.length

    def with_tail(self, tail: Tail) -> TranscriptRead:
        return TranscriptRead(self.path, self.length, self.sha256, (*self.tails, tail))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "length": self.length,
            "sha256": self.sha256,
            "tails": [[tail.end, tail.sha256] for tail in self.tails],
        }

    @classmethod
    def from_json(cls, value: object, version: int = VERSION) -> TranscriptRead | None:
        """The record `value` holds, or None when it is not exactly one."""
        fields = _PREFIX_FIELDS if version == _PREFIX_ONLY else _READ_FIELDS
        if not isinstance(value, dict) or set(value) != fields:
            return None
        path, length, digest = value["path"], value["length"], value["sha256"]
        if not isinstance(path, str) or not _is_digest(digest) or not _is_size(length):
            return None
        tails = _tails_from_json(value.get("tails", []), length)
        return None if tails is None else cls(path, length, digest, tails)


_PREFIX_FIELDS = frozenset({"path", "length", "sha256"})
_READ_FIELDS = frozenset({*_PREFIX_FIELDS, "tails"})


def _tails_from_json(value: object, start: int) -> tuple[Tail, ...] | None:
    """Tails that follow each other from `start` on, each of at least one byte; else None."""
    if not isinstance(value, list):
        return None
    tails = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2:
            return None
        end, digest = item
        if not _is_size(end) or end <= start or not _is_digest(digest):
            return None
        tails.append(Tail(end, digest))
        start = end
    return tuple(tails)


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64


class TranscriptPin(Frozen):
    """Every transcript path the flow's hooks read, with what they read of it."""

    __slots__ = ("reads",)
    reads: tuple[TranscriptRead, ...]

    def __init__(self, reads: tuple[TranscriptRead, ...] = ()) -> None:
        self._init(reads=reads)

    def of(self, path: str) -> TranscriptRead | None:
        return next((read for read in self.reads if read.path == path), None)

    def with_read(self, read: TranscriptRead) -> TranscriptPin:
        others = tuple(earlier for earlier in self.reads if earlier.path != read.path)
        return TranscriptPin((*others, read))

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "reads": [read.to_json() for read in self.reads]}

    @classmethod
    def from_json(cls, value: object) -> TranscriptPin | None:
        if not isinstance(value, dict) or set(value) != {"version", "reads"}:
            return None
        version = value["version"]
        if version not in (VERSION, _PREFIX_ONLY) or not isinstance(value["reads"], list):
            return None
        reads = [TranscriptRead.from_json(item, version) for item in value["reads"]]
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
    """`data`'s whole lines as one prefix when it still starts with everything `earlier`
    pinned (its prefix and each tail), else None. One pass: the digest of the prefix is
    carried on to the end; the tails' bytes are hashed once more on their own."""
    length = data.rfind(b"\n") + 1
    if length < earlier.end:
        return None
    with memoryview(data) as view:
        digest = hashlib.sha256(view[: earlier.length])
        if digest.hexdigest() != earlier.sha256:
            return None
        start = earlier.length
        for tail in earlier.tails:
            if hashlib.sha256(view[start : tail.end]).hexdigest() != tail.sha256:
                return None
            digest.update(view[start : tail.end])
            start = tail.end
        digest.update(view[start:length])
    return TranscriptRead(earlier.path, length, digest.hexdigest())


def _tail_of(earlier: TranscriptRead, data: Data) -> Tail | None:
    """The whole lines of `data` after what `earlier` pinned, hashed; None when there are
    none (nothing new, or a transcript now shorter than the pin: ``check`` judges that)."""
    length = data.rfind(b"\n") + 1
    if length <= earlier.end:
        return None
    with memoryview(data) as view:
        return Tail(length, hashlib.sha256(view[earlier.end : length]).hexdigest())


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
            f"it (its first {earlier.end if earlier else 0} bytes, pinned when a hook read "
            "them). Claude Code only appends to a transcript: history that was read has been "
            f"rewritten. The pinned /implement flow for {spec!r} holds and cannot end as "
            "verified in this session: a person must look at what happened."
        )
    if earlier is None or now.length > earlier.length:  # tails included: one prefix now
        save(folder, pin.with_read(now))
    return None


def note_tail(folder: Path, path: str, data: Data) -> None:
    """The guard's read: pins the whole lines of `data` after what is pinned for `path`,
    hashing only those (see the module's docstring). A record that is missing or damaged
    is left as it is, for the next ``check`` to refuse; a transcript the hooks never read
    is pinned whole, as ``check`` would."""
    pin = load(folder)
    if pin is None:
        return
    earlier = pin.of(path)
    if earlier is None:
        save(folder, pin.with_read(read_of(path, data)))
        return
    tail = _tail_of(earlier, data)
    if tail is not None:
        save(folder, pin.with_read(earlier.with_tail(tail)))
