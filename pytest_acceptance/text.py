"""How paths and places read in everything the plugin writes for people: relative to the
rootdir, ``file:line``."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_acceptance.model import Criterion


def spec_location(criterion: Criterion, rootdir: Path) -> str:
    return f"{display_path(criterion.location.path, rootdir)}:{criterion.location.line}"


def display_path(path: Path, rootdir: Path) -> str:
    """Relative to the rootdir, also for a spec beside the project (``../specs/x.md``)."""
    resolved, root = path.resolve(), rootdir.resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.relpath(resolved, root)).as_posix()
