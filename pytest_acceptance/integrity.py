"""Criterion integrity: the checks a bash criterion runs are part of the criterion.

Standard library only and Python 3.8 compatible (the hooks import it under ``python3 -S``).

:func:`snapshot` is taken when a flow starts: for every file a criterion's command names —
directly (``pytest tests/test_x.py::test_a``, ``bash scripts/check.sh``, ``go test ./pkg/...``)
or through a named directory (``pytest tests/`` pins every test file under it) — it records
the sha256 and an inventory per test: the number of assertions, how many of them are
constants (``assert True``, ``expect(true).toBe(true)``), and the skip/xfail markers.
:func:`weakened` compares the tree at /done with that pin and returns one :class:`Finding`
per weakening: a pinned file or test deleted, fewer real assertions, an assertion replaced by
a constant, a new skip/xfail/only marker, fewer parametrized cases, a test script changed, a
file that no longer parses. Adding tests or assertions never reports. A file whose hash is
unchanged is not parsed again.

What it can read, and how:

- Python (``ast``): ``test*`` functions and methods of ``Test*`` classes (and of unittest
  ``TestCase`` subclasses); ``assert`` statements, ``assert*``/``fail``/``raises``/``warns``
  calls, and calls to the module's own helpers that assert; ``pytest.mark.skip``/``skipif``/
  ``xfail`` (on the function, its class or ``pytestmark``), ``unittest.skip*``,
  ``expectedFailure``, ``pytest.skip()``/``xfail()``/``importorskip()``, ``self.skipTest()``,
  ``raise SkipTest``, ``__test__ = False``; literal ``parametrize`` case lists; skips in
  fixtures and helpers, and hooks that can skip, deselect or rewrite results
  (``pytest_collection_modifyitems``, ``pytest_runtest_makereport``, ...). A pytest command
  also pins the ``conftest.py`` files above the files it names.
- JavaScript/TypeScript (patterns, comments stripped): ``it``/``test`` calls and their
  ``.skip``/``.todo``/``.only``/``.failing`` forms, ``xit``/``xtest``, ``describe.skip``/
  ``xdescribe``/``describe.only``/``fit``; ``expect(`` and ``assert(`` calls between one test and
  the next, constant when their argument is a literal.
- Go (patterns): ``func TestX(t *testing.T)``; ``t.Error*``/``t.Fatal*``/``t.Fail*``,
  ``assert.``/``require.`` calls; ``t.Skip*``.
- ``package.json`` and ``Makefile``: the scripts an ``npm``/``yarn``/``pnpm`` command runs and
  the recipes of the targets a ``make`` command builds (a change reports; what those scripts
  run in turn is followed only when the command names it).
- Shell scripts named by a command: the number of command lines, and an unconditional
  ``exit 0``/``true`` before the first of them.

What it cannot see: semantics (an assertion rewritten to compare the wrong thing, a fixture
that makes a test trivial without skipping it, a changed pytest configuration such as
``addopts = --deselect ...``), tests that a runner discovers through its configuration alone (pytest
``testpaths``, jest ``testMatch``: commands that name no path pin every conventionally named
test file under the root instead), languages other than these, and JavaScript or Go that does
not parse (they are read by patterns; Python that does not parse is reported).

Bounded: at most ``MAX_FILES`` files and ``MAX_FILE_BYTES`` per file are inventoried. Past
the file cap the snapshot records the problem and :func:`weakened` reports it (a human
decides); a file over the byte cap is pinned by hash alone and any change to it reports.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

SCHEMA = "pytest-acceptance/integrity"
VERSION = 1
MAX_FILES = 5000
MAX_FILE_BYTES = 2 * 1024 * 1024
FILE_LEVEL = ""  # inventory key for what applies to a whole file (module pytestmark, .only)
WAY_OUT = "restore it, or /pytest-acceptance:escalate for a human decision"
_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".pytest_cache",
     ".acceptance", ".tox", ".nox", ".mypy_cache", ".ruff_cache", "vendor"}
)  # fmt: skip
_PYTHON_TEST = re.compile(r"^(test_.*|.*_test)\.py$|^conftest\.py$")
_JS_TEST = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$")
_JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")
_GO_TEST = re.compile(r"_test\.go$")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


@dataclass(frozen=True)
class Finding:
    """One weakening of a pinned check."""

    file: str  # relative to the root, with forward slashes
    test: str | None  # the test (``Class::method`` for methods), None for the whole file
    how: str  # "deleted", "assertions removed (3 -> 1)", "skip marker added", ...

    def message(self) -> str:
        where = f"{self.file}::{self.test}" if self.test else self.file
        return (
            f"{where}: {self.how} since /pytest-acceptance:implement started; a criterion runs "
            f"it, so this weakens the criterion: {WAY_OUT}."
        )


# -- snapshot ---------------------------------------------------------------------------


def snapshot(root: str, commands: list[str]) -> dict[str, Any]:
    """The pin: every file the commands name, with its hash and inventory (JSON-serialisable)."""
    real_root = os.path.realpath(root)
    named, scripts, problems = _named_files(real_root, commands)
    selections = _node_id_selections(real_root, commands)
    files: dict[str, Any] = {}
    for relative in sorted(named)[:MAX_FILES]:
        entry = _pin_file(real_root, relative, scripts.get(relative, []))
        if entry is not None:
            if selections.get(relative):
                entry["selected"] = sorted(selections[relative])
            files[relative] = entry
    if len(named) > MAX_FILES:
        problems.append(
            f"the commands name {len(named):,} files; only the first {MAX_FILES:,} (in path "
            "order) are checked"
        )
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "files": files,
        "scripts": scripts,
        "problems": problems,
    }


def _pin_file(root: str, relative: str, scripts: list[str]) -> dict[str, Any] | None:
    content = _read(os.path.join(root, relative))
    if not isinstance(content, bytes):
        return None  # not a regular file at pin time: nothing to weaken
    kind = _kind(relative)
    entry: dict[str, Any] = {"sha256": hashlib.sha256(content).hexdigest(), "kind": kind}
    if len(content) > MAX_FILE_BYTES:
        entry["error"] = f"over {MAX_FILE_BYTES:,} bytes"
        return entry
    inventory, error = inventory_of(kind, content, scripts)
    entry["tests"] = inventory
    if error:
        entry["error"] = error
    return entry


# -- weakened ---------------------------------------------------------------------------


def weakened(root: str, pinned: dict[str, Any]) -> list[Finding]:
    """Every weakening of the pinned files in the tree under ``root`` now."""
    if not isinstance(pinned, dict) or pinned.get("schema") != SCHEMA:
        return [Finding("", None, "the integrity pin is unreadable (not a snapshot)")]
    findings = [Finding("", None, f"not checked: {p}") for p in pinned.get("problems", [])]
    real_root = os.path.realpath(root)
    scripts = pinned.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    for relative, entry in sorted(pinned.get("files", {}).items()):
        findings.extend(_file_findings(real_root, relative, entry, scripts.get(relative, [])))
    return findings


def _file_findings(root: str, relative: str, entry: Any, scripts: list[str]) -> list[Finding]:
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
        return [Finding(relative, None, "its pin is unreadable")]
    content = _read(os.path.join(root, relative))
    if content is None:
        return [Finding(relative, None, "deleted")]
    if isinstance(content, str):
        return [Finding(relative, None, f"replaced by {content}")]
    if hashlib.sha256(content).hexdigest() == entry["sha256"]:
        return []  # unchanged: the fast path
    if "tests" not in entry:  # pinned by hash alone (over the size cap)
        return [
            Finding(relative, None, f"changed, and it is too large to check ({entry['error']})")
        ]
    if len(content) > MAX_FILE_BYTES:
        return [
            Finding(
                relative,
                None,
                f"changed, and it is now too large to check (over {MAX_FILE_BYTES:,} bytes)",
            )
        ]
    inventory, error = inventory_of(entry.get("kind", "other"), content, scripts)
    if error and not entry.get("error"):
        return [Finding(relative, None, f"no longer parses ({error})")]
    selected = entry.get("selected")
    return [
        Finding(relative, test or None, how)
        for test, how in compare_inventories(entry.get("tests", {}), inventory)
        if not selected or not test or any(_selects(node, test) for node in selected)
    ]


def _selects(node: str, test: str) -> bool:
    """Whether a pytest node id suffix (``TestX``, ``TestX::test_m``, ``test_a[1]``) runs
    ``test``."""
    node = node.split("[", 1)[0]
    return test == node or test.startswith(node + "::")


def _node_id_selections(root: str, commands: Iterable[str]) -> dict[str, set[str] | None]:
    """Per file, the tests that node ids select; None for a file some command names whole."""
    selections: dict[str, set[str] | None] = {}
    for command in commands:
        for word in _words(command):
            file_part, _, node = word.partition("::")
            found = _paths_of(root, file_part, None) if file_part else None
            for relative in found or []:
                if not node:
                    selections[relative] = None
                elif relative not in selections or selections[relative] is not None:
                    selections.setdefault(relative, set()).add(node)  # type: ignore[union-attr]
    return selections


def compare_inventories(before: dict[str, Any], after: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(test, how) for every weakening from ``before`` to ``after``; additions never report."""
    for name, old in sorted(before.items()):
        new = after.get(name)
        if new is None:
            if name != FILE_LEVEL:
                yield name, "deleted"
            continue
        yield from ((name, how) for how in _test_weakenings(old, new))


