"""Reading the project's files safely (never a FIFO or device) and naming them: paths inside
the root, conventionally named test files, scripts, the files a Python module name loads."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator

from pytest_acceptance.tree import folders
from pytest_acceptance.tree.hostile import NotRegularFile, open_regular

from . import limits

# What never holds the tests' own files (version control, run output, environments, tool
# caches: tree/folders.py), where a runner's test files are looked for and inside a watched
# folder alike. A vendored folder is searched: pytest collects from it.
NOT_THE_TESTS = folders.NOT_THE_TESTS
PYTHON_TEST = re.compile(r"^(test_.*|.*_test)\.py$|^conftest\.py$")
JS_TEST = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$")
JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")
GO_TEST = re.compile(r"_test\.go$")
TEST_FOLDER = re.compile(r"^(?:tests?|testing|__tests__)$|^tests?_|_tests?$")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".pl", ".rb", ".php")


def enclosing_test_folder(directory: str) -> str | None:
    """The outermost test folder (``tests/``, ``testing/``) holding ``directory``, itself
    included."""
    parts = directory.split("/") if directory else []
    for depth, part in enumerate(parts):
        if TEST_FOLDER.match(part):
            return "/".join(parts[: depth + 1])
    return None


def read_file(path: str) -> bytes | str | None:
    """The content of a regular file (following links), None when absent, else what it is
    now (a FIFO or device is never opened: reading one could block or do anything)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:  # a loop of links, a file where a directory was
        return f"an unreadable path ({error.strerror})"
    if stat.S_ISDIR(info.st_mode):
        return "a directory"
    if not stat.S_ISREG(info.st_mode):
        return "a special file"
    try:
        handle = open_regular(path)
    except NotRegularFile:
        return "a special file"
    except OSError as error:
        return f"an unreadable file ({error.strerror})"
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(handle, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if sum(map(len, chunks)) > 4 * limits.MAX_FILE_BYTES:  # enough to hash-compare
                return b"".join(chunks) + b"\0truncated"
    finally:
        os.close(handle)


def inside(root: str, cwd: str, word: str, directory: bool = False) -> str | None:
    """``word`` as a path relative to the root, when it is an existing file (or directory)
    inside the project."""
    if not word or "\0" in word:
        return None
    path = os.path.realpath(os.path.join(root, cwd, word))
    relative = os.path.relpath(path, root)
    if relative.startswith(os.pardir) or os.path.isabs(relative):
        return None
    exists = os.path.isdir(path) if directory else os.path.isfile(path)
    return (relative if relative != os.curdir else "").replace(os.sep, "/") if exists else None


def up_to_root(directory: str) -> Iterator[str]:
    while directory:
        yield directory
        directory = os.path.dirname(directory)
    yield ""


def is_script(path: str) -> bool:
    """A script (not a built binary, which is the implementation's output)."""
    if path.endswith(_SCRIPT_SUFFIXES):
        return True
    content = read_file(path)
    return isinstance(content, bytes) and content.startswith(b"#!")


def module_files(root: str, module: str, near: str) -> Iterator[str]:
    """The files in the project that ``import module`` could load (from the root, ``src/``
    or the importing file's folder)."""
    if not re.match(r"^[A-Za-z_][\w.]*$", module):
        return
    base = module.replace(".", "/")
    for folder in {"", "src", near}:
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            relative = os.path.normpath(os.path.join(folder, candidate)).replace(os.sep, "/")
            if os.path.isfile(os.path.join(root, relative)):
                yield relative


def test_files(root: str, relative: str, runner: str | None, recursive: bool) -> Iterator[str]:
    """Conventionally named test files under a directory (for the runner, or for all)."""
    start = os.path.join(root, relative)
    for directory, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d not in NOT_THE_TESTS and d[:1] != ".")
        if not recursive:
            dirnames[:] = []
        in_tests_dir = "__tests__" in directory.split(os.sep)
        for name in sorted(filenames):
            if is_test_file(name, runner, in_tests_dir):
                path = os.path.relpath(os.path.join(directory, name), root)
                yield path.replace(os.sep, "/")


def is_test_file(name: str, runner: str | None, in_tests_dir: bool) -> bool:
    python = bool(PYTHON_TEST.match(name))
    go = bool(GO_TEST.search(name))
    js = bool(JS_TEST.search(name)) or (in_tests_dir and bool(JS_SOURCE.search(name)))
    return {"pytest": python, "go": go, "npm": js, "js": js}.get(runner or "", python or go or js)
