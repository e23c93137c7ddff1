"""Files pinned by content hash: what a runner loads besides the tests (configuration,
conftest.py, helpers, plugins) and the scripts a command runs have no notion of "adding a
test": any change, a deletion, and a new file where the runner would read one, reports."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import limits
from .commands import in_directories, pytest_targets, run_files, runner_of, shell_words
from .config import (
    JS_CONFIG,
    PLUGIN_OPTION,
    PYTEST_CONFIGS,
    SHARED_CONFIGS,
    pytest_part,
    pytest_plugins_of,
)
from .data import data_folders, git_ignored, is_data
from .files import (
    NOT_THE_TESTS,
    PYTHON_TEST,
    TEST_FOLDER,
    enclosing_test_folder,
    module_files,
    read_file,
    up_to_root,
)
from .findings import (
    HASHED,
    IMPORTED_WITH,
    PYTEST_LOADS,
    PYTEST_READS,
    RUNNER_READS,
    RUNS,
    TESTS_IMPORT,
    TESTS_READ,
    Finding,
)
from .import_time import module_changes


def watches_of(root: str, commands: Iterable[str]) -> list[dict[str, Any]]:
    """The places a runner looks for configuration or conftest.py files: what is there when
    the flow starts is pinned, and what appears there later is reported."""
    watches: dict[tuple[str, str, bool], dict[str, Any]] = {}

    def watch(directory: str, pattern: str, recursive: bool, new: bool, why: str) -> None:
        key = (directory, pattern, recursive)
        watches.setdefault(
            key,
            {"dir": directory, "pattern": pattern, "recursive": recursive, "new": new, "why": why},
        )

    for words in map(shell_words, commands):
        for targets in pytest_targets(root, words):
            for target in targets:
                is_dir = os.path.isdir(os.path.join(root, target))
                for directory in up_to_root(target if is_dir else os.path.dirname(target)):
                    watch(directory, "pytest-config", False, True, PYTEST_READS)
                    watch(directory, "conftest", False, True, PYTEST_LOADS)
                if is_dir:
                    watch(target, "conftest", True, True, PYTEST_LOADS)
                for folder in _test_folders(root, target if is_dir else os.path.dirname(target)):
                    watch(folder, "helper", True, False, TESTS_IMPORT)
        if runner_of(words) in ("npm", "js"):
            for cwd, _ in in_directories(root, words):
                watch(cwd, "js-config", False, True, RUNNER_READS)
            watch("", "js-config", False, True, RUNNER_READS)
    return [watches[key] for key in sorted(watches)]


def _test_folders(root: str, directory: str) -> list[str]:
    """The outermost test folders (``tests/``, ``testing/``) holding ``directory``, or under
    it: their non-test modules are the tests' helpers (never the project's own code)."""
    enclosing = enclosing_test_folder(directory)
    if enclosing is not None:
        return [enclosing]
    found = []
    for current, dirnames, _ in os.walk(os.path.join(root, directory)):
        kept = []
        for name in sorted(dirnames):
            if name in NOT_THE_TESTS or name.startswith("."):
                continue
            if TEST_FOLDER.match(name):
                found.append(os.path.relpath(os.path.join(current, name), root))
            else:
                kept.append(name)
        dirnames[:] = kept
    return [folder.replace(os.sep, "/") for folder in found]


def _watched_files(root: str, watch: dict[str, Any]) -> Iterator[str]:
    """The files matching a watch's pattern in its directory (and below, when recursive)."""
    matches = _WATCH_PATTERNS.get(watch.get("pattern"))  # type: ignore[arg-type]
    directory = watch.get("dir")
    if matches is None or not isinstance(directory, str):
        return
    start = os.path.realpath(os.path.join(root, directory))
    if os.path.relpath(start, root).startswith(os.pardir) or not os.path.isdir(start):
        return
    for current, filenames in _walk_as_read(start, bool(watch.get("recursive"))):
        for name in sorted(filenames):
            relative = os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/")
            if matches(relative.rsplit("/", 1)[-1], relative):
                yield relative


