"""The pin's own fields in flow.json (flow_state.Flow), each read back in its type.

The hooks decide on the flow's status, its /implement's prompt id, arguments and moment,
the person's prompts since, and the gate's run count: a value of another type is damaged
state (FlowStateError, which blocks), never read as absent or as "nothing to check". The
stop count only caps blocks: a damaged one counts again from zero (it blocks longer,
never lets a stop through). In process, on the real Flow, with any JSON value.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate import caps, flow_end, pin, pinned_flow
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow, FlowStateError
from pytest_acceptance.gate.transcript import Transcript

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
TEXTS = ("cwd", "args", "spec_argument", "prompt_id", "last_prompt_id")
COUNTS = ("prompts_after_pin", "gate_runs")
HONEST: dict[str, Any] = {
    "version": STATE_VERSION,
    "session_id": "session-1",
    "status": "open",
    "repo": "/work/repo",
    "cwd": "/work/repo",
    "args": "specs/feature.md",
    "spec_argument": "specs/feature.md",
    "prompt_id": "prompt-1",
    "pinned_at": 1700000000.5,
}
FOLDER = Path("/nonexistent/flows/session")  # what the readers below never touch


def flow_with(folder: Path, **fields: Any) -> Flow:
    return Flow(folder, {**HONEST, **fields})


def test_honest_every_field_reads_as_pinned(tmp_path: Path) -> None:
    flow = flow_with(tmp_path, prompts_after_pin=1, last_prompt_id="prompt-2", gate_runs=3)
    assert flow.is_open and flow.session_id == "session-1" and flow.repo == "/work/repo"
    assert (flow.cwd, flow.args, flow.spec_argument) == ("/work/repo",) + ("specs/feature.md",) * 2
    assert (flow.prompt_id, flow.last_prompt_id) == ("prompt-1", "prompt-2")
    assert flow.pinned_at == 1700000000.5
    assert (flow.prompts_after_pin, flow.gate_runs) == (1, 3)


def test_honest_absent_bookkeeping_reads_as_none_yet(tmp_path: Path) -> None:
    flow = Flow(tmp_path, {"status": "closed", "repo": "/r"})
    assert not flow.is_open and flow.prompt_id is None and flow.pinned_at is None
    assert (flow.prompts_after_pin, flow.gate_runs, flow.closed, flow.forced) == (0, 0, None, None)


@given(value=JSON, key=st.sampled_from(TEXTS))
def test_a_text_field_is_a_text_or_damaged_state(value: Any, key: str) -> None:
    flow = flow_with(FOLDER, **{key: value})
    if value is None or isinstance(value, str):
        assert getattr(flow, key) == value
    else:
        with pytest.raises(FlowStateError, match="damaged"):
            getattr(flow, key)


@given(value=JSON, key=st.sampled_from(COUNTS))
def test_a_count_is_a_count_or_damaged_state(value: Any, key: str) -> None:
    flow = flow_with(FOLDER, **{key: value})
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        assert getattr(flow, key) == value
    else:
        with pytest.raises(FlowStateError, match="damaged"):
            getattr(flow, key)


@given(value=JSON)
def test_pinned_at_is_a_moment_or_damaged_state(value: Any) -> None:
    flow = flow_with(FOLDER, pinned_at=value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if value is None or (number and math.isfinite(value)):
        assert flow.pinned_at == (None if value is None else float(value))
    else:
        with pytest.raises(FlowStateError, match="damaged"):
            _ = flow.pinned_at


@given(value=JSON)
def test_a_status_is_open_or_closed_or_damaged_state(value: Any) -> None:
    """Read as "closed", a damaged status would let every guard wave the calls through."""
    flow = flow_with(FOLDER, status=value)
    if value in ("open", "closed"):
        assert flow.is_open is (value == "open")
    else:
        with pytest.raises(FlowStateError, match="damaged"):
            _ = flow.is_open


def test_a_flow_loaded_with_a_damaged_status_is_damaged_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path))
    folder = Flow.folder_of("session-1")
    folder.mkdir(parents=True)
    (folder / "flow.json").write_text(json.dumps({**HONEST, "status": "opened"}))
    with pytest.raises(FlowStateError, match="status"):
        Flow.load("session-1")
    (folder / "flow.json").write_text(json.dumps(HONEST))
    loaded = Flow.load("session-1")
    assert loaded is not None and loaded.is_open  # the control


def test_a_damaged_prompt_count_never_releases_the_flow(tmp_path: Path) -> None:
    """Only the first prompt after the pin may release an interrupted flow: a count that
    cannot be read is not "no prompt yet"."""
    flow = flow_with(tmp_path, prompts_after_pin="0")
    with pytest.raises(FlowStateError, match="prompts_after_pin"):
        flow_end.released_by_interrupt(flow, {"prompt": "something else"})


def test_a_damaged_prompt_id_is_not_a_new_prompt_of_the_person(tmp_path: Path) -> None:
    flow = flow_with(tmp_path, last_prompt_id=["prompt-2"])
    with pytest.raises(FlowStateError, match="last_prompt_id"):
        pin._typed_by_the_user(flow, {"prompt": "go", "prompt_id": "prompt-3"})
    honest = flow_with(tmp_path, last_prompt_id="prompt-2")
    assert not pin._typed_by_the_user(honest, {"prompt": "go", "prompt_id": "prompt-2"})
    assert pin._typed_by_the_user(honest, {"prompt": "go", "prompt_id": "prompt-3"})


def test_a_damaged_pinned_prompt_id_does_not_fall_back_to_the_arguments(tmp_path: Path) -> None:
    """The pinned /implement line is found by its prompt id; a damaged id is not "no id",
    which would take the last line with the same arguments, a line the agent can write."""
    flow = flow_with(tmp_path, prompt_id=7)
    transcript = Transcript(b"", str(tmp_path / "session.jsonl"))
    with pytest.raises(FlowStateError, match="prompt_id"):
        pinned_flow.pinned_event(flow, transcript, [])


def test_a_damaged_run_count_never_stands_for_a_run(tmp_path: Path) -> None:
    flow = flow_with(tmp_path, gate_runs=1.5)
    with pytest.raises(FlowStateError, match="gate_runs"):
        flow.note_terminal("done", "tree:1")
    honest = flow_with(tmp_path, gate_runs=2)
    honest.note_terminal("done", "tree:1")
    assert honest.terminal is not None and honest.terminal.run == 2


def test_a_prompt_is_counted_in_its_types(tmp_path: Path) -> None:
    flow = flow_with(tmp_path)
    flow.note_prompt("prompt-2")
    flow.note_prompt(None)
    assert (flow.prompts_after_pin, flow.last_prompt_id) == (2, None)


@given(value=JSON)
def test_a_stop_count_is_exactly_one_or_counts_again_from_zero(value: Any) -> None:
    flow = flow_with(FOLDER, **{caps.STOP_COUNT_KEY: value})
    count = caps.StopCount.of(flow)
    exact = (
        isinstance(value, dict)
        and set(value) == {"blocks", "idle", "fingerprint"}
        and all(
            isinstance(value[k], int) and not isinstance(value[k], bool) and value[k] >= 0
            for k in ("blocks", "idle")
        )
        and (value["fingerprint"] is None or isinstance(value["fingerprint"], str))
    )
    if exact:
        assert count == caps.StopCount(value["blocks"], value["idle"], value["fingerprint"])
    else:
        assert count == caps.StopCount(0, 0, None)


def test_a_stop_count_is_read_back_as_written(tmp_path: Path) -> None:
    flow = flow_with(tmp_path)
    caps.StopCount(3, 2, "tree:1").save(flow)
    assert caps.StopCount.of(flow) == caps.StopCount(3, 2, "tree:1")
