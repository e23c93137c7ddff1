"""Data files beside the tests: expected outputs, fixtures, snapshots and golden files a
criterion's tests compare against (``tests/data/expected.json``, ``__snapshots__/*.snap``,
Go's ``testdata/``). Rewriting one weakens the check as surely as editing the test, and has
no notion of "adding a test": each is pinned by content hash, and a change or deletion is
reported (a changed snapshot is a human decision). New data files are never reported: new
tests bring their own.

Where: the test folders holding the tests a criterion runs (``tests/``, ``__tests__/``, ...),
and the data folders beside a pinned test file (``__snapshots__``, ``testdata``,
``fixtures``, ...). What: every file there but test files and Python modules (those have
pins of their own) and bytecode. Untracked files the project's ``.gitignore`` files exclude
are generated outputs (a test run rewrites them), never pinned; when git cannot tell (no git,
no repository), every file counts.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

from pytest_acceptance.tree import repository

from .files import GO_TEST, JS_SOURCE, JS_TEST, PYTHON_TEST, enclosing_test_folder

_DATA_FOLDERS = ("__snapshots__", "testdata", "fixtures", "__fixtures__", "snapshots", "golden")
_GIT_TIMEOUT = 30.0


def is_data(relative: str) -> bool:
    """A file in a test folder that is no test, no Python module and no bytecode."""
    parts = relative.split("/")
    name = parts[-1]
    if name.endswith((".py", ".pyc", ".pyo")) or JS_TEST.search(name) or GO_TEST.search(name):
        return False
    return not (JS_SOURCE.search(name) and "__tests__" in parts)  # jest runs those as tests


def data_folders(root: str, named: Iterable[str]) -> list[str]:
    """Where the data of the pinned test files sits: their test folder, else the data
    folders beside them."""
    folders = set()
    for relative in named:
        name = relative.rsplit("/", 1)[-1]
        test = PYTHON_TEST.match(name) or JS_TEST.search(name) or GO_TEST.search(name)
        if not test or name == "conftest.py":
            continue
        directory = os.path.dirname(relative)
        enclosing = enclosing_test_folder(directory)
        if enclosing is not None:
            folders.add(enclosing)
            continue
        for folder in _DATA_FOLDERS:
            beside = f"{directory}/{folder}" if directory else folder
            if os.path.isdir(os.path.join(root, beside)):
                folders.add(beside)
    return sorted(folders)


def git_ignored(root: str, folders: list[str]) -> set[str]:
    """The untracked files under these folders that the project's ``.gitignore`` files
    exclude (only those: ``.git/info/exclude`` and a personal excludes file are nobody's
    review). Empty
    when git cannot tell. Git runs with nothing from the caller's environment, from outside
    the project, and without fsmonitor (a configured one would run a command)."""
    top = repository.top(root)
    git = None if top is None else repository.git_outside(top)
    if not folders or top is None or git is None:
        return set()
    command = [
        git, f"--git-dir={os.path.join(top, '.git')}", f"--work-tree={top}",
        "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
        "ls-files", "-z", "--others", "--ignored", "--exclude-per-directory=.gitignore",
        "--", *(os.path.join(root, folder) for folder in folders),
    ]  # fmt: skip
    env = {"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    env.update({key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ})
    try:
        result = subprocess.run(
            command, cwd=top, env=env, capture_output=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if result.returncode != 0:
        return set()
    return {
        os.path.relpath(os.path.join(top, os.fsdecode(path)), root).replace(os.sep, "/")
        for path in result.stdout.split(b"\0")
        if path
    }
