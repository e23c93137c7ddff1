"""A warning when the folder commands run in may not be the one the spec means.

In a project without an ini file, pytest makes the rootdir the folder it started in; a
bash criterion's relative paths then resolve there, and a command that fails for the wrong
reason can still meet its condition. Said in the header and in the verdict.
"""

from __future__ import annotations

import pytest

from pytest_acceptance.collect import load_spec
from pytest_acceptance.model import Method, SpecError
from pytest_acceptance.options import spec_paths

_WARNING = pytest.StashKey["str | None"]()


def rootdir_warning(config: pytest.Config) -> str | None:
    """Why the folder commands run in may not be the one the spec means: no ini file chose
    the rootdir (it is where pytest started) and it is not the folder of a spec whose bash
    criteria run there (no ``cwd:``). A command that cannot find its files there can still
    meet its condition (``exit code 2``), so this is said before the run and in the verdict."""
    if _WARNING not in config.stash:
        config.stash[_WARNING] = _warning(config)
    return config.stash[_WARNING]


def _warning(config: pytest.Config) -> str | None:
    if config.inipath is not None:
        return None
    rootdir = config.rootpath
    folders = []
    for path in spec_paths(config):
        try:
            criteria = load_spec(path, rootdir).criteria
        except (SpecError, OSError):
            continue  # collection reports it
        runs_here = any(c.method is Method.BASH and c.cwd is None for c in criteria)
        if runs_here and path.parent.resolve() != rootdir.resolve():
            folders.append(str(path.parent.resolve()))
    if not folders:
        return None
    specs = ", ".join(dict.fromkeys(folders))
    return (
        f"no ini file chose the rootdir, so bash commands run in {rootdir} (where pytest "
        f"started), not in the spec's folder {specs}: start pytest where the commands "
        "expect to run, put a pytest.ini (or [tool.pytest] in pyproject.toml) there, or give "
        "the criteria a cwd: (relative to the spec's folder)"
    )
