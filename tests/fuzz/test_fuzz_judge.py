"""Fuzzing the judge-answer parser: any JSON, any near-JSON, any text ends as a ``JudgeVerdict``
or a ``MalformedVerdict`` (re-dispatch, then an error) — never another exception, and a
pass only for an answer that is exactly a pass."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.agent.prompt import JudgeVerdict, MalformedVerdict, parse_verdict_text

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
    | st.sampled_from(["pass", "fail", "a.py:1", "x:0"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["status", "summary", "issues", "location", "expected", "actual", "x"]),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


def outcome(text: str) -> JudgeVerdict | None:
    try:
        verdict = parse_verdict_text(text)
    except MalformedVerdict as error:
        assert len(str(error)) < 1_000
        return None
    assert isinstance(verdict, JudgeVerdict)
    assert verdict.passed == (verdict.issues == ())
    return verdict


@given(_JSON)
def test_any_json_value_is_a_verdict_or_malformed(answer: object) -> None:
    verdict = outcome(json.dumps(answer))
    if verdict is not None and verdict.passed:
        assert isinstance(answer, dict) and answer["status"] == "pass"


_NEAR = st.sampled_from(
    [
        *'{}[]",:\\ ',
        *["NaN", "-Infinity", "1" * 5000, "\ufffd", "\\u0000", "\\ud800", "1e999"],
        *['"status"', '"pass"', '"fail"', '"issues"', '"summary"', "[]", '"a.py:1"', "null"],
        *["[" * 40, "{" * 40, "]" * 40],
    ]
)


@given(st.lists(_NEAR | st.text(max_size=3), max_size=40).map("".join))
def test_near_json_is_a_verdict_or_malformed(text: str) -> None:
    outcome(text)


@given(_JSON, st.sampled_from(["status", "summary", "issues"]), _JSON)
def test_a_repeated_key_is_always_malformed(answer: object, key: str, again: object) -> None:
    body = json.dumps({"status": "fail", "summary": "s", "issues": [], "x": answer})
    text = body[:-1] + f", {json.dumps(key)}: {json.dumps(again)}}}"
    assert outcome(text) is None
