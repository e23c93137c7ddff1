"""The gate's own interpreter's environment, file by file (tree/closure.py): its site
folders, standard library, bin folder and startup files, hashed by the hook's own process
(a probe in a tampered interpreter could lie about them). Any file added, removed or changed
since /implement refuses the run; one the run changed refuses its result; the run sees them
read-only.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, closures

NAME = "gate-environment"
COVERS = "the gate's interpreter's environment, file by file"
FILE = "closure.json"  # the digests, in the flow's folder


def read(flow: Flow) -> closures.Environment:
    return PIN.record(flow)


class GateEnvironmentPin(base.RecordPin[closures.Environment]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        wanted: Mapping[str, Any] = taking.probe.get("closure") or {}
        if not isinstance(wanted, dict):
            wanted = {}
        base.write(flow, NAME, closures.take(flow, flow.python, wanted, FILE).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        return read(flow).changes(flow)

    def after_run(self, flow: Flow) -> list[str]:
        return read(flow).changes(flow)

    def read_only(self, flow: Flow) -> list[str]:
        return read(flow).paths()


PIN = GateEnvironmentPin(NAME, COVERS, closures.Environment.from_json)
