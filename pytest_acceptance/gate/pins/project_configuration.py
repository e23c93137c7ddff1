"""The project's pytest configuration files an honest ``pytest --acceptance SPEC`` could
read: those at the project's top, and those in each folder from the top down to the spec's
(pytest looks beside the spec first, before this plugin's rootdir correction), the
``conftest.py`` files there (which the honest run loads and the gate's run does not), and
the files /implement's probe saw settle the honest run's setup (the configuration file
pytest chose, wherever an addopts ``-c`` put it, and the ``@path`` argument files).

The gate's run takes its settings from the copies /implement pinned (flow_state.start), and
/implement's probe checked that an honest run of that configuration runs as the gate's run
does (gate_probe.honest_setup). A configuration edited since (a stricter timeout, another
rootdir in addopts, a file added beside the spec) would make the honest run another run
than the one the gate verifies: any change to these files since /implement, a file added,
removed or rewritten (read through a link, as pytest reads it), refuses the run, before it
and after it. Of a ``conftest.py`` what counts is what can decide results (its pytest hooks,
``pytest_plugins``, dynamic definitions): its fixtures stay the agent's to edit. The record
holds each name's digest, or none for a file absent then.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES
from pytest_acceptance.tree.hostile import file_digest

NAME = "project-configuration"
COVERS = "the pytest configuration and conftest files an honest run could read"
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


def places(flow: Flow, settled_by: object = ()) -> list[str]:
    """Every configuration file name, and ``conftest.py``, in the folders from the project's
    top down to the spec's folder (the top alone when the spec lies outside the project),
    and the files that settled the honest run's setup at /implement (`settled_by`, the
    probe's: the configuration file pytest chose, the ``@path`` argument files)."""
    top = os.path.realpath(flow.repo)
    folder = os.path.dirname(os.path.realpath(flow.spec_path or top))
    folders = [top]
    if folder.startswith(os.path.join(top, "")):
        parts = os.path.relpath(folder, top).split(os.sep)
        folders += [os.path.join(top, *parts[: depth + 1]) for depth in range(len(parts))]
    names = (*PYTEST_CONFIG_FILES, "conftest.py")
    found = [os.path.join(place, name) for place in folders for name in names]
    if isinstance(settled_by, (list, tuple)):
        found += [path for path in settled_by if isinstance(path, str) and os.path.isabs(path)]
    return sorted(set(found))


def _digest(path: str) -> str:
    if os.path.basename(path) == CONFTEST:
        return _hooks_digest(path)
    return file_digest(path) or ABSENT


CONFTEST = "conftest.py"
# Calls by which a module can define names its source does not spell: a conftest using any
# is taken whole, as if every edit of it touched its hooks.
_DYNAMIC = frozenset({"exec", "eval", "globals", "locals", "vars", "setattr", "__import__"})


def _hooks_digest(path: str) -> str:
    """What of a conftest can decide the honest run's results: its pytest hooks and
    ``pytest_plugins`` (every definition, import or assignment of a ``pytest_`` name, and
    any ``import *``), and any call that defines names dynamically. An edit of its
    fixtures or helpers leaves this unchanged: honest work goes on. A file Python cannot
    parse is taken whole; none there is a conftest without hooks."""
    import ast
    import hashlib

    from pytest_acceptance.tree.hostile import read_regular_or_none

    source = read_regular_or_none(path, 16 << 20)
    try:
        tree = ast.parse(source or b"")  # none there: no hook either
    except (SyntaxError, ValueError):
        return file_digest(path) or ABSENT
    surface = [ast.dump(node) for node in ast.walk(tree) if _decides(node)]
    return "hooks:" + hashlib.sha256("\n".join(surface).encode()).hexdigest()


def _decides(node: object) -> bool:
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name.startswith("pytest_")
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any(
            alias.name == "*" or (alias.asname or alias.name).split(".")[-1].startswith("pytest_")
            for alias in node.names
        )
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            isinstance(name, ast.Name) and name.id.startswith("pytest_")
            for target in targets
            for name in ast.walk(target)
        )
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC
    return False


def read(flow: Flow) -> ProjectConfiguration:
    return PIN.record(flow)


class ProjectConfigurationPin(base.RecordPin[ProjectConfiguration]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        settled_by = taking.probe.get("setup_files", ())
        files = tuple((path, _digest(path)) for path in places(flow, settled_by))
        base.write(flow, NAME, ProjectConfiguration(files).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        return read(flow).changes()

    def after_run(self, flow: Flow) -> list[str]:
        return self.before_run(flow)


PIN = ProjectConfigurationPin(NAME, COVERS, ProjectConfiguration.from_json)
