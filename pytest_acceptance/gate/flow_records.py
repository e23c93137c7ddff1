"""The flow's own records of how it is ending (flow.json's ``terminal`` and ``last_stop``,
and the guard's ``tool-after-terminal`` note).

Whether a flow is finished, and whether a stored result may stand for a run, are decided on
these, so each is read back only in its exact shape: flow.json's records raise Damaged
(damaged state, which blocks); the guard's note, written by parallel tool calls, reads as
"a tool ran just now" when damaged, which keeps the flow open.

Standard library only, like every hook module.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar

SKILLS = ("done", "escalate")
DECISIONS = ("allow", "block")


class Damaged(ValueError):
    """The value is not exactly the record asked for."""


@dataclass(frozen=True)
class Terminal:
    """/done or /escalate, let through by the gate's run number `run` of the flow."""

    skill: str
    at: float
    fingerprint: str | None
    run: int | None  # None: no run let it through (an /escalate of a flow never pinned)

    def __post_init__(self) -> None:
        _require(self.skill in SKILLS, f"skill {self.skill!r}")


@dataclass(frozen=True)
class LastStop:
    """What the Stop hook decided last, when, and when it began to judge the tree."""

    decision: str
    at: float
    checked_from: float

    def __post_init__(self) -> None:
        _require(self.decision in DECISIONS, f"decision {self.decision!r}")


@dataclass(frozen=True)
class ToolNote:
    """A file-writing tool call came at `at`, after the terminal recorded at `terminal_at`."""

    terminal_at: float | None
    at: float


_TYPES: dict[str, tuple[type, ...]] = {
    "skill": (str,),
    "decision": (str,),
    "fingerprint": (str, type(None)),
    "run": (int, type(None)),
    "at": (int, float),
    "checked_from": (int, float),
    "terminal_at": (int, float, type(None)),
}
Record = TypeVar("Record", Terminal, LastStop, ToolNote)


def read(kind: type[Record], value: object) -> Record:
    """`value` as a `kind`; Damaged when it is not exactly one."""
    names = [field.name for field in fields(kind)]
    _require(isinstance(value, dict) and sorted(value) == sorted(names), f"{value!r:.200}")
    assert isinstance(value, dict)
    for name in names:
        item = value[name]
        _require(isinstance(item, _TYPES[name]) and not isinstance(item, bool), f"{name}")
        _require(not isinstance(item, float) or math.isfinite(item), f"{name} {item!r}")
    numbers = {n: float(value[n]) for n in names if isinstance(value[n], (float, int))}
    return kind(**{**value, **{n: v for n, v in numbers.items() if n != "run"}})


def write(record: Terminal | LastStop | ToolNote) -> dict[str, Any]:
    return asdict(record)


def _require(holds: bool, what: str) -> None:
    if not holds:
        raise Damaged(f"not a record of this version: {what}")
