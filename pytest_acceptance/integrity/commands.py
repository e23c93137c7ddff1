"""Shell commands as a criterion writes them, followed: the scripts, npm scripts, make
recipes and shell strings they run, and the files they run or a pytest they start reads.
Reading a command (its words, wrappers, what runs, which test runner) is tree/shell.py's."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Iterator

from pytest_acceptance.tree import shell

from . import limits
from .files import inside, is_script, module_files, read_file
from .findings import PYTEST_LOADS, PYTEST_READS, RUNS
from .inventory import inventory_of, kind_of
from .make import DEFAULT_GOAL, makefiles, target_name

_MAKE_ASSIGNMENT = re.compile(r"^[A-Za-z_][\w.-]*=")
_MAKE_OPTIONS_WITH_VALUE = frozenset({"-C", "-f", "-I", "-o", "-W", "--file", "--makefile"})
_INTERPRETERS = re.compile(
    r"^(?:ba|da|k|z)?sh$|^source$|^\.$|^python[\d.]*$|^node$|^perl$|^ruby$|^php$|^bun$|^tsx$"
)
# The kind of test files each runner of tree/shell.py runs: "pytest" for Python's, "go",
# "npm" for a package.json script, "js" for a JavaScript runner; the first kind found, in
# this order, decides for a command that starts several.
_KINDS = {
    "pytest": "pytest",
    "unittest": "pytest",
    "tox": "pytest",
    "nox": "pytest",
    "go": "go",
    "npm": "npm",
    "bun": "js",
    "jest": "js",
    "vitest": "js",
    "mocha": "js",
}
_KIND_ORDER = ("pytest", "go", "npm", "js")


def shell_words(command: str) -> list[str]:
    """The words of a command (tree/shell.py), whitespace-split when quotes do not balance:
    the words are still worth looking at."""
    return shell.loose_words(command)


def simple_commands(words: list[str]) -> Iterator[list[str]]:
    """What each simple command of a command line runs: assignments, wrappers and
    redirections taken off (tree/shell.py)."""
    for simple in shell.simple_commands(words):
        argv = list(shell.unwrap(simple).argv)
        if argv:
            yield argv


def in_directories(root: str, words: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(directory it runs in, simple command) for each simple command but ``cd``."""
    cwd = ""
    for simple in simple_commands(words):
        if simple[:1] == ["cd"] and len(simple) > 1:
            cwd = inside(root, cwd, simple[1], directory=True) or cwd
        else:
            yield cwd, simple


def runner_of(words: list[str]) -> str | None:
    """The kind of test files a command's runner runs (``_KINDS``), if it is one this
    module knows how to follow. Besides what tree/shell.py reads, a runner named anywhere
    among the words counts (``coverage run -m pytest``, a launcher it does not know): the
    fallback pins more, never less."""
    found = {
        _KINDS.get(shell.runner(shell.unwrap(simple)) or "")
        for simple in shell.simple_commands(words)
    }
    names = [os.path.basename(word) for word in words]
    if "pytest" in names or "py.test" in names:
        found.add("pytest")
    if any(names[i : i + 2] == ["go", "test"] for i in range(len(names) - 1)):
        found.add("go")
    if any(n in ("npm", "yarn", "pnpm") for n in names):
        found.add("npm")
    if any(n in ("jest", "vitest", "mocha") for n in names):
        found.add("js")
    return next((kind for kind in _KIND_ORDER if kind in found), None)


def scripts_run(root: str, words: list[str], runner: str | None) -> Iterator[tuple[str, str]]:
    """(file, name) of the package.json scripts and Makefile targets a command runs."""
    for simple in shell.simple_commands(words):
        command = shell.unwrap(simple)
        if shell.runner(command) == "npm":
            script = shell.npm_script(command.argv)
            if script and os.path.isfile(os.path.join(root, "package.json")):
                yield "package.json", script
        elif command.program in ("make", "gmake"):
            yield from _make_targets(root, list(command.argv[1:]))


def _make_targets(root: str, arguments: list[str]) -> Iterator[tuple[str, str]]:
    makefile = next(
        (n for n in shell.MAKEFILE_NAMES if os.path.isfile(os.path.join(root, n))), None
    )
    if makefile is None:
        return
    targets, assignments = [], []
    skip = False
    for target in arguments:
        if skip:
            skip = False
        elif target in _MAKE_OPTIONS_WITH_VALUE:
            skip = True
        elif _MAKE_ASSIGNMENT.match(target):
            assignments.append(target)
        elif not target.startswith("-") and "=" not in target:
            targets.append(target)
    for target in targets or [DEFAULT_GOAL]:
        yield makefile, target_name(target, assignments)