def _walk_as_read(start: str, recursive: bool) -> Iterator[tuple[str, list[str]]]:
    """(folder, file names) under `start` as pytest and the tests reach them: into every
    folder, a hidden one or a ``vendor/`` included (a conftest there is loaded, a file
    there is read), and through links to folders, each real folder once. Only what holds
    none of the tests' own files is passed over (NOT_THE_TESTS)."""
    seen: set[str] = set()
    for current, dirnames, filenames in os.walk(start, followlinks=True):
        real = os.path.realpath(current)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if d not in NOT_THE_TESTS) if recursive else []
        yield current, filenames


_WATCH_PATTERNS: dict[str, Callable[[str, str], bool]] = {  # (name, relative path)
    "init": lambda name, _: name == "__init__.py",
    "pytest-config": lambda name, _: name in PYTEST_CONFIGS,
    "conftest": lambda name, _: name == "conftest.py",
    "helper": lambda name, _: name.endswith(".py") and not PYTHON_TEST.match(name),
    "js-config": lambda name, _: bool(JS_CONFIG.match(name)),
    "data": lambda _, relative: is_data(relative),
    # conftest.py and __init__.py have watches of their own
    "python-module": lambda name, _: (
        name.endswith(".py") and name not in ("conftest.py", "__init__.py")
    ),
    "python-test": lambda name, _: bool(PYTHON_TEST.match(name)) and name != "conftest.py",
}


def package_watches(root: str, named: Iterable[str]) -> list[dict[str, Any]]:
    """A new ``__init__.py`` beside a pinned Python test, or above it, runs when pytest
    imports that test (existing ones outside the test folders are the project's code)."""
    directories = {
        directory
        for relative in named
        if PYTHON_TEST.match(relative.rsplit("/", 1)[-1]) and relative.endswith(".py")
        for directory in up_to_root(os.path.dirname(relative))
    }
    watches = []
    for directory in sorted(directories):
        watch = {"dir": directory, "pattern": "init", "recursive": False, "new": True,
                 "why": PYTEST_LOADS}  # fmt: skip
        watch["known"] = list(_watched_files(root, watch))
        watches.append(watch)
    return watches


def module_watches(root: str, named: Iterable[str]) -> list[dict[str, Any]]:
    """New Python modules in the test folder of a pinned Python test, and new test files
    beside one: pytest may import them with the pinned tests, so code they run on import is
    reported (see :mod:`.import_time`); new tests and helpers that only define things are
    not. (Beside a test outside a test folder only test files count: other new modules
    there are the project's code, the work itself.)"""
    places: dict[str, str] = {}  # directory -> pattern
    for relative in named:
        name = relative.rsplit("/", 1)[-1]
        if not (PYTHON_TEST.match(name) and name != "conftest.py"):
            continue
        directory = os.path.dirname(relative)
        enclosing = enclosing_test_folder(directory)
        if enclosing is not None:
            places[enclosing] = "python-module"
        else:
            places.setdefault(directory, "python-test")
    watches = []
    for directory, pattern in sorted(places.items()):
        watch = {"dir": directory, "pattern": pattern, "recursive": pattern == "python-module",
                 "new": True, "check": "import-time", "why": IMPORTED_WITH}  # fmt: skip
        watch["known"] = list(_watched_files(root, watch))
        watches.append(watch)
    return watches


def data_watches(root: str, named: Iterable[str]) -> list[dict[str, Any]]:
    """The data files beside the pinned tests (see :mod:`.data`): pinned, never new."""
    return [
        {"dir": folder, "pattern": "data", "recursive": True, "new": False, "why": TESTS_READ}
        for folder in data_folders(root, named)
    ]