def _test_weakenings(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    if "script" in old and old["script"] != new.get("script"):
        yield f"the script it runs changed ({old['script']!r} -> {new.get('script')!r})"
    lost = old.get("assertions", 0) - new.get("assertions", 0)
    gained_constants = new.get("constants", 0) - old.get("constants", 0)
    counted = "command lines" if "early_exit" in old else "assertions"
    if lost > 0 and gained_constants > 0:
        yield "assertion replaced by a constant"
    elif lost > 0:
        yield f"{counted} removed ({old.get('assertions', 0)} -> {new.get('assertions', 0)})"
    old_markers, new_markers = old.get("markers", {}), new.get("markers", {})
    for marker in sorted(new_markers):
        if new_markers[marker] > old_markers.get(marker, 0):
            yield _MARKER_TEXT.get(marker, f"{marker} marker added")
    old_cases, new_cases = old.get("cases"), new.get("cases")
    if isinstance(old_cases, int) and isinstance(new_cases, int) and new_cases < old_cases:
        yield f"parametrized cases removed ({old_cases} -> {new_cases})"
    if new.get("early_exit") and not old.get("early_exit"):
        yield "it now exits before its checks"


_MARKER_TEXT = {
    "skip": "skip marker added",
    "xfail": "xfail marker added",
    "only": "an .only marker added (every other test in the file is skipped)",
    "not-collected": "collection disabled (__test__ = False)",
    "hook": "a pytest hook added that can skip, deselect or rewrite results",
}


# -- which files a command names -------------------------------------------------------


def _named_files(
    root: str, commands: Iterable[str]
) -> tuple[set[str], dict[str, list[str]], list[str]]:
    """(relative paths, script names per package.json/Makefile, problems) for the files the
    commands name."""
    files: set[str] = set()
    scripts: dict[str, set[str]] = {}
    for command in commands:
        words = _words(command)
        runner = _runner(words)
        named_any = False  # a path, even one outside the root, replaces the runner's default
        for word in words:
            found = _paths_of(root, word, runner)
            if found is not None:
                files.update(found)
                named_any = True
        for relative, name in _scripts_run(root, words, runner):
            files.add(relative)
            scripts.setdefault(relative, set()).add(name)
        if not named_any and runner in _DEFAULT_TESTS:
            files.update(_test_files(root, "", runner, recursive=runner != "go"))
        if runner == "pytest":
            files.update(_conftests_above(root, files))
    return files, {path: sorted(names) for path, names in scripts.items()}, []


def _scripts_run(root: str, words: list[str], runner: str | None) -> Iterator[tuple[str, str]]:
    """(file, name) of the package.json scripts and Makefile targets a command runs."""
    if runner == "npm":
        script = _npm_script(words)
        if script and os.path.isfile(os.path.join(root, "package.json")):
            yield "package.json", script
    for index, word in enumerate(words):
        if os.path.basename(word) not in ("make", "gmake"):
            continue
        makefile = next(
            (
                n
                for n in ("GNUmakefile", "makefile", "Makefile")
                if os.path.isfile(os.path.join(root, n))
            ),
            None,
        )
        if makefile is None:
            return
        targets = []
        for target in words[index + 1 :]:
            if target in _OPERATORS:
                break
            if not target.startswith("-") and "=" not in target:
                targets.append(target)
        for target in targets or [_DEFAULT_GOAL]:
            yield makefile, target


_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;"})
_DEFAULT_GOAL = "(default goal)"


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


_DEFAULT_TESTS = ("pytest", "go", "npm", "js")


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes: the words are still worth looking at
        return command.split()


def _runner(words: list[str]) -> str | None:
    """The test runner a command invokes, if it is one this module knows how to follow."""
    names = [os.path.basename(word) for word in words]
    if "pytest" in names or "py.test" in names:
        return "pytest"
    if any(names[i : i + 2] == ["go", "test"] for i in range(len(names) - 1)):
        return "go"
    if any(n in ("npm", "yarn", "pnpm") for n in names):
        return "npm"
    if any(n in ("jest", "vitest", "mocha") for n in names):
        return "js"
    return None


def _npm_script(words: list[str]) -> str | None:
    for index, word in enumerate(words):
        if os.path.basename(word) in ("npm", "yarn", "pnpm"):
            rest = [w for w in words[index + 1 :] if not w.startswith("-")]
            if not rest:
                return None
            if rest[0] in ("run", "run-script") and len(rest) > 1:
                return rest[1]
            return rest[0] if rest[0] in ("test", "t") else None
    return None


def _paths_of(root: str, word: str, runner: str | None) -> list[str] | None:
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
            _test_files(root, "" if relative == os.curdir else relative, runner, recursive)
        )
    return None


