"""Reports read back on the xdist controller share their repeated strings (keyword names,
property names, the result's keys, status and message) and keep every value equal."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_acceptance.plugin import share_strings


def fresh(text: str) -> str:
    """An equal string that is a new object, as one read back from a channel is."""
    return "".join(list(text))


def serialized(criterion: str) -> dict[str, Any]:
    return {
        "nodeid": f"spec.md::{criterion}",
        "location": (fresh("spec.md"), 3, f"{criterion}: title [bash]"),
        "keywords": {fresh("bash"): 1, fresh("must"): 1, criterion: 1},
        "outcome": "passed",
        "longrepr": None,
        "when": "call",
        "sections": [],
        "duration": 0.01,
        "start": 0.0,
        "stop": 0.01,
        "user_properties": [(fresh("criterion"), criterion), (fresh("method"), fresh("bash"))],
        fresh("acceptance"): {
            fresh("status"): fresh("passed"),
            fresh("message"): fresh("exit code 0; every condition holds"),
            fresh("extra"): {fresh("exit_code"): 0},
        },
    }


def test_two_reports_share_their_repeated_strings_and_keep_their_values() -> None:
    first, second = (pytest.TestReport._from_json(serialized(c)) for c in ("AC-1", "AC-2"))
    before = [(r.keywords, r.user_properties, r.location, r.acceptance) for r in (first, second)]  # type: ignore[attr-defined]
    for report in (first, second):
        share_strings(report)
    after = [(r.keywords, r.user_properties, r.location, r.acceptance) for r in (first, second)]  # type: ignore[attr-defined]
    assert after == before
    one, two = first.acceptance, second.acceptance  # type: ignore[attr-defined]
    assert [id(key) for key in one] == [id(key) for key in two]
    assert one["message"] is two["message"] and one["status"] is two["status"]
    assert [id(k) for k in one["extra"]] == [id(k) for k in two["extra"]]
    assert next(iter(first.keywords)) is next(iter(second.keywords))
    assert first.user_properties[1][1] is second.user_properties[1][1]
    assert first.location[0] is second.location[0]