def hashed_files(
    root: str, commands: Iterable[str], watches: list[dict[str, Any]]
) -> dict[str, str]:
    """Every file pinned by content hash, with how a criterion depends on it."""
    hashed: dict[str, str] = {}
    data: dict[str, str] = {}
    for watch in watches:
        if "known" in watch:  # watched for new files only
            continue
        kept = data if watch.get("pattern") == "data" else hashed
        for relative in _watched_files(root, watch):
            kept.setdefault(relative, watch["why"])
    if data:
        folders = [watch["dir"] for watch in watches if watch.get("pattern") == "data"]
        generated = git_ignored(root, folders)
        for relative, why in data.items():
            if relative not in generated:
                hashed.setdefault(relative, why)
    for words in map(shell_words, commands):
        for relative, why in run_files(root, words):
            hashed.setdefault(relative, why)
    for relative in _plugin_files(root, hashed):
        hashed.setdefault(relative, PYTEST_LOADS)
    return hashed


def _plugin_files(root: str, hashed: dict[str, str]) -> set[str]:
    """The modules that pinned conftest.py files (``pytest_plugins``) and configuration
    (``-p`` in ``addopts``) load as plugins, when they are in the project."""
    found: set[str] = set()
    for relative, why in sorted(hashed.items()):
        content = read_file(os.path.join(root, relative))
        if not isinstance(content, bytes) or why not in (PYTEST_READS, PYTEST_LOADS):
            continue
        part = pytest_part(relative, content)
        names = PLUGIN_OPTION.findall(part.decode("utf-8", "replace")) if part else []
        if relative.endswith(".py"):
            names += pytest_plugins_of(content)
        for name in names:
            found.update(module_files(root, name, os.path.dirname(relative)))
    return found


def pin_hashed(root: str, relative: str, why: str) -> dict[str, Any]:
    return {"kind": HASHED, "sha256": _hashed_digest(root, relative, why), "why": why}


def _hashed_digest(root: str, relative: str, why: str = PYTEST_READS) -> str | None:
    """The sha256 of what the runner reads in a file (the pytest sections of a shared
    configuration file, else all of it: always all of a data file); None when absent or
    without such a section; a description when it is no regular file."""
    content = read_file(os.path.join(root, relative))
    if not isinstance(content, bytes):
        return content
    part = content if why == TESTS_READ else pytest_part(relative, content)  # data: all of it
    return None if part is None else hashlib.sha256(part).hexdigest()


def hashed_findings(root: str, relative: str, entry: dict[str, Any]) -> list[Finding]:
    why = str(entry["why"]) if isinstance(entry.get("why"), str) else RUNS
    before, now = entry.get("sha256"), _hashed_digest(root, relative, why)
    if now == before:
        return []
    shared = relative.rsplit("/", 1)[-1] in SHARED_CONFIGS and why != TESTS_READ
    if now is None:
        how = "its pytest section removed" if shared else "deleted"
    elif " " in now:  # a description: "a directory", "a special file", ...
        how = f"replaced by {now}"
    elif before is None:
        how = "a pytest section added"
    else:
        how = "changed"
    return [Finding(relative, None, how, why)]


def new_files(root: str, watches: Any, files: dict[str, Any]) -> list[Finding]:
    """Configuration and conftest.py files that appeared where a runner reads them, and new
    modules beside the tests that run code when imported."""
    findings = []
    seen = set(files)
    for watch in watches if isinstance(watches, list) else []:
        if not isinstance(watch, dict) or not watch.get("new"):
            continue
        known = watch.get("known")
        for relative in _watched_files(root, watch):
            if isinstance(known, list) and relative in known:
                continue
            if relative in seen or _hashed_digest(root, relative) is None:
                continue
            how = "added"
            if watch.get("check") == "import-time":
                runs = _runs_at_import(root, relative)
                if runs is None:
                    continue  # a new test or helper that only defines things
                how = runs
            seen.add(relative)  # one finding per file, whichever watch saw it
            findings.append(Finding(relative, None, how, str(watch.get("why"))))
    return findings


def _runs_at_import(root: str, relative: str) -> str | None:
    content = read_file(os.path.join(root, relative))
    if not isinstance(content, bytes):
        return f"added as {content}"
    if len(content) > limits.MAX_FILE_BYTES:
        return f"added, and it is too large to check (over {limits.MAX_FILE_BYTES:,} bytes)"
    changes = module_changes(content)
    return None if changes is None else f"added with {changes}"
