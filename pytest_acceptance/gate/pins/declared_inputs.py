"""The files and folders outside the project that its criteria read, as the project's
configuration declares them (``acceptance_reads``: one path a line, ``~`` expanded, a
relative path taken from the configuration's folder, the project's root).

Under bubblewrap the gate's run sees nothing of the machine that no pin shows (apart.py),
so a configuration or a helper folder beside the project is not there unless declared.
The declaration is read from the configuration as /implement pinned it (flow_state.start
copies it; a line the agent adds later counts for nothing). Each declared path is pinned
at /implement by its real path and its content, file by file (tree/closure.py's digests):
a path missing then, inside the project, or holding it refuses; any change since (a file
added, removed or changed, or the path now naming another place) refuses the run, before
it and after it. The run sees each read-only. At the levels without bubblewrap's world
the digests still hold.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree import closure

NAME = "declared-inputs"
COVERS = "the files and folders outside the project the configuration declares (acceptance_reads)"
SETTING = "acceptance_reads"
ENTRIES_LIMIT = 20000  # entries of all declared folders; past it the pin cannot be taken
BUDGET = 60.0  # seconds to pin, or to check, the declared inputs' files


@dataclass(frozen=True)
class DeclaredInput:
    """One declared path: as declared (expanded, absolute), the place it named at
    /implement, and (path, stat key, digest) of each entry there (tree/closure.py)."""

    path: str
    real: str
    entries: tuple[tuple[str, str, str], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "real": self.real,
            "entries": {entry: [key, digest] for entry, key, digest in self.entries},
        }

    @classmethod
    def from_json(cls, value: object) -> DeclaredInput | None:
        record = base.fields(value, frozenset({"path", "real", "entries"}))
        if record is None or not isinstance(record["path"], str):
            return None
        entries = record["entries"]
        if not isinstance(record["real"], str) or not isinstance(entries, dict):
            return None
        found = []
        for entry, described in entries.items():
            pair = base.strings(described)
            if pair is None or len(pair) != 2:
                return None
            found.append((entry, *pair))
        return cls(record["path"], record["real"], tuple(found))

    def changes(self) -> list[str]:
        """What changed since /implement: the place the path names, each entry there."""
        now = os.path.realpath(self.path)
        if now != self.real:
            return [f"{self.path} now names {now}, not {self.real} ({SETTING})"]
        pinned = {entry: [key, digest] for entry, key, digest in self.entries}
        try:
            found = closure.changes(pinned, _places(self.real), time.monotonic() + BUDGET)
        except (closure.ClosureError, base.PinError) as error:
            raise base.PinError(f"cannot check {self.path} ({SETTING}): {error}") from None
        return [f"{change} ({SETTING})" for change in found]


@dataclass(frozen=True)
class DeclaredInputs:
    inputs: tuple[DeclaredInput, ...]

    def to_json(self) -> dict[str, object]:
        return {"inputs": [declared.to_json() for declared in self.inputs]}

    @classmethod
    def from_json(cls, value: object) -> DeclaredInputs | None:
        record = base.fields(value, frozenset({"inputs"}))
        listed = record["inputs"] if record is not None else None
        if not isinstance(listed, list):
            return None
        found = [DeclaredInput.from_json(item) for item in listed]
        if any(declared is None for declared in found):
            return None
        return cls(tuple(declared for declared in found if declared is not None))


def read(flow: Flow) -> DeclaredInputs:
    return PIN.record(flow)


class DeclaredInputsPin(base.RecordPin[DeclaredInputs]):
    def take(self, flow: Flow, taking: base.Taking) -> None:
        inputs = []
        for path in declared(flow):
            real = _outside(path, flow.repo)
            try:
                entries = closure.pin(_places(real), time.monotonic() + BUDGET)
            except closure.ClosureError as error:
                raise base.PinError(f"cannot pin {path} ({SETTING}): {error}") from None
            described = tuple((entry, key, digest) for entry, (key, digest) in entries.items())
            inputs.append(DeclaredInput(path, real, described))
        base.write(flow, NAME, DeclaredInputs(tuple(inputs)).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        return [change for declared in read(flow).inputs for change in declared.changes()]

    def after_run(self, flow: Flow) -> list[str]:
        return self.before_run(flow)

    def read_only(self, flow: Flow) -> list[str]:
        return [path for declared in read(flow).inputs for path in (declared.path, declared.real)]


PIN = DeclaredInputsPin(NAME, COVERS, DeclaredInputs.from_json)


def refusal(flow: Flow) -> str | None:
    """Why the declared inputs could not be pinned at /implement (the gate refuses every run
    of the flow for it), said at /implement already; None when they were, or when no pin
    was taken at all (the prompt hook says that itself)."""
    if flow.collection is None:
        return None
    try:
        read(flow)
    except base.PinError as error:
        return (
            f"pytest-acceptance: {error}. The gate refuses every run of this flow for it: "
            f"fix {SETTING} in the project's pytest configuration, then start /implement again."
        )
    return None


def declared(flow: Flow) -> list[str]:
    """The paths the pinned configuration declares, expanded and absolute, each once."""
    collection = flow.collection
    settings = dict(collection.settings) if collection is not None else {}
    return parse(settings.get(SETTING, ""), flow.repo)


def parse(value: str, root: str) -> list[str]:
    """One path a line (blank lines skipped), ``~`` expanded, relative ones from `root`."""
    found: dict[str, None] = {}
    for line in value.splitlines():
        line = line.strip()
        if line:
            found[os.path.normpath(os.path.join(root, os.path.expanduser(line)))] = None
    return list(found)


def _outside(path: str, repo: str) -> str:
    """The real path `path` names; PinError when it is missing, or inside the project (the
    project is pinned as itself), or holds it."""
    real, project = os.path.realpath(path), os.path.realpath(repo)
    if not os.path.exists(real):
        raise base.PinError(f"{path}, which {SETTING} declares, does not exist")
    if real == project or real.startswith(os.path.join(project, "")):
        raise base.PinError(
            f"{path}, which {SETTING} declares, is inside the project: declare only what "
            "lies outside it"
        )
    if project.startswith(os.path.join(real, "")):
        raise base.PinError(
            f"{path}, which {SETTING} declares, holds the project: declare the files or "
            "folders beside it that the criteria read"
        )
    return real


def _places(real: str) -> closure.Places:
    """Every entry at `real` (itself for a file; for a folder each file, link and folder
    below it, hidden ones included, links never followed), as single files."""
    return closure.Places([], _listing(real), [])


def _listing(real: str) -> list[str]:
    if not os.path.isdir(real) or os.path.islink(real):
        return [real]
    found = [real]
    for folder, folders, files in os.walk(real):
        found += [os.path.join(folder, name) for name in (*folders, *files)]
        if len(found) > ENTRIES_LIMIT:
            raise base.PinError(f"{real} ({SETTING}) holds more than {ENTRIES_LIMIT} entries")
    return found
