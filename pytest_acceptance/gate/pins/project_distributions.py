"""The distribution metadata the project holds that declares code to load.

``importlib.metadata`` lists a distribution wherever a folder on the import path holds its
metadata folder (``*.dist-info``, ``*.egg-info``), and pytest loads every ``pytest11`` entry
point it lists; plugins read groups of their own (pytest-randomly's seeders). Under ``python
-m pytest`` the project's root is on that path. The witness lets a witnessed criterion's
pytest see only the distributions of /implement, but a criterion it does not witness (a
list, a script, ``make test``) would load a plugin the agent declared since, a module beside
it that rewrites every report.

So each ``entry_points.txt`` of a metadata folder anywhere in the project (its
version-control folder and the environments in it left out: those are pinned as
environments) is pinned by content, unless all it declares is commands (``console_scripts``,
``gui_scripts``: nothing loads those into a run, and ``pip install -e .`` of a project with a
command leaves one). One added, removed or changed since /implement refuses the run, before
it and after it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree import folders
from pytest_acceptance.tree.closure import MAX_FILES
from pytest_acceptance.tree.hostile import file_digest, read_regular_or_none

NAME = "project-distributions"
COVERS = "the entry points the project's distribution metadata declares"
METADATA = (".dist-info", ".egg-info")
ENTRY_POINTS = "entry_points.txt"
COMMANDS = frozenset({"console_scripts", "gui_scripts"})
_SKIPPED = folders.VERSION_CONTROL | folders.ENVIRONMENTS
_LIMIT = 1 << 20  # bytes: an entry_points.txt past this declares more than a command
_BUDGET = 60.0  # seconds to list the project's folders


@dataclass(frozen=True)
class ProjectDistributions:
    declared: tuple[tuple[str, str], ...]  # (entry_points.txt relative to the project, sha256)

    def to_json(self) -> dict[str, object]:
        return {"declared": dict(self.declared)}

    @classmethod
    def from_json(cls, value: object) -> ProjectDistributions | None:
        record = base.fields(value, frozenset({"declared"}))
        declared = base.text_pairs(record["declared"]) if record is not None else None
        return None if declared is None else cls(declared)


def read(flow: Flow) -> ProjectDistributions:
    return PIN.record(flow)


class ProjectDistributionsPin(base.RecordPin[ProjectDistributions]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        base.write(flow, NAME, ProjectDistributions(declaring(flow.repo)).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        pinned = dict(read(flow).declared)
        now = dict(declaring(flow.repo))
        changed = []
        for path in sorted(set(pinned) | set(now)):
            if pinned.get(path) != now.get(path):
                what = "changed" if path in pinned and path in now else "is new"
                what = "is gone" if path not in now else what
                changed.append(
                    f"{os.path.join(flow.repo, path)} {what}: distribution metadata of the "
                    "project that declares entry points pytest or its plugins load"
                )
        return changed

    def after_run(self, flow: Flow) -> list[str]:
        return self.before_run(flow)


PIN = ProjectDistributionsPin(NAME, COVERS, ProjectDistributions.from_json)


def declaring(repo: str) -> tuple[tuple[str, str], ...]:
    """(relative path, sha256) of each entry_points.txt in a metadata folder of the project
    that declares more than commands (read through links, as importlib.metadata reads it;
    one that cannot be read, or is too large, counts with what could be read of it)."""
    found = {}
    listed = 0
    deadline_at = time.monotonic() + _BUDGET
    for here, names, files in os.walk(repo):
        names[:] = [name for name in names if name not in _SKIPPED]
        listed += len(names) + len(files)
        if listed > MAX_FILES or time.monotonic() > deadline_at:
            raise base.PinError(f"cannot list the folders of {repo} for distribution metadata")
        for name in names:
            if name.lower().endswith(METADATA):  # as importlib.metadata matches a name
                path = os.path.join(here, name, ENTRY_POINTS)
                if _declares_code(path):
                    found[os.path.relpath(path, repo)] = file_digest(path) or "unreadable"
    return tuple(sorted(found.items()))


def _declares_code(path: str) -> bool:
    """Whether the file declares a group of entry points other than commands, its sections
    read as importlib.metadata reads them (UTF-8, ``str.splitlines``: ``\r``, ``\f`` and
    the rest part lines too, each line stripped)."""
    if not os.path.lexists(path):
        return False
    data = read_regular_or_none(path, _LIMIT)
    if data is None:
        return True  # unreadable, too large or no file: it may declare anything
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    lines = (line.strip() for line in text.splitlines())
    groups = {line.strip("[]") for line in lines if line.startswith("[") and line.endswith("]")}
    return any(group not in COMMANDS for group in groups)
