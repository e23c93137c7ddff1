"""The criteria the witness watches (a bash criterion whose command runs pytest), and what
their pytest saw when it collected them at /implement: the distributions it loaded, by
identity, and the environments it ran in. The gate's run lets a criterion's pytest see
those distributions only (witness.prepare), refuses a witnessed criterion that passed
without its pinned tests, and one whose pytest ran in an environment not pinned
(witness.judge). The tests pinned for each are pinned_tests.py's own file.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base

NAME = "witnessed-criteria"
COVERS = "the criteria the witness watches, and what their pytest saw at /implement"


@dataclass(frozen=True)
class WitnessedCriteria:
    criteria: tuple[str, ...]  # their ids, sorted
    distributions: tuple[str, ...] | None  # by identity; None when none was collected
    interpreters: tuple[tuple[str, str], ...]  # (sys.prefix, sys.executable) of each, sorted

    def to_json(self) -> dict[str, object]:
        distributions = None if self.distributions is None else list(self.distributions)
        return {
            "criteria": list(self.criteria),
            "distributions": distributions,
            "interpreters": dict(self.interpreters),
        }

    @classmethod
    def from_json(cls, value: object) -> WitnessedCriteria | None:
        record = base.fields(value, frozenset({"criteria", "distributions", "interpreters"}))
        if record is None:
            return None
        criteria, interpreters = (
            base.strings(record["criteria"]),
            base.text_pairs(record["interpreters"]),
        )
        listed = record["distributions"]
        distributions = None if listed is None else base.strings(listed)
        if (
            criteria is None
            or interpreters is None
            or (listed is not None and distributions is None)
        ):
            return None
        return cls(criteria, distributions, interpreters)


def read(flow: Flow) -> WitnessedCriteria:
    return PIN.record(flow)


class WitnessedCriteriaPin(base.RecordPin[WitnessedCriteria]):
    """Checked by the gate's run itself (witness.judge); the checks around it read it back."""

    def take(self, flow: Flow, taking: base.Taking) -> None:
        collected = taking.collected()
        pinned = WitnessedCriteria(
            collected.witnessed, collected.distributions, collected.interpreters
        )
        base.write(flow, NAME, pinned.to_json())


PIN = WitnessedCriteriaPin(NAME, COVERS, WitnessedCriteria.from_json)