def _test_files(root: str, relative: str, runner: str | None, recursive: bool) -> Iterator[str]:
    """Conventionally named test files under a directory (for the runner, or for all)."""
    start = os.path.join(root, relative)
    for directory, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        if not recursive:
            dirnames[:] = []
        in_tests_dir = "__tests__" in directory.split(os.sep)
        for name in sorted(filenames):
            if _is_test_file(name, runner, in_tests_dir):
                path = os.path.relpath(os.path.join(directory, name), root)
                yield path.replace(os.sep, "/")


def _is_test_file(name: str, runner: str | None, in_tests_dir: bool) -> bool:
    python = bool(_PYTHON_TEST.match(name))
    go = bool(_GO_TEST.search(name))
    js = bool(_JS_TEST.search(name)) or (in_tests_dir and bool(_JS_SOURCE.search(name)))
    return {"pytest": python, "go": go, "npm": js, "js": js}.get(runner or "", python or go or js)


# -- reading ----------------------------------------------------------------------------


def _read(path: str) -> bytes | str | None:
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
        handle = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        return f"an unreadable file ({error.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return "a special file"
        chunks = []
        while True:
            chunk = os.read(handle, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if sum(map(len, chunks)) > 4 * MAX_FILE_BYTES:  # enough to hash-compare
                return b"".join(chunks) + b"\0truncated"
    finally:
        os.close(handle)


def _kind(relative: str) -> str:
    name = relative.rsplit("/", 1)[-1]
    if name == "package.json":
        return "npm"
    if name in ("GNUmakefile", "makefile", "Makefile"):
        return "make"
    if name.endswith(".py"):
        return "python"
    if _GO_TEST.search(name) or name.endswith(".go"):
        return "go"
    if _JS_SOURCE.search(name):
        return "javascript"
    if name.endswith((".sh", ".bash")) or "." not in name:
        return "shell"
    return "other"


def inventory_of(
    kind: str, content: bytes, scripts: Sequence[str] = ()
) -> tuple[dict[str, Any], str | None]:
    """(inventory, parse error or None) of one file's content."""
    text = content.decode("utf-8", errors="replace")
    if kind == "python":
        return _python_inventory(content)
    if kind == "javascript":
        return _js_inventory(text), None
    if kind == "go":
        return _go_inventory(text), None
    if kind == "npm":
        return _npm_inventory(text, scripts)
    if kind == "make":
        return _make_inventory(text, scripts), None
    if kind == "shell":
        return {FILE_LEVEL: _shell_inventory(text)}, None
    return {}, None


# -- Python -----------------------------------------------------------------------------

_SKIP_MARKS = {"skip": "skip", "skipif": "skip", "skipIf": "skip", "skipUnless": "skip",
               "xfail": "xfail", "expectedFailure": "xfail"}  # fmt: skip
_SKIP_CALLS = {"skip": "skip", "importorskip": "skip", "skipTest": "skip", "xfail": "xfail"}
_ASSERT_CALLS = frozenset({"fail", "raises", "warns", "deprecated_call", "assertRaises"})


def _python_inventory(content: bytes) -> tuple[dict[str, Any], str | None]:
    try:
        tree = ast.parse(content)
        return _python_tests(tree), None
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        return {}, f"{type(error).__name__}{f' at line {line}' if line else ''}"
    except (RecursionError, MemoryError):
        return {}, "nested too deeply to read"


def _python_tests(tree: ast.Module) -> dict[str, Any]:
    helpers = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not node.name.startswith("test")
        and _assertions(node, frozenset())[0]
    }
    inventory: dict[str, Any] = {FILE_LEVEL: {"markers": _module_markers(tree)}}
    _collect_tests(tree.body, "", {}, helpers, inventory)
    return inventory


