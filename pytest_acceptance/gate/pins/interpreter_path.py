"""How the gate's interpreter path resolves: each symbolic link met on the way, the file it
ends at, and the entries of its bin folder (interpreter_paths.py). A hop that changed, or a
bin entry changed, removed or new in front of a command on the run's PATH, refuses the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_acceptance.gate import gate_env, interpreter_paths
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, path_and_home

NAME = "interpreter-path"
COVERS = "the gate's interpreter path, link by link, and its bin folder"


@dataclass(frozen=True)
class InterpreterPath:
    python: str
    hops: tuple[tuple[str, str], ...]  # (link, target) each, then (final path, sha256)
    bin: tuple[tuple[str, str], ...]  # (name, kind) of each entry of its folder

    def to_json(self) -> dict[str, object]:
        return {
            "python": self.python,
            "hops": [list(hop) for hop in self.hops],
            "bin": dict(self.bin),
        }

    @classmethod
    def from_json(cls, value: object) -> InterpreterPath | None:
        record = base.fields(value, frozenset({"python", "hops", "bin"}))
        if record is None or not isinstance(record["python"], str):
            return None
        hops = record["hops"]
        if not isinstance(hops, list) or not all(_pair(hop) for hop in hops):
            return None
        bins = base.text_pairs(record["bin"])
        if bins is None:
            return None
        return cls(record["python"], tuple((hop[0], hop[1]) for hop in hops), bins)


def _pair(value: object) -> bool:
    return base.strings(value) is not None and len(value) == 2  # type: ignore[arg-type]


def read(flow: Flow) -> InterpreterPath:
    return PIN.record(flow)


class InterpreterPathPin(base.RecordPin[InterpreterPath]):
    """The interpreter's folder (pinned entry by entry), each link of its path and the
    file they end at are read-only to the run, and what its world holds of them; the rest
    of its installation is the gate's environment's (gate_environment)."""

    def take(self, flow: Flow, taking: base.Taking) -> None:
        python = flow.python
        hops = tuple((hop[0], hop[1]) for hop in interpreter_paths.symlink_hops(python))
        bins = tuple(sorted(interpreter_paths.bin_entries(python).items()))
        base.write(flow, NAME, InterpreterPath(python, hops, bins).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        pinned = read(flow)
        rest = gate_env.rest_of_path(path_and_home.read(flow), flow)
        hops = [list(hop) for hop in pinned.hops]
        return interpreter_paths.changes(pinned.python, hops, dict(pinned.bin), rest)

    def read_only(self, flow: Flow) -> list[str]:
        pinned = read(flow)  # each link of its path is made again in the run's world
        return [os.path.dirname(pinned.python), *(hop[0] for hop in pinned.hops)]


PIN = InterpreterPathPin(NAME, COVERS, InterpreterPath.from_json)
