"""The project's pytest configuration files an honest ``pytest --acceptance SPEC`` could
read: those at the project's top, and those in each folder from the top down to the spec's
(pytest looks beside the spec first, before this plugin's rootdir correction).

The gate's run takes its settings from the copies /implement pinned (flow_state.start), and
/implement's probe checked that an honest run of that configuration runs as the gate's run
does (gate_probe.honest_setup). A configuration edited since (a stricter timeout, another
rootdir in addopts, a file added beside the spec) would make the honest run another run
than the one the gate verifies: any change to these files since /implement, a file added,
removed or rewritten (read through a link, as pytest reads it), refuses the run, before it
and after it. The record holds each name's digest, or none for a file absent then.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES
from pytest_acceptance.tree.hostile import file_digest

NAME = "project-configuration"
COVERS = "the pytest configuration files an honest run could read, top to the spec's folder"
ABSENT = ""  # the digest recorded for a file pytest found no file at


@dataclass(frozen=True)
class ProjectConfiguration:
    files: tuple[tuple[str, str], ...]  # (path, digest or ABSENT), sorted

    def to_json(self) -> dict[str, object]:
        return {"files": dict(self.files)}

    @classmethod
    def from_json(cls, value: object) -> ProjectConfiguration | None:
        record = base.fields(value, frozenset({"files"}))
        files = base.text_pairs(record["files"]) if record is not None else None
        return None if files is None else cls(files)

    def changes(self) -> list[str]:
        changed = []
        for path, digest in self.files:
            now = _digest(path)
            if now != digest:
                what = "was added" if digest == ABSENT else "was removed" if not now else "changed"
                changed.append(f"the project's pytest configuration {path} {what}")
        return changed


def places(flow: Flow) -> list[str]:
    """Every configuration file name in the folders from the project's top down to the
    spec's folder (the top alone when the spec lies outside the project)."""
    top = os.path.realpath(flow.repo)
    folder = os.path.dirname(os.path.realpath(flow.spec_path or top))
    folders = [top]
    if folder.startswith(os.path.join(top, "")):
        parts = os.path.relpath(folder, top).split(os.sep)
        folders += [os.path.join(top, *parts[: depth + 1]) for depth in range(len(parts))]
    return [os.path.join(place, name) for place in folders for name in PYTEST_CONFIG_FILES]


def _digest(path: str) -> str:
    return file_digest(path) or ABSENT


def read(flow: Flow) -> ProjectConfiguration:
    return PIN.record(flow)


class ProjectConfigurationPin(base.RecordPin[ProjectConfiguration]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        files = tuple(sorted((path, _digest(path)) for path in places(flow)))
        base.write(flow, NAME, ProjectConfiguration(files).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        return read(flow).changes()

    def after_run(self, flow: Flow) -> list[str]:
        return self.before_run(flow)


PIN = ProjectConfigurationPin(NAME, COVERS, ProjectConfiguration.from_json)