# Hooks through which a conftest.py or test module can skip, deselect or rewrite results.
_RESULT_HOOKS = frozenset(
    {"pytest_collection_modifyitems", "pytest_ignore_collect", "pytest_collect_file",
     "pytest_pycollect_makeitem", "pytest_collection", "pytest_runtest_setup",
     "pytest_runtest_call", "pytest_runtest_protocol", "pytest_runtest_makereport",
     "pytest_pyfunc_call", "pytest_report_teststatus", "pytest_configure"}
)  # fmt: skip


def _collect_tests(
    body: list[ast.stmt],
    prefix: str,
    inherited: dict[str, int],
    helpers: set[str],
    inventory: dict[str, Any],
) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            markers = _add_counts(inherited, _decorator_markers(node))
            assertions, constants = _assertions(node, frozenset(helpers))
            for kind in _body_skips(node):
                markers[kind] = markers.get(kind, 0) + 1
            inventory[prefix + node.name] = {
                "assertions": assertions,
                "constants": constants,
                "markers": markers,
                "cases": _cases(node),
            }
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            markers = _add_counts(inherited, _decorator_markers(node))
            markers = _add_counts(markers, _class_markers(node))
            _collect_tests(node.body, f"{prefix}{node.name}::", markers, helpers, inventory)