def with_what_they_run(root: str, commands: Iterable[str]) -> list[str]:
    """The commands, and the npm scripts, make recipes, shell strings and heredocs to a
    shell they run (three levels deep): a ``make test`` whose recipe is ``pytest tests/``,
    or a ``bash -c 'pytest tests/'``, pins what ``pytest tests/`` pins."""
    found = list(dict.fromkeys(command for command in commands if isinstance(command, str)))
    level = found
    for _ in range(3):
        following: list[str] = []
        for command in level:
            words = shell_words(command)
            following.extend(shell_strings(root, words))
            following.extend(
                body for opener, body in shell.split_heredocs(command)[1] if opener in shell.SHELLS
            )
            for relative, name in scripts_run(root, words, runner_of(words)):
                following.extend(_script_lines(root, relative, name))
        level = [command for command in dict.fromkeys(following) if command not in found]
        found.extend(level)
    return found


def _script_lines(root: str, relative: str, name: str) -> list[str]:
    """The command lines of a package.json script or make recipe (continued lines joined)."""
    content = read_file(os.path.join(root, relative))
    if not isinstance(content, bytes) or len(content) > limits.MAX_FILE_BYTES:
        return []
    inventory, _ = inventory_of(kind_of(relative), content, [name])
    script = next(iter(inventory.values()), {}).get("script")  # type: ignore[call-overload]
    if not isinstance(script, str):
        return []
    lines = (line.strip().lstrip("@-+") for line in script.replace("\\\n", " ").split("\n"))
    return [line for line in lines if line]  # @/-/+: make's recipe prefixes


def shell_strings(root: str, words: list[str]) -> Iterator[str]:
    """The command lines a command hands to a shell as one string: ``bash -c '...'``,
    ``sh -ec "..."``, ``flock f -c ...`` and ``eval ...`` (tree/shell.py's
    ``nested_command``: a literal eval runs what ``bash -c`` would; one of a variable names
    nothing and stays unread). A ``cd`` before it carries over."""
    for cwd, simple in in_directories(root, words):
        inner = shell.nested_command(tuple(simple))
        if inner and inner.strip():
            yield f"cd {shlex.quote(cwd)} && {inner}" if cwd else inner


def run_files(root: str, words: list[str]) -> Iterator[tuple[str, str]]:
    """(file, why) for the scripts, tools, Makefiles and configuration files a command runs
    or reads: a script named by an interpreter or run by its path, ``python -m module``,
    ``make`` (``-f``/``-C``), ``pytest -c``/``-p``."""
    for cwd, simple in in_directories(root, words):
        yield from _runs(root, cwd, simple)


def _runs(root: str, cwd: str, simple: list[str]) -> Iterator[tuple[str, str]]:
    name = os.path.basename(simple[0])
    rest = simple[1:]
    names = [os.path.basename(word) for word in simple]
    for runner in ("pytest", "py.test"):
        if runner in names:  # pytest, python -m pytest, uv run pytest
            yield from _pytest_options(root, cwd, simple[names.index(runner) + 1 :])
    if _INTERPRETERS.match(name):
        options = [word for word in rest if word.startswith("-")]
        if name.startswith("python") and "-m" in rest:
            module = rest[rest.index("-m") + 1 : rest.index("-m") + 2]
            for found in module_files(root, module[0], cwd) if module else ():
                yield found, RUNS
            return
        script = next((w for w in rest if not w.startswith("-")), None)
        if script and "-c" not in options:
            path = inside(root, cwd, script)
            if path:
                yield path, RUNS
    elif name in ("make", "gmake"):
        yield from makefiles(root, cwd, rest)
    elif "/" in simple[0]:
        path = inside(root, cwd, simple[0])
        if path and is_script(os.path.join(root, path)):
            yield path, RUNS


def _pytest_options(root: str, cwd: str, rest: list[str]) -> Iterator[tuple[str, str]]:
    for index, word in enumerate(rest):
        option, _, value = word.partition("=")
        if option in ("-c", "--config-file", "-p") and not value:
            value = rest[index + 1] if index + 1 < len(rest) else ""
        elif word.startswith("-p") and word != "-p" and not word.startswith("--"):
            option, value = "-p", word[2:]
        if option in ("-c", "--config-file"):
            found = inside(root, cwd, value)
            if found:
                yield found, PYTEST_READS
        elif option == "-p":
            for found in module_files(root, value, cwd):
                yield found, PYTEST_LOADS


def pytest_targets(root: str, words: list[str]) -> Iterator[list[str]]:
    """For each pytest a command starts, what it starts from: the existing paths it names
    (made relative to the root), else the directory it runs in; nothing when it names only
    paths outside the project (not the project's checks)."""
    for cwd, simple in in_directories(root, words):
        if not {"pytest", "py.test"} & {os.path.basename(word) for word in simple}:
            continue
        targets: list[str] = []
        outside = False
        for word in simple[1:]:
            if word.startswith("-") or "=" in word.split("/")[0]:
                continue
            word = word.split("::", 1)[0]
            found = inside(root, cwd, word) or inside(root, cwd, word, directory=True)
            if found is not None:
                targets.append(found)
            elif "\0" not in word and os.path.exists(os.path.join(root, cwd, word)):
                outside = True
        if targets or not outside:
            yield targets or [cwd]
