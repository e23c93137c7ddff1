"""The gate's result is a typed record: what /done and /escalate are decided on is read from
its fields, and a stored result reads back only in its exact shape (anything else is no
result, so the gate runs again: a damaged file never decides)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate.gate_result import CriterionOutcome, GateResult

PASSED = CriterionOutcome("AC-1", "works", "passed", "", "bash", witnessed=True)
RESULT = GateResult(
    fingerprint="tree-1",
    fingerprint_after="tree-1",
    at=1.0,
    returncode=0,
    tail="1 passed",
    spec_sha256="abc",
    status="pass",
    exit_code=0,
    complete=True,
    selected=1,
    criteria=(PASSED,),
)


def test_a_stored_result_reads_back_as_the_same_record() -> None:
    stored = json.loads(json.dumps({**RESULT.to_json(), "reuse_key": "k"}))
    assert GateResult.from_json(stored) == RESULT


def test_a_real_run_is_one_whose_verdict_selected_criteria_and_names_pytests_exit_code() -> None:
    assert RESULT.real_run
    assert not RESULT.replace(selected=0).real_run
    assert not RESULT.replace(exit_code=1).real_run  # the verdict says 1, pytest said 0
    assert not RESULT.replace(error="no verdict").real_run


def test_the_stored_real_run_flag_is_derived_never_read() -> None:
    """A stored file that says real_run: true over a run that selected nothing reads back as
    what its fields say."""
    forged = {**RESULT.to_json(), "selected": 0, "real_run": True}
    result = GateResult.from_json(forged)
    assert result is not None and not result.real_run


def test_a_stored_result_missing_what_decides_is_no_result() -> None:
    for key in ("fingerprint", "fingerprint_after", "at", "returncode"):
        damaged = RESULT.to_json()
        del damaged[key]
        assert GateResult.from_json(damaged) is None, key


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.sampled_from(sorted(RESULT.to_json())), json_values) | json_values)
def test_any_json_reads_back_as_a_result_or_none_and_never_raises(data: Any) -> None:
    result = GateResult.from_json(data)
    assert result is None or isinstance(result, GateResult)
    if result is not None:
        assert all(isinstance(c, CriterionOutcome) for c in result.criteria)
        assert isinstance(result.real_run, bool)
