"""Every folder of the run's PATH, entry by entry.

The tools the criteria name are resolved once and linked from the pin's own folder
(path_and_home.py), but a script a criterion runs calls others (`grep` in a project's
``check.sh``), and the run looks those up on the PATH pinned at /implement, whose folders
the agent may write (``~/.local/bin``). Each folder's entries are pinned by their stat
keys: an entry changed or removed since /implement, or a new one in front of a command of
that name further on the PATH, refuses the run. A new entry that shadows nothing is an
honest install (a console script of a new name).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, path_and_home

NAME = "path-folders"
COVERS = "every folder of the run's PATH, entry by entry"
ENTRIES_LIMIT = 20000  # entries kept of one folder; past it the pin cannot be taken


@dataclass(frozen=True)
class Folder:
    path: str
    entries: tuple[tuple[str, str], ...]  # (name, stat key) of each entry, sorted


@dataclass(frozen=True)
class PathFolders:
    folders: tuple[Folder, ...]  # in the PATH's order

    def to_json(self) -> dict[str, object]:
        return {"folders": [[folder.path, dict(folder.entries)] for folder in self.folders]}

    @classmethod
    def from_json(cls, value: object) -> PathFolders | None:
        record = base.fields(value, frozenset({"folders"}))
        listed = record["folders"] if record is not None else None
        if not isinstance(listed, list):
            return None
        folders = []
        for item in listed:
            if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                return None
            entries = base.text_pairs(item[1])
            if entries is None:
                return None
            folders.append(Folder(item[0], entries))
        return cls(tuple(folders))


def read(flow: Flow) -> PathFolders:
    return PIN.record(flow)


class PathFoldersPin(base.RecordPin[PathFolders]):
    """Its folders are what the run's PATH shows (the run's world holds nothing else of
    the user's): read-only to the run, so no command is planted there during it."""

    def take(self, flow: Flow, taking: base.Taking) -> None:
        folders = [Folder(path, _entries(path)) for path in _folders(flow)]
        base.write(flow, NAME, PathFolders(tuple(folders)).to_json())

    def before_run(self, flow: Flow) -> list[str]:
        pinned = read(flow).folders
        found = []
        for index, folder in enumerate(pinned):
            before, now = dict(folder.entries), dict(_entries(folder.path))
            for name, key in before.items():
                if now.get(name) != key:
                    found.append(f"{os.path.join(folder.path, name)} (an entry of PATH)")
            later = os.pathsep.join(other.path for other in pinned[index + 1 :])
            for name in sorted(set(now) - set(before)):
                if later and shutil.which(name, path=later) is not None:
                    found.append(f"{os.path.join(folder.path, name)} (new, shadows {name} on PATH)")
        return found

    def read_only(self, flow: Flow) -> list[str]:
        return [folder.path for folder in read(flow).folders]


PIN = PathFoldersPin(NAME, COVERS, PathFolders.from_json)


def _folders(flow: Flow) -> list[str]:
    """The run's PATH after the pin's tools folder: absolute folders, each once."""
    found = path_and_home.read(flow).path.split(os.pathsep)
    return list(dict.fromkeys(path for path in found if os.path.isabs(path)))


def _entries(folder: str) -> tuple[tuple[str, str], ...]:
    """(name, stat key) of each entry (links not followed: a link re-pointed changes its
    key); none for a folder that is not there."""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError as error:
        raise base.PinError(f"cannot list {folder} on PATH ({error})") from None
    if len(names) > ENTRIES_LIMIT:
        raise base.PinError(f"{folder} on PATH holds more than {ENTRIES_LIMIT} entries")
    return tuple((name, _stat_key(os.path.join(folder, name))) for name in names)


def _stat_key(path: str) -> str:
    try:
        found = os.lstat(path)
    except OSError:
        return "missing"
    return f"{found.st_dev}:{found.st_ino}:{found.st_mode:o}:{found.st_size}:{found.st_mtime_ns}"
