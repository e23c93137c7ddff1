"""The table of pins taken in-process, for tests of one pin's check without a hook."""

from __future__ import annotations

from typing import Any

from pytest_acceptance.claude.flow_state import Flow
from pytest_acceptance.claude.pins import table
from pytest_acceptance.claude.pins.base import Collected, Taking


def take_pins(
    flow: Flow, closure: dict[str, Any] | None = None, interpreters: dict[str, str] | None = None
) -> None:
    """Every pin of the table, as /implement takes them: `closure`, the gate probe's report
    of its interpreter's closure; `interpreters`, {sys.prefix: python} of the environments
    the criteria's pytest ran in (no witness collection runs)."""
    collected = Collected(tuple(sorted((interpreters or {}).items())), frozenset())
    table.take_all(flow, Taking({"closure": closure or {}}, frozenset(), lambda: collected))