def _is_test_class(node: ast.ClassDef) -> bool:
    return node.name.startswith("Test") or any(
        _name_of(base).endswith("TestCase") for base in node.bases
    )


def _add_counts(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    total = dict(first)
    for key, value in second.items():
        total[key] = total.get(key, 0) + value
    return total


def _name_of(node: ast.AST) -> str:
    """The last name of ``a.b.c`` or ``a.b.c(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _marks_in(node: ast.AST) -> dict[str, int]:
    """Skip/xfail marks anywhere in an expression (decorators, pytestmark, pytest.param)."""
    found: dict[str, int] = {}
    for inner in ast.walk(node):
        kind = None
        if isinstance(inner, ast.Attribute):
            kind = _SKIP_MARKS.get(inner.attr)
        elif isinstance(inner, ast.Name):
            kind = _SKIP_MARKS.get(inner.id)
        if kind:
            found[kind] = found.get(kind, 0) + 1
    return found


def _decorator_markers(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> dict[str, int]:
    total: dict[str, int] = {}
    for decorator in node.decorator_list:
        total = _add_counts(total, _marks_in(decorator))
    return total


def _class_markers(node: ast.ClassDef) -> dict[str, int]:
    return _statement_markers(node.body)


def _module_markers(tree: ast.Module) -> dict[str, int]:
    """Module-wide: ``pytestmark``, module-level ``pytest.skip()``, skips in fixtures and
    helpers (an autouse fixture that skips skips everything), and result-changing hooks."""
    markers = _statement_markers(tree.body)
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.name.startswith("test"):
                continue  # counted on the test itself
            if statement.name in _RESULT_HOOKS:
                markers["hook"] = markers.get("hook", 0) + 1
        for kind in _skip_calls(statement):
            markers[kind] = markers.get(kind, 0) + 1
    return markers


def _statement_markers(body: list[ast.stmt]) -> dict[str, int]:
    """``pytestmark = ...`` and ``__test__ = False`` among a module's or class's statements."""
    markers: dict[str, int] = {}
    for statement in body:
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = {_name_of(target) for target in targets}
        if "pytestmark" in names and statement.value is not None:
            markers = _add_counts(markers, _marks_in(statement.value))
        if "__test__" in names and _literal(statement.value) is False:
            markers["not-collected"] = markers.get("not-collected", 0) + 1
    return markers


def _skip_calls(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            kind = _SKIP_CALLS.get(_name_of(inner))
            if kind:
                yield kind
        elif isinstance(inner, ast.Raise) and inner.exc is not None:
            name = _name_of(inner.exc)  # raise unittest.SkipTest(...), pytest.skip.Exception
            if name == "SkipTest" or (name == "Exception" and "attr='skip'" in ast.dump(inner.exc)):
                yield "skip"


def _body_skips(node: ast.AST) -> list[str]:
    kinds = []
    for statement in getattr(node, "body", []):
        kinds.extend(_skip_calls(statement))
    return kinds


def _assertions(node: ast.AST, helpers: frozenset[str]) -> tuple[int, int]:
    """(real assertions, constant assertions) in a function, decorators excluded."""
    real = constant = 0
    for statement in getattr(node, "body", []):
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Assert):
                if _is_constant_test(inner.test):
                    constant += 1
                else:
                    real += 1
            elif isinstance(inner, ast.Call):
                name = _name_of(inner)
                if name.startswith("assert") or name in _ASSERT_CALLS:
                    args = [*inner.args, *(k.value for k in inner.keywords)]
                    if (
                        args
                        and all(_literal(a) is not _NOT_LITERAL for a in args)
                        and (name not in _ASSERT_CALLS)
                    ):
                        constant += 1
                    else:
                        real += 1
                elif isinstance(inner.func, ast.Name) and name in helpers:
                    real += 1
    return real, constant


_NOT_LITERAL = object()


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return _NOT_LITERAL
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _is_constant_test(test: ast.expr) -> bool:
    """``assert True``, ``assert 1``, ``assert (x, "message")`` (a tuple is always true),
    ``assert not False``, ``assert len([1]) == 1`` (nothing but literals and pure builtins),
    ``assert x == x``. ``assert False`` is no weakening: it always fails."""
    value = _literal(test)
    if value is not _NOT_LITERAL:
        return bool(value)
    if isinstance(test, ast.Tuple) and test.elts:
        return True
    if _stateless(test):
        return True
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        return isinstance(test.ops[0], (ast.Eq, ast.Is, ast.GtE, ast.LtE)) and (
            ast.dump(test.left) == ast.dump(test.comparators[0])
        )
    return False


_PURE_BUILTINS = frozenset(
    {"len", "bool", "int", "float", "str", "abs", "all", "any", "sum", "min", "max", "sorted",
     "list", "tuple", "set", "dict", "round", "repr", "True", "False", "None"}
)  # fmt: skip


_STATEFUL = (ast.Attribute, ast.Subscript, ast.Await, ast.Starred, ast.Lambda, ast.NamedExpr,
             ast.Yield, ast.YieldFrom, ast.comprehension)  # fmt: skip


def _stateless(node: ast.expr) -> bool:
    """An expression of literals, operators and pure builtins: the same value every run."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            if inner.id not in _PURE_BUILTINS:
                return False
        elif isinstance(inner, _STATEFUL):
            return False
    return True


def _cases(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The number of parametrized cases when every ``parametrize`` lists them literally."""
    total = 1
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and _name_of(decorator) == "parametrize"):
            continue
        values = decorator.args[1] if len(decorator.args) > 1 else None
        for keyword in decorator.keywords:
            if keyword.arg == "argvalues":
                values = keyword.value
        if not isinstance(values, (ast.List, ast.Tuple, ast.Set)):
            return None
        total *= len(values.elts)
    return total


# -- JavaScript / TypeScript ------------------------------------------------------------

_JS_COMMENT = re.compile(r"/\*.*?\*/|(?<![:\\\"'`])//[^\n]*", re.S)
_JS_TEST_CALL = re.compile(
    r"(?<![\w$.])(?P<call>x?it|x?test|fit|(?:it|test)\.(?:skip|only|todo|failing|concurrent))"
    # A bounded name on one line: an unterminated quote cannot make the scan quadratic.
    r"\s*\(\s*(?P<q>['\"`])(?P<name>(?:\\.|(?!(?P=q))[^\n]){0,500})(?P=q)"
)
_JS_SUITE_MARK = re.compile(r"(?<![\w$.])(xdescribe|describe\.skip|describe\.only|fdescribe)\s*\(")
_JS_ASSERT = re.compile(r"(?<![\w$.])(?:expect|assert(?:\.\w+)?)\s*\(")
_JS_LITERAL_ARGUMENT = re.compile(
    r"\s*(?:true|false|null|undefined|-?\d[\d.]*|'[^'\n]*'|\"[^\"\n]*\"|`[^`$]*`)\s*[,)]"
)


def _js_inventory(text: str) -> dict[str, Any]:
    text = _JS_COMMENT.sub("", text)
    file_markers: dict[str, int] = {}
    for match in _JS_SUITE_MARK.finditer(text):
        kind = "only" if match.group(1) in ("describe.only", "fdescribe") else "skip"
        file_markers[kind] = file_markers.get(kind, 0) + 1
    inventory: dict[str, Any] = {}
    seen: dict[str, int] = {}
    calls = list(_JS_TEST_CALL.finditer(text))
    for index, match in enumerate(calls):
        end = calls[index + 1].start() if index + 1 < len(calls) else len(text)
        body = text[match.end() : end]
        call = match.group("call")
        markers: dict[str, int] = {}
        if call.startswith("x") or call.endswith((".skip", ".todo")):
            markers["skip"] = 1
        elif call.endswith(".failing"):
            markers["xfail"] = 1
        elif call.endswith(".only") or call == "fit":
            file_markers["only"] = file_markers.get("only", 0) + 1
        real = constant = 0
        for assertion in _JS_ASSERT.finditer(body):
            if _JS_LITERAL_ARGUMENT.match(body, assertion.end()):
                constant += 1
            else:
                real += 1
        name = _unique(match.group("name"), seen)
        inventory[name] = {"assertions": real, "constants": constant, "markers": markers}
    inventory[FILE_LEVEL] = {"markers": file_markers}
    return inventory


def _unique(name: str, seen: dict[str, int]) -> str:
    """Same-named tests (one per describe block) keep apart as ``name #2``, ``name #3``."""
    name = name or "<unnamed>"
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name} #{seen[name]}"


# -- Go ---------------------------------------------------------------------------------

_GO_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_GO_TEST_FUNC = re.compile(r"^func\s+(Test\w*)\s*\(\s*(\w+)\s+\*testing\.T\s*\)", re.M)
_GO_NEXT_FUNC = re.compile(r"^func\s", re.M)
_GO_CONSTANT = re.compile(r"\b(?:assert|require)\.True\(\s*\w+\s*,\s*true\s*[,)]")


def _go_inventory(text: str) -> dict[str, Any]:
    text = _GO_COMMENT.sub("", text)
    inventory: dict[str, Any] = {}
    for match in _GO_TEST_FUNC.finditer(text):
        following = _GO_NEXT_FUNC.search(text, match.end())
        body = text[match.end() : following.start() if following else len(text)]
        receiver = re.escape(match.group(2))
        checks = re.findall(rf"\b{receiver}\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(", body)
        helpers = re.findall(r"\b(?:assert|require)\.\w+\(", body)
        constant = len(_GO_CONSTANT.findall(body))
        skips = len(re.findall(rf"\b{receiver}\.(?:Skip|Skipf|SkipNow)\(", body))
        inventory[match.group(1)] = {
            "assertions": len(checks) + len(helpers) - constant,
            "constants": constant,
            "markers": {"skip": skips} if skips else {},
        }
    return inventory


# -- package.json and shell -------------------------------------------------------------


def _npm_inventory(text: str, scripts: Sequence[str]) -> tuple[dict[str, Any], str | None]:
    try:
        data = json.loads(text)
    except ValueError as error:
        return {}, f"invalid JSON ({error})"
    declared = data.get("scripts") if isinstance(data, dict) else None
    declared = declared if isinstance(declared, dict) else {}
    return {f"npm {name}": {"script": declared.get(name)} for name in scripts}, None


_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)", re.M)


def _make_inventory(text: str, targets: Sequence[str]) -> dict[str, Any]:
    """The recipe of each named target (its tab-indented lines), as the scripts it runs."""
    recipes: dict[str, str] = {}
    lines = text.splitlines()
    default = None
    for number, line in enumerate(lines):
        match = _MAKE_RULE.match(line)
        if not match or line.startswith("\t"):
            continue
        recipe = []
        for following in lines[number + 1 :]:
            if not following.startswith("\t"):
                break
            recipe.append(following.strip())
        for name in match.group(1).split():
            recipes.setdefault(name, "\n".join(recipe))
            if default is None and not name.startswith("."):
                default = name
    if default is not None:
        recipes.setdefault(_DEFAULT_GOAL, recipes[default])
    return {f"make {name}": {"script": recipes.get(name)} for name in targets}


_SHELL_EARLY_EXIT = re.compile(r"^\s*(exit(\s+0)?|true|:)\s*(;.*)?$")


def _shell_inventory(text: str) -> dict[str, Any]:
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    early = bool(lines) and bool(_SHELL_EARLY_EXIT.match(lines[0]))
    return {"assertions": len(lines), "constants": 0, "markers": {}, "early_exit": early}
