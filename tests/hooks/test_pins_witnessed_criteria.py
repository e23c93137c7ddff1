"""The witnessed criteria pin (gate/pins/witnessed_criteria.py), in-process: which criteria
the witness watches, and the distributions and environments their pytest saw at /implement,
are one record read back only in its exact shape. A record absent, off its shape or failed
refuses the gate's run: never "no criterion is witnessed" or "any distribution will do"."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pinning
import pytest

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, table, witnessed_criteria
from pytest_acceptance.gate.pins.witnessed_criteria import WitnessedCriteria

SEEN = base.Collected(
    interpreters=((sys.prefix, sys.executable),),  # the gate's own: no other is probed
    missed_names=frozenset(),
    witnessed=("AC-1",),
    distributions=(f"{sys.prefix}/lib/site-packages/pluggy.dist-info\0",),
)


def taken(tmp_path: Path, collected: base.Collected) -> Flow:
    repo = tmp_path / "repo"
    repo.mkdir()
    folder = tmp_path / "flow"
    folder.mkdir()
    data = {"repo": str(repo), "collection": pinning.collected(sys.executable, sys.prefix)}
    flow = Flow(folder, data)
    table.take_all(
        flow, base.Taking({"closure": {}, "startup_sources": []}, frozenset(), lambda: collected)
    )
    return flow


def rewrite(flow: Flow, value: object) -> None:
    base.record_path(flow, witnessed_criteria.NAME).write_text(json.dumps(value))


def test_honest_what_the_collection_saw_is_read_back_as_taken(tmp_path: Path) -> None:
    flow = taken(tmp_path, SEEN)
    assert witnessed_criteria.read(flow) == WitnessedCriteria(
        SEEN.witnessed, SEEN.distributions, SEEN.interpreters
    )
    assert table.before_run(flow) == []


def test_honest_no_witnessed_criterion_pins_no_distributions(tmp_path: Path) -> None:
    """Control: with nothing collected, the record says so (None), which is its own shape."""
    flow = taken(tmp_path, base.Collected((), frozenset()))
    assert witnessed_criteria.read(flow) == WitnessedCriteria((), None, ())


def test_a_missing_record_refuses_the_run(tmp_path: Path) -> None:
    flow = taken(tmp_path, SEEN)
    base.record_path(flow, witnessed_criteria.NAME).unlink()
    with pytest.raises(base.PinError, match="was not pinned at /implement"):
        table.before_run(flow)


@pytest.mark.parametrize(
    "record",
    [
        {"criteria": ["AC-1"], "distributions": None},
        {"criteria": ["AC-1"], "distributions": None, "interpreters": {}, "witnessed": []},
        {"criteria": "AC-1", "distributions": None, "interpreters": {}},
        {"criteria": ["AC-1"], "distributions": [1], "interpreters": {}},
        {"criteria": ["AC-1"], "distributions": None, "interpreters": {"/venv": None}},
        {"criteria": ["AC-1"], "distributions": {}, "interpreters": {}},
    ],
    ids=[
        "field-missing",
        "field-too-many",
        "ids-not-a-list",
        "distribution-not-text",
        "interpreter-not-text",
        "distributions-not-a-list",
    ],
)
def test_a_record_off_its_shape_refuses_the_run(tmp_path: Path, record: object) -> None:
    """A part missing is never read as "nothing witnessed" or "no distribution pinned"."""
    flow = taken(tmp_path, SEEN)
    rewrite(flow, record)
    with pytest.raises(base.PinError, match="is damaged"):
        table.before_run(flow)


def test_a_collection_that_failed_at_implement_refuses_with_its_reason(tmp_path: Path) -> None:
    def failed() -> base.Collected:
        raise base.PinError("the criteria's pytest could not collect")

    flow = taken(tmp_path, SEEN)
    taking = base.Taking({"closure": {}, "startup_sources": []}, frozenset(), failed)
    table.take_all(flow, taking)
    with pytest.raises(base.PinError, match="could not be pinned at /implement: the criteria"):
        witnessed_criteria.PIN.before_run(flow)
    with pytest.raises(base.PinError, match="could not be pinned"):
        table.before_run(flow)
