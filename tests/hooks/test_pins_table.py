"""The gate's table of pins (pytest_acceptance/gate/pins/), in-process: the page that lists
it, a record read back only in its exact shape, and the rule that a pin absent, damaged or
failed refuses the gate's run instead of skipping its check."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hook_transcripts import REPO_ROOT
from hypothesis import given
from hypothesis import strategies as st
from pinning import collected, take_pins

from pytest_acceptance.gate import flow_state, pin
from pytest_acceptance.gate.flow_state import Flow, OlderFlowError
from pytest_acceptance.gate.pins import (
    base,
    criterion_integrity,
    declared_inputs,
    interpreter_path,
    path_and_home,
    path_folders,
    shadowed_names,
    table,
    witnessed_criteria,
)
from pytest_acceptance.gate.pins.closures import Environment
from pytest_acceptance.gate.pins.criteria_environments import CriteriaEnvironments

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ROW = re.compile(r"^\| `([a-z-]+)` \| (.+) \|$")
RECORDS = [
    criterion_integrity.CriterionIntegrity,
    criterion_integrity.Watch,
    declared_inputs.DeclaredInput,
    declared_inputs.DeclaredInputs,
    path_and_home.PathAndHome,
    path_folders.PathFolders,
    interpreter_path.InterpreterPath,
    Environment,
    shadowed_names.ShadowedNames,
    CriteriaEnvironments,
    witnessed_criteria.WitnessedCriteria,
]


def documented_pins() -> list[tuple[str, str]]:
    page = (REPO_ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    listed = page.split("<!-- pins-table -->", 1)[1].split("<!-- /pins-table -->", 1)[0]
    return [m.groups() for m in map(ROW.match, listed.splitlines()) if m]  # type: ignore[misc]


def test_the_threat_model_lists_the_table_of_pins_as_it_is() -> None:
    """Each pin of pins/table.py, in its order, is a row of docs/threat-model.md saying what
    it pins, and the page lists no other: a pin added without its row fails here."""
    assert documented_pins() == [(p.name, p.covers) for p in table.PINS]


def test_each_pin_has_a_module_of_its_own() -> None:
    modules = [type(p).__module__ for p in table.PINS]
    assert len(set(modules)) == len(modules)
    assert all(module.startswith("pytest_acceptance.gate.pins.") for module in modules)


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    repo = tmp_path / "repo"
    repo.mkdir()
    folder = tmp_path / "flow"
    folder.mkdir()
    found = Flow(folder, {"repo": str(repo), "collection": collected(sys.executable)})
    take_pins(found)
    return found


def test_every_pin_taken_in_an_untouched_tree_finds_nothing_changed(flow: Flow) -> None:
    """Control: taken and checked at once, nothing changed and nothing refuses."""
    assert table.before_run(flow) == []
    assert table.after_run(flow) == []
    assert str(Path(flow.repo, ".git", "config")) in table.read_only(flow)


@pytest.mark.parametrize("pinned", [p.name for p in table.PINS])
def test_an_absent_pin_refuses_every_check(flow: Flow, pinned: str) -> None:
    """A record that is not there is never "nothing to check"."""
    base.record_path(flow, pinned).unlink()
    for check in (table.before_run, table.after_run, table.read_only):
        with pytest.raises(base.PinError, match="was not pinned at /implement"):
            check(flow)


@pytest.mark.parametrize("pinned", [p.name for p in table.PINS])
def test_a_record_off_its_exact_shape_refuses(flow: Flow, pinned: str) -> None:
    """One key too many (a part the reader would not know to check) is a damaged pin."""
    path = base.record_path(flow, pinned)
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "extra": []}))
    with pytest.raises(base.PinError, match="is damaged"):
        table.before_run(flow)


def test_a_pin_that_failed_at_implement_refuses_with_its_reason(flow: Flow) -> None:
    base.write_failure(flow, shadowed_names.NAME, "the project could not be walked")
    with pytest.raises(base.PinError, match="could not be pinned at /implement: the project"):
        table.before_run(flow)


@pytest.mark.parametrize("record", RECORDS, ids=[r.__name__ for r in RECORDS])
@given(value=JSON)
def test_any_json_reads_as_a_record_or_as_none_never_an_exception(
    record: type, value: object
) -> None:
    """What the flow's folder holds is read back in its exact shape or not at all, and a
    record read back writes the same JSON again."""
    found = record.from_json(value)  # type: ignore[attr-defined]
    if found is not None:
        assert record.from_json(json.loads(json.dumps(found.to_json()))) == found  # type: ignore[attr-defined]


def test_a_flow_of_an_older_version_asks_for_a_new_implement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its records are not this version's: every hook that reads it says so, and a new
    /implement replaces it (it holds nothing this version can check)."""
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path))
    folder = Flow.folder_of("s-old")
    folder.mkdir(parents=True)
    data = {"version": flow_state.STATE_VERSION - 1, "session_id": "s-old", "status": "open"}
    (folder / "flow.json").write_text(json.dumps({**data, "repo": str(tmp_path)}))
    with pytest.raises(
        OlderFlowError, match=r"older version .* Start a new /pytest-acceptance:implement"
    ):
        Flow.load("s-old")
    assert pin.held_flow("s-old") is None
