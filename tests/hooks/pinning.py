"""The table of pins taken in-process, for tests of one pin's check without a hook."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pinned_collection import Collection, Criterion
from pytest_acceptance.gate.pins import table
from pytest_acceptance.gate.pins.base import Collected, Taking


def take_pins(
    flow: Flow, closure: dict[str, Any] | None = None, interpreters: dict[str, str] | None = None
) -> None:
    """Every pin of the table, as /implement takes them: `closure`, the gate probe's report
    of its interpreter's closure; `interpreters`, {sys.prefix: python} of the environments
    the criteria's pytest ran in (no witness collection runs)."""
    collected = Collected(tuple(sorted((interpreters or {}).items())), frozenset())
    table.take_all(flow, Taking({"closure": closure or {}}, frozenset(), lambda: collected))


def collected(
    python: str = "", prefix: str = "", criteria: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """flow.json's ``collection`` record, as /implement's probe writes it: each criterion
    given by the fields a test cares about, the rest as the probe reports a bare criterion."""
    full = [Criterion.from_json({**_BARE_CRITERION, **item}) for item in criteria]
    return Collection(tuple(full), None, (), python, prefix).to_json()


_BARE_CRITERION: dict[str, Any] = {
    "id": "AC-1",
    "title": "works",
    "method": "bash",
    "line": 1,
    "command": None,
    "pass_condition": None,
    "description": "",
    "agent": None,
    "checks": [],
    "model": None,
    "timeout": None,
    "retries": None,
    "priority": "MUST",
    "cwd": None,
}
