"""Which files a command names: the paths it gives (a directory a runner is pointed at: its
test files), the package.json/Makefile scripts it runs, the runner's default tests."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .commands import runner_of, scripts_run, shell_words
from .files import test_files

_DEFAULT_TESTS = ("pytest", "go", "npm", "js")


def named_files(
    root: str, commands: Iterable[str]
) -> tuple[set[str], dict[str, list[str]], list[str]]:
    """(relative paths, script names per package.json/Makefile, problems) for the files the
    commands name."""
    files: set[str] = set()
    scripts: dict[str, set[str]] = {}
    for command in commands:
        words = shell_words(command)
        runner = runner_of(words)
        named_any = False  # a path, even one outside the root, replaces the runner's default
        for word in words:
            found = paths_of(root, word, runner)
            if found is not None:
                files.update(found)
                named_any = True
        for relative, name in scripts_run(root, words, runner):
            files.add(relative)
            scripts.setdefault(relative, set()).add(name)
        if runner == "js" and os.path.isfile(os.path.join(root, "package.json")):
            files.add("package.json")  # its "jest"/"mocha" settings
        if not named_any and runner in _DEFAULT_TESTS:
            files.update(test_files(root, "", runner, recursive=runner != "go"))
        if runner == "pytest":
            files.update(_conftests_above(root, files))
    return files, {path: sorted(names) for path, names in scripts.items()}, []


def _conftests_above(root: str, files: Iterable[str]) -> set[str]:
    """The conftest.py files pytest loads for these files: in each directory up to the root."""
    found = set()
    directories = {os.path.dirname(relative) for relative in files}
    for directory in directories:
        while True:
            candidate = os.path.join(directory, "conftest.py")
            if os.path.isfile(os.path.join(root, candidate)):
                found.add(candidate.replace(os.sep, "/"))
            if not directory:
                break
            directory = os.path.dirname(directory)
    return found


def paths_of(root: str, word: str, runner: str | None) -> list[str] | None:
    """The pinned files a word names; None when the word names no existing path at all."""
    if not word or "\0" in word or word.startswith("-") or "=" in word.split("/")[0]:
        return None  # options, assignments, and what no file system path can hold
    word = word.split("::", 1)[0]  # a pytest node id names its file
    recursive = True
    if word.endswith("/...") or word == "...":  # go test ./pkg/...
        word = word[:-3] or "."
    elif runner == "go":
        recursive = False  # go test ./pkg: that package only
    path = os.path.realpath(os.path.join(root, word))
    if (word in (".", "./") and runner != "go") or not os.path.exists(path):
        return None  # "cd ." names no checks
    relative = os.path.relpath(path, root)
    if relative.startswith(os.pardir) or os.path.isabs(relative):
        return []  # outside the project: not the project's checks
    if os.path.isfile(path):
        return [relative.replace(os.sep, "/")]
    if os.path.isdir(path) and runner:  # a directory a test runner is pointed at
        return sorted(
            test_files(root, "" if relative == os.curdir else relative, runner, recursive)
        )
    return None
