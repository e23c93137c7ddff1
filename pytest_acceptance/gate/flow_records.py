"""The flow's own records of how it is ending (flow.json's ``terminal``, ``last_stop``,
``closed`` and ``forced``, and the guard's ``tool-after-terminal`` note).

Whether a flow is finished, and whether a stored result may stand for a run, are decided on
these, so each is read back only in its exact shape: flow.json's records raise Damaged
(damaged state, which blocks); the guard's note, written by parallel tool calls, reads as
"a tool ran just now" when damaged, which keeps the flow open.

Standard library only, like every hook module.
"""

from __future__ import annotations

import math

from pytest_acceptance.tree.frozen import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

SKILLS = ("done", "escalate")
DECISIONS = ("allow", "block")


class Damaged(ValueError):
    """The value is not exactly the record asked for."""


class Terminal(Frozen):
    """/done or /escalate, let through by the gate's run number `run` of the flow."""

    __slots__ = ("at", "fingerprint", "run", "skill")
    skill: str
    at: float
    fingerprint: str | None
    run: int | None  # None: no run let it through (an /escalate of a flow never pinned)

    def __init__(self, skill: str, at: float, fingerprint: str | None, run: int | None) -> None:
        _require(skill in SKILLS, f"skill {skill!r}")
        self._init(skill=skill, at=at, fingerprint=fingerprint, run=run)


class LastStop(Frozen):
    """What the Stop hook decided last, when, and when it began to judge the tree."""

    __slots__ = ("at", "checked_from", "decision")
    decision: str
    at: float
    checked_from: float

    def __init__(self, decision: str, at: float, checked_from: float) -> None:
        _require(decision in DECISIONS, f"decision {decision!r}")
        self._init(decision=decision, at=at, checked_from=checked_from)


class ToolNote(Frozen):
    """A file-writing tool call came at `at`, after the terminal recorded at `terminal_at`."""

    __slots__ = ("at", "terminal_at")
    terminal_at: float | None
    at: float

    def __init__(self, terminal_at: float | None, at: float) -> None:
        self._init(terminal_at=terminal_at, at=at)


class Ended(Frozen):
    """The flow was closed (flow.json's ``closed``), or its stop forced (``forced``): when,
    and why, in words."""

    __slots__ = ("at", "why")
    at: float
    why: str

    def __init__(self, at: float, why: str) -> None:
        self._init(at=at, why=why)


_TYPES: dict[str, tuple[type, ...]] = {
    "skill": (str,),
    "decision": (str,),
    "fingerprint": (str, type(None)),
    "run": (int, type(None)),
    "at": (int, float),
    "checked_from": (int, float),
    "terminal_at": (int, float, type(None)),
    "why": (str,),
}
if TYPE_CHECKING:
    Record = TypeVar("Record", Terminal, LastStop, ToolNote, Ended)


def read(kind: type[Record], value: object) -> Record:
    """`value` as a `kind`; Damaged when it is not exactly one."""
    names = list(kind.__slots__)
    _require(isinstance(value, dict) and sorted(value) == sorted(names), f"{value!r:.200}")
    assert isinstance(value, dict)
    for name in names:
        item = value[name]
        _require(isinstance(item, _TYPES[name]) and not isinstance(item, bool), f"{name}")
        _require(not isinstance(item, float) or math.isfinite(item), f"{name} {item!r}")
    numbers = {n: float(value[n]) for n in names if isinstance(value[n], (float, int))}
    return kind(**{**value, **{n: v for n, v in numbers.items() if n != "run"}})


def write(record: Terminal | LastStop | ToolNote | Ended) -> dict[str, Any]:
    return record.as_dict()


def _require(holds: bool, what: str) -> None:
    if not holds:
        raise Damaged(f"not a record of this version: {what}")
