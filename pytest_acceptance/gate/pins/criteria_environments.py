"""Each other environment a criterion's pytest ran in at /implement (a project's
``.venv/bin/python -m pytest``, a tox or uv environment), pinned like the gate's own: the
gate's run uses them as they are, checked before and after it and read-only to it, and
trusts no session run in an environment not pinned here (witness.pinned_environments).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, closures

NAME = "criteria-environments"
COVERS = "the environments the criteria's pytest ran in, file by file"


@dataclass(frozen=True)
class CriteriaEnvironments:
    environments: tuple[closures.Environment, ...]

    def to_json(self) -> dict[str, object]:
        return {"environments": [environment.to_json() for environment in self.environments]}

    @classmethod
    def from_json(cls, value: object) -> CriteriaEnvironments | None:
        record = base.fields(value, frozenset({"environments"}))
        listed = record["environments"] if record is not None else None
        if not isinstance(listed, list):
            return None
        found = [closures.Environment.from_json(item) for item in listed]
        if any(environment is None for environment in found):
            return None
        return cls(tuple(environment for environment in found if environment is not None))


def read(flow: Flow) -> CriteriaEnvironments:
    return PIN.record(flow)


class CriteriaEnvironmentsPin(base.RecordPin[CriteriaEnvironments]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        gate_prefix = os.path.realpath(flow.prefix)
        pinned: list[closures.Environment] = []
        for prefix, python in sorted(taking.collected().interpreters):
            if os.path.realpath(prefix) == gate_prefix:
                continue
            file = f"closure-{len(pinned)}.json"
            try:
                pinned.append(closures.take(flow, python, closures.probe(python), file))
            except base.PinError as error:
                raise base.PinError(f"the environment of {python}: {error}") from None
        base.write(flow, NAME, CriteriaEnvironments(tuple(pinned)).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        return [change for env in read(flow).environments for change in env.changes(flow)]

    def after_run(self, flow: Flow) -> list[str]:
        return self.before_run(flow)

    def read_only(self, flow: Flow) -> list[str]:
        return [path for env in read(flow).environments for path in env.paths()]


PIN = CriteriaEnvironmentsPin(NAME, COVERS, CriteriaEnvironments.from_json)
