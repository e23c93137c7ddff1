"""The flow's records of how it ends (flow_records.py) are read back only in their exact
shape: whether a flow is finished, and whether a stored result stands for a run, are
decided on them. A damaged record in flow.json is damaged state (it blocks); a damaged note
of the guard reads as "a tool ran just now" (the flow stays open)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate import flow_records
from pytest_acceptance.gate.flow_records import Ended, LastStop, Terminal, ToolNote
from pytest_acceptance.gate.flow_state import Flow, FlowStateError

TERMINAL = {"skill": "done", "at": 10.0, "fingerprint": "tree:1", "run": 2}
STOP = {"decision": "allow", "at": 11.0, "checked_from": 10.5}


def _flow(tmp_path: Path, **records: Any) -> Flow:
    return Flow(tmp_path, {"repo": str(tmp_path), **records})


def test_honest_a_terminal_and_an_allowed_stop_after_it_finish_the_flow(tmp_path: Path) -> None:
    flow = _flow(tmp_path, terminal=TERMINAL, last_stop=STOP)
    assert flow.terminal == Terminal("done", 10.0, "tree:1", 2)
    assert flow.last_stop == LastStop("allow", 11.0, 10.5)
    assert flow.finished() and not flow.tool_after_terminal()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("terminal", {**TERMINAL, "skill": "verify"}),
        ("terminal", {**TERMINAL, "run": "2"}),
        ("terminal", {**TERMINAL, "run": True}),
        ("terminal", {k: v for k, v in TERMINAL.items() if k != "run"}),
        ("terminal", {**TERMINAL, "at": float("nan")}),
        ("terminal", "done"),
        ("last_stop", {**STOP, "decision": "maybe"}),
        ("last_stop", {**STOP, "extra": 1}),
        ("last_stop", {**STOP, "at": "11"}),
    ],
)
def test_a_damaged_record_is_damaged_state(tmp_path: Path, key: str, value: Any) -> None:
    """Never read in part, never as "no record": finished() cannot be answered, which blocks."""
    flow = _flow(tmp_path, **{"terminal": TERMINAL, "last_stop": STOP, key: value})
    with pytest.raises(FlowStateError, match="damaged"):
        flow.finished()


@pytest.mark.parametrize("note", [b"", b"{", b"[]", b'{"terminal_at": 10.0}', b'{"at": "x"}'])
def test_a_damaged_guard_note_keeps_the_flow_open(tmp_path: Path, note: bytes) -> None:
    flow = _flow(tmp_path, terminal=TERMINAL, last_stop=STOP)
    (tmp_path / "tool-after-terminal").write_bytes(note)
    assert flow.tool_after_terminal() and not flow.finished()


def test_a_tool_call_noted_after_the_terminal_keeps_the_flow_open(tmp_path: Path) -> None:
    """The honest control of the note: written by the guard, read back exactly."""
    flow = _flow(tmp_path, terminal=TERMINAL, last_stop=STOP)
    flow.note_tool_after_terminal()
    assert flow.tool_after_terminal() and not flow.finished()


@given(
    st.dictionaries(
        st.sampled_from(["skill", "at", "fingerprint", "run", "why", "x"]),
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    )
)
def test_any_value_is_a_record_or_refused(value: dict[str, Any]) -> None:
    for kind in (Terminal, LastStop, ToolNote, Ended):
        try:
            record = flow_records.read(kind, value)
        except flow_records.Damaged:
            continue
        assert flow_records.read(kind, flow_records.write(record)) == record


@pytest.mark.parametrize("key", ["closed", "forced"])
def test_how_a_flow_ended_is_read_back_exactly(tmp_path: Path, key: str) -> None:
    flow = _flow(tmp_path, status="open")
    assert getattr(flow, key) is None
    if key == "closed":
        flow.close("the person typed a prompt")
    else:
        flow.note_forced("cap")
    ended = getattr(flow, key)
    assert isinstance(ended, Ended) and ended.why in ("the person typed a prompt", "cap")
    flow.data[key] = {"at": ended.at, "why": 3}
    with pytest.raises(FlowStateError, match="damaged"):
        getattr(flow, key)
