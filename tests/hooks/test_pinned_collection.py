"""The pinned collection (pinned_collection.py) is read back only in its exact shape: the
gate decides on its criteria, settings and interpreter, so anything else is damaged state,
which blocks, never a record with parts missing."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pinning import collected

from pytest_acceptance import gate_probe
from pytest_acceptance.gate.flow_state import Flow, FlowStateError
from pytest_acceptance.gate.pinned_collection import Collection, DamagedCollection

SPEC = """# Spec

#### AC-1: counts
**Verification:**
```yaml
method: bash
command: pytest tests
timeout: 30
```

#### AC-2: looks right
**Verification:**
```yaml
method: manual
checks: [a person reads it]
```
"""


def test_the_probes_report_reads_back_as_it_was_written(tmp_path: Path) -> None:
    """What pytest_acceptance.gate_probe reports of a real spec is one record, and its
    JSON reads back equal: the probe and the record cannot drift apart unnoticed."""
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    criteria, error = gate_probe.criteria(spec)
    assert error is None
    report = {"criteria": criteria, "error": error, "settings": {"acceptance_timeout": "9"}}
    pinned = Collection.from_probe({**report, "prefix": sys.prefix}, sys.executable)
    assert pinned.ids == ["AC-1", "AC-2"] and pinned.bash_commands() == ["pytest tests"]
    assert pinned.settings == (("acceptance_timeout", "9"),)
    assert Collection.from_json(json.loads(json.dumps(pinned.to_json()))) == pinned


def _damaged() -> list[Any]:
    good = collected(sys.executable, sys.prefix, [{"id": "AC-1", "command": "pytest"}])
    criterion = good["criteria"][0]
    return [
        None,
        [],
        {k: v for k, v in good.items() if k != "settings"},  # a field missing
        {**good, "extra": 1},  # a field this version does not know
        {**good, "python": None},
        {**good, "settings": {"acceptance_timeout": 30}},
        {**good, "criteria": {"AC-1": criterion}},
        {**good, "criteria": [{**criterion, "id": 1}]},
        {**good, "criteria": [{**criterion, "line": True}]},
        {**good, "criteria": [{**criterion, "checks": [1]}]},
        {**good, "criteria": [{k: v for k, v in criterion.items() if k != "command"}]},
    ]


@pytest.mark.parametrize("value", _damaged())
def test_a_damaged_record_is_refused_never_read_in_part(value: Any, tmp_path: Path) -> None:
    with pytest.raises(DamagedCollection):
        Collection.from_json(value)
    flow = Flow(tmp_path, {"repo": str(tmp_path), "collection": value})
    if value is None:  # no record: nothing was pinned (never_pinned says why)
        assert flow.collection is None and flow.python == "" and flow.bash_commands() == []
        return
    with pytest.raises(FlowStateError, match="damaged"):
        flow.collection  # noqa: B018
    with pytest.raises(FlowStateError):
        flow.python  # noqa: B018


def test_a_sound_record_reads_back_equal() -> None:
    """The honest control beside the damaged ones."""
    good = collected(sys.executable, sys.prefix, [{"id": "AC-1", "command": "pytest"}])
    assert Collection.from_json(good).to_json() == good


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_any_json_either_reads_as_a_record_or_is_refused(value: Any) -> None:
    with contextlib.suppress(DamagedCollection):
        Collection.from_json(value)
