"""The names a new project module must not take, and the project's modules at /implement.

A module the project gains that is named like one the run imports -- one the gate's
environment offers, one of the project's own, one the gate imports its own code by, one an
environment's code asked for at /implement and did not find, or that its start-up code asks
for -- would be imported instead of it; a new sourceless ``.pyc`` is code without source.
Either refuses the run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, closures, gate_environment
from pytest_acceptance.tree import closure, imports

NAME = "shadowed-names"
COVERS = "the module names a new project module must not take"


@dataclass(frozen=True)
class ShadowedNames:
    names: frozenset[str]
    missing: frozenset[str]  # of those, the environment's code asks for and nothing offers
    project_modules: tuple[str, ...]  # the project's modules at /implement, relative paths

    def to_json(self) -> dict[str, object]:
        return {
            "names": sorted(self.names),
            "missing": sorted(self.missing),
            "project_modules": list(self.project_modules),
        }

    @classmethod
    def from_json(cls, value: object) -> ShadowedNames | None:
        record = base.fields(value, frozenset({"names", "missing", "project_modules"}))
        if record is None:
            return None
        names, missing = base.strings(record["names"]), base.strings(record["missing"])
        modules = base.strings(record["project_modules"])
        if names is None or missing is None or modules is None:
            return None
        return cls(frozenset(names), frozenset(missing), modules)


def read(flow: Flow) -> ShadowedNames:
    return PIN.record(flow)


class ShadowedNamesPin(base.RecordPin[ShadowedNames]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        environment = gate_environment.read(flow)
        modules = _project_modules(flow)
        offered = _environment_names(environment, environment.digests(flow))
        offered |= set(modules.values()) | taking.gate_names
        asked = taking.collected().missed_names | _asked_at_startup(taking)
        record = ShadowedNames(frozenset(offered | asked), asked - offered, tuple(sorted(modules)))
        base.write(flow, NAME, record.to_json())

    def before_run(self, flow: Flow) -> list[str]:
        pinned = read(flow)
        found = closure.new_modules(
            list(pinned.project_modules),
            _project_modules(flow),
            set(pinned.names),
            set(pinned.missing),
        )
        return [os.path.join(flow.repo, entry) for entry in found]


PIN = ShadowedNamesPin(NAME, COVERS, ShadowedNames.from_json)


def _asked_at_startup(taking: base.Taking) -> frozenset[str]:
    """The names the environment's start-up code asks to import (what a pytest of the gate's
    interpreter imports before any test, gate_probe.startup_sources), whether a criterion's
    pytest is witnessed or not: the standard library's `subprocess` asks for Windows'
    `msvcrt`, `copy` for Jython's `org`, and such an import runs a project module of the
    name even when it then fails."""
    sources = base.strings(taking.probe.get("startup_sources"))
    if sources is None:
        raise base.PinError("the gate's probe did not list its start-up modules")
    try:
        return frozenset(imports.asked_names(list(sources)))
    except OSError as error:
        raise base.PinError(f"cannot read the environment's start-up code: {error}") from None


def _project_modules(flow: Flow) -> dict[str, str]:
    try:
        return closure.project_modules(flow.repo, time.monotonic() + closures.BUDGET)
    except closure.ClosureError as error:
        raise base.PinError(f"cannot look for modules that shadow others ({error})") from None


def _environment_names(environment: closures.Environment, pinned: closure.Pin) -> set[str]:
    """The top-level names the environment offers: those of its import path's folders, and
    the name of each package folder its run imports (a gate root is a package, whose own
    modules are no top-level names: markdown_it's `helpers` does not shadow a project's)."""
    path_roots = [root for root in environment.roots if root not in environment.packages]
    names = closure.module_names(pinned, path_roots)
    names |= {os.path.basename(root.rstrip(os.sep)).split(".")[0] for root in environment.packages}
    return {name for name in names if name.isidentifier()}
