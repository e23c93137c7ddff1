"""A warning when the folder commands run in may not be the one the spec means.

A bash criterion's relative paths resolve in the rootdir, and a command that fails for the
wrong reason can still meet its condition. Said in the header and in the verdict when
the spec lies in a project of its own below the rootdir (``examples/pyproject.toml``), and
when no ini file chose the rootdir and it is neither the spec's folder nor the top of a
project (``.git``, ``pyproject.toml``, ...). The ordinary layout, ``specs/001-x/spec.md``
below the project's top, is not warned about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance.collect import spec_of_run
from pytest_acceptance.model import Method, SpecError
from pytest_acceptance.options import spec_paths

_WARNING = pytest.StashKey["str | None"]()


def rootdir_warning(config: pytest.Config) -> str | None:
    """Why the folder commands run in may not be the one the spec means (see the module
    doc), for specs whose bash criteria run there (no ``cwd:``). A command that cannot find
    its files there can still meet its condition (``exit code 2``), so this is said before
    the run and in the verdict."""
    if _WARNING not in config.stash:
        config.stash[_WARNING] = _warning(config)
    return config.stash[_WARNING]


# What marks the top of a project: a spec below one of these, nearer than the rootdir,
# belongs to that project, whose commands expect to run there.
PROJECT_MARKERS = (
    ".git", "pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini",
    "package.json", "Cargo.toml", "go.mod",
)  # fmt: skip


def _warning(config: pytest.Config) -> str | None:
    rootdir = config.rootpath.resolve()
    unchosen: list[str] = []  # spec folders away from a rootdir no ini file chose
    for path in spec_paths(config):
        folder = path.parent.resolve()
        if folder == rootdir or not _runs_in_the_rootdir(path, config):
            continue
        if folder.is_relative_to(rootdir):
            nested = _nearest_project(folder, rootdir)
            if nested is not None:
                return _nested_warning(path, nested, rootdir)
            if config.inipath is None and _project_marker(rootdir) is None:
                unchosen.append(str(folder))
        elif config.inipath is None:
            unchosen.append(str(folder))
    if not unchosen:
        return None
    specs = ", ".join(dict.fromkeys(unchosen))
    return (
        f"no ini file chose the rootdir, so bash commands run in {rootdir} (where pytest "
        f"started), not in the spec's folder {specs}: start pytest where the commands "
        "expect to run, put a pytest.ini (or [tool.pytest] in pyproject.toml) there, or give "
        "the criteria a cwd: (relative to the spec's folder)"
    )


def _runs_in_the_rootdir(path: Path, config: pytest.Config) -> bool:
    """Whether the spec has a bash criterion without ``cwd:``."""
    try:
        criteria = spec_of_run(config, path).criteria
    except (SpecError, OSError):
        return False  # collection reports it
    return any(c.method is Method.BASH and c.cwd is None for c in criteria)


def _nearest_project(folder: Path, rootdir: Path) -> tuple[Path, str] | None:
    """The nearest folder from the spec's up to (not including) the rootdir that is the top
    of a project of its own, and what marks it."""
    for candidate in (folder, *folder.parents):
        if candidate == rootdir:
            return None
        marker = _project_marker(candidate)
        if marker is not None:
            return candidate, marker
    return None


def _project_marker(folder: Path) -> str | None:
    return next((name for name in PROJECT_MARKERS if (folder / name).exists()), None)


def _nested_warning(spec: Path, nested: tuple[Path, str], rootdir: Path) -> str:
    home, marker = nested
    return (
        f"{spec.name} belongs to the project in {home} (its {marker}), but bash commands run "
        f"in the rootdir {rootdir}: start pytest in {home}, or give the criteria a cwd: "
        "(relative to the spec's folder)"
    )
