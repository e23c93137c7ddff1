"""The pin protocol, its one error, and how a pin's record is written and read back.

A record is a frozen dataclass with ``to_json`` and ``from_json``; ``from_json`` answers
None for anything that is not exactly one record (a key too many, one missing, one of the
wrong type), and the gate then refuses: a record with parts missing never reads as
"nothing to check".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, Protocol, Sequence, TypeVar

from pytest_acceptance.gate.flow_state import Flow, write_json

FOLDER = "pins"  # in the flow's folder: one record per pin, by its name
_FAILED = "failed"  # the one key of a record that says why the pin could not be taken

Record = TypeVar("Record")


class PinError(Exception):
    """A pin could not be taken at /implement, or its record is absent or damaged. At
    /implement it is recorded as the pin's failure; at the gate it refuses the run."""


@dataclass(frozen=True)
class Collected:
    """What the criteria's pytest did at /implement, collecting under the witness."""

    interpreters: tuple[tuple[str, str], ...]  # (sys.prefix, sys.executable) of each
    missed_names: frozenset[str]  # witness.missed_by_environment
    witnessed: tuple[str, ...] = ()  # the criteria whose pytest it watches, sorted
    distributions: tuple[str, ...] | None = None  # those their pytest saw (None: no collection)


@dataclass
class Taking:
    """What /implement found before the table's pins are taken: the gate's probe report
    (its interpreter's closure), the names the gate's own runs import by, and the witness's
    collection of the criteria, run once, when a pin first needs it (the pins taken before
    it are then read-only to it: table.read_only)."""

    probe: Mapping[str, Any]
    gate_names: frozenset[str]
    collect: Callable[[], Collected]
    _collected: Collected | None = field(default=None, repr=False)

    def collected(self) -> Collected:
        if self._collected is None:
            self._collected = self.collect()
        return self._collected


class Pin(Protocol):
    """One kind of input the gate trusts."""

    name: str  # its record's file, and its row in docs/threat-model.md
    covers: str  # what it pins, in a few words (the same row)

    def take(self, flow: Flow, taking: Taking) -> None:
        """Pin it, at /implement (writes the record; PinError when it cannot be taken)."""

    def before_run(self, flow: Flow) -> Sequence[str]:
        """What changed since /implement, checked before the gate's run (PinError when the
        record is absent, damaged or failed)."""

    def after_run(self, flow: Flow) -> Sequence[str]:
        """What the gate's run changed of it (the same errors)."""

    def read_only(self, flow: Flow) -> Sequence[str]:
        """The paths the run must see read-only (the same errors)."""


class RecordPin(Generic[Record]):
    """What the pins share: the record, read back in its exact shape, and the checks that are
    that reading and nothing more (a pin overrides those it checks further). Reading is the
    check: a record absent, damaged or failed refuses each of them."""

    def __init__(self, name: str, covers: str, parse: Callable[[object], Record | None]) -> None:
        self.name = name
        self.covers = covers
        self._parse = parse

    def record(self, flow: Flow) -> Record:
        """The pin's record; PinError when it is absent, damaged or failed."""
        return read(flow, self.name, self.covers, self._parse)

    def before_run(self, flow: Flow) -> Sequence[str]:
        self.record(flow)
        return []

    def after_run(self, flow: Flow) -> Sequence[str]:
        self.record(flow)
        return []

    def read_only(self, flow: Flow) -> Sequence[str]:
        self.record(flow)
        return []


def record_path(flow: Flow, name: str) -> Path:
    return flow.folder / FOLDER / f"{name}.json"


def write(flow: Flow, name: str, record: Mapping[str, Any]) -> None:
    write_json(record_path(flow, name), dict(record))


def write_failure(flow: Flow, name: str, why: str) -> None:
    write_json(record_path(flow, name), {_FAILED: why})


def read(flow: Flow, name: str, covers: str, parse: Callable[[object], Record | None]) -> Record:
    """The pin's record in its exact shape; PinError when it is absent, damaged or failed."""
    path = record_path(flow, name)
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise PinError(f"{covers} was not pinned at /implement") from None
    except (OSError, ValueError) as error:
        raise PinError(f"the pin of {covers} cannot be read ({error})") from None
    if isinstance(raw, dict) and set(raw) == {_FAILED} and isinstance(raw[_FAILED], str):
        raise PinError(f"{covers} could not be pinned at /implement: {raw[_FAILED]}")
    record = parse(raw)
    if record is None:
        raise PinError(f"the pin of {covers} is damaged ({path})")
    return record


# --- exact shapes ------------------------------------------------------------------------------


def fields(value: object, names: frozenset[str]) -> dict[str, Any] | None:
    """`value` when it is a JSON object of exactly these keys."""
    if isinstance(value, dict) and set(value) == names:
        return value
    return None


def strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def text_pairs(value: object) -> tuple[tuple[str, str], ...] | None:
    """A JSON object of strings to strings, as sorted pairs."""
    if isinstance(value, dict) and all(isinstance(v, str) for v in (*value, *value.values())):
        return tuple(sorted(value.items()))
    return None
