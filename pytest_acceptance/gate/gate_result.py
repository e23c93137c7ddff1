"""What one gate run found: the record /done and /escalate are decided on.

A frozen record, built from the verdict the gate's pytest wrote on the gate's own pipe
(already checked for its exact shape by verdict_check.py) and from what the gate itself
measured around the run. Stored results (flow_state.py) are read back through
``GateResult.from_json``, which takes only this shape: a damaged or foreign file is no
result at all, never one that decides.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

MAX_PROBLEMS = 10


@dataclass(frozen=True)
class CriterionOutcome:
    """One criterion as the gate's run ended it."""

    id: str
    title: str
    status: str  # passed, failed, error, manual, skipped, ...
    message: str
    method: str
    witnessed: bool | None = None  # for a witnessed criterion: did the witness confirm it

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CriterionOutcome:
        witnessed = data.get("witnessed")
        return cls(
            id=str(data.get("id")),
            title=_text(data.get("title")),
            status=_text(data.get("status")),
            message=_text(data.get("message")),
            method=_text(data.get("method")),
            witnessed=witnessed if isinstance(witnessed, bool) else None,
        )


@dataclass(frozen=True)
class GateResult:
    """A gate run: the tree it ran on, how pytest ended, and each pinned criterion."""

    fingerprint: str  # the tree, taken by the gate before the run
    fingerprint_after: str  # and after it
    at: float
    returncode: int  # pytest's own exit code
    tail: str  # the end of the run's log
    spec_sha256: str | None
    error: str | None = None  # no trustworthy verdict came out (why)
    status: str | None = None  # the verdict's status: pass, fail, manual, ...
    exit_code: int | None = None  # the exit code the verdict announces
    complete: bool = False  # the verdict says every criterion was selected
    selected: int = 0
    criteria: tuple[CriterionOutcome, ...] = ()
    problems: tuple[str, ...] = ()
    duration: float = 0.0

    @property
    def real_run(self) -> bool:
        """A verdict that selected criteria and whose exit code is pytest's own."""
        return self.error is None and self.selected > 0 and self.exit_code == self.returncode

    def by_id(self) -> dict[str, CriterionOutcome]:
        return {criterion.id: criterion for criterion in self.criteria}

    def replace(self, **changes: Any) -> GateResult:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["real_run"] = self.real_run  # for a person reading the stored file
        return data

    @classmethod
    def from_json(cls, data: object) -> GateResult | None:
        """The stored record, or None when `data` is not one."""
        if not isinstance(data, dict):
            return None
        try:
            criteria = tuple(
                CriterionOutcome.from_json(item)
                for item in data.get("criteria") or ()
                if isinstance(item, dict)
            )
            return cls(
                fingerprint=str(data["fingerprint"]),
                fingerprint_after=str(data["fingerprint_after"]),
                at=float(data["at"]),
                returncode=int(data["returncode"]),
                tail=_text(data.get("tail")),
                spec_sha256=_optional_text(data.get("spec_sha256")),
                error=_optional_text(data.get("error")),
                status=_optional_text(data.get("status")),
                exit_code=_optional_int(data.get("exit_code")),
                complete=data.get("complete") is True,
                selected=int(data.get("selected") or 0),
                criteria=criteria,
                problems=tuple(str(p) for p in data.get("problems") or ())[:MAX_PROBLEMS],
                duration=float(data.get("duration") or 0.0),
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def _optional_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
