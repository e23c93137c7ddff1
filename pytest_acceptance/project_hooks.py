"""The project's own implementations of pytest-acceptance's hooks, found without running them.

The honest run (``pytest --acceptance SPEC`` in the project) loads the conftest.py files
from the rootdir down to the spec's folder, the modules they and the configuration's
``addopts`` name as plugins (``pytest_plugins``, ``-p NAME``), and the plugins installed in
its environment (entry points of group ``pytest11``). Any of them can implement a hook that
changes how the spec is read (``pytest_acceptance_formats``), how a criterion is run or
judged (``_run``, ``_judge``) or whether the verdict may pass (``_verdict``). The Claude
Code gate's run loads none of them (``--noconftest``, no plugin autoload): /implement's
probe (``gate_probe``) names each one found here, and the gate refuses to verify a flow
whose honest run would consult them.

Read statically (the source's syntax tree; nothing is imported or run): a definition, an
assignment or a string naming a hook counts, so ``@hookimpl(specname=...)`` does too.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata
import re
import shlex
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_acceptance import hookspecs

# pytest_acceptance_result only reports each result as it arrives: what it returns is not
# read, so a project's reporter changes no verdict.
DECIDING = frozenset(
    name
    for name in vars(hookspecs)
    if name.startswith("pytest_acceptance_") and name != "pytest_acceptance_result"
)
OURS = frozenset({"pytest-acceptance", "pytest-xdist"})  # the gate's run loads these itself
_NAMED = re.compile(r"\b(" + "|".join(sorted(DECIDING)) + r")\b")


def implementations(spec: Path, rootdir: Path, addopts: str = "") -> list[str]:
    """``file:line: hook`` for each implementation the honest run of ``spec`` would load:
    its conftest files, the plugins they and ``addopts`` name, the installed plugins."""
    found: list[str] = []  # what cannot be read statically is named too: never skipped
    conftests = list(_conftests(spec, rootdir))
    for conftest in conftests:
        found += _in_file(conftest)
    search = [str(rootdir), *(str(c.parent) for c in conftests)]
    named = [*_plugins_named(conftests, found), *_dash_p(addopts)]
    for plugin in _modules(named, search, found):
        found += _in_file(plugin)
    for distribution, entry_module in _installed_plugins():
        for path in _modules([entry_module], [], found):
            found += [f"{where} (installed plugin {distribution})" for where in _in_file(path)]
    return list(dict.fromkeys(found))


def _conftests(spec: Path, rootdir: Path) -> Iterator[Path]:
    """conftest.py in the rootdir and each folder down to the spec's, as pytest loads them."""
    root = rootdir.resolve()
    folder = spec.resolve().parent
    chain = [folder, *folder.parents]
    if root not in chain:
        chain = [root]
    for each in reversed(chain[: chain.index(root) + 1]):
        conftest = each / "conftest.py"
        if conftest.is_file():
            yield conftest


def _in_file(path: Path) -> list[str]:
    """``path:line: hook`` for each line of ``path`` that defines, assigns or names one."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return [f"{path}: cannot be read ({error.strerror or error})"]
    if not _NAMED.search(text):  # most files: no syntax tree needed
        return []
    try:
        lines = sorted(_named_in_tree(ast.parse(text)))
    except (SyntaxError, ValueError):  # unparsable here: every line that names one
        lines = [
            (number, match[1])
            for number, line in enumerate(text.splitlines(), 1)
            for match in _NAMED.finditer(line)
        ]
    return [f"{path}:{number}: {name}" for number, name in dict.fromkeys(lines)]


def _named_in_tree(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in DECIDING:
            yield node.lineno, node.name
        elif isinstance(node, ast.Name) and node.id in DECIDING:
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute) and node.attr in DECIDING:
            yield node.lineno, node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in _NAMED.finditer(node.value):
                yield node.lineno, match[1]


def _plugins_named(files: Iterable[Path], unread: list[str]) -> list[str]:
    """The module names the files' module-level ``pytest_plugins`` give (what pytest reads);
    a value only running the file could tell (a name, a call) goes to `unread`."""
    names: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            tree = ast.parse(text) if "pytest_plugins" in text else None
        except (OSError, SyntaxError, ValueError):
            continue  # _in_file names what cannot be read; pytest itself fails on bad syntax
        for node in tree.body if tree is not None else ():
            value = _plugins_value(node)
            if value is None:
                continue
            strings = _strings(value)
            if strings is None:
                unread.append(f"{path}:{node.lineno}: pytest_plugins only running it can read")
            names += strings or []
    return names


def _plugins_value(node: ast.stmt) -> ast.expr | None:
    """The value a module-level statement gives ``pytest_plugins`` (=, : and +=)."""
    if isinstance(node, ast.Assign):
        named = any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets)
        return node.value if named else None
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        target = node.target
        if isinstance(target, ast.Name) and target.id == "pytest_plugins":
            return node.value
    return None


def _strings(node: ast.AST | None) -> list[str] | None:
    """The strings a literal holds; None when it is not a literal of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        found: list[str] = []
        for element in node.elts:
            each = _strings(element)
            if each is None:
                return None
            found += each
        return found
    return None


def _dash_p(addopts: str) -> list[str]:
    """The plugins ``-p NAME`` / ``-pNAME`` of the configuration's addopts load."""
    try:
        words = shlex.split(addopts)
    except ValueError:
        words = addopts.split()
    names = []
    for index, word in enumerate(words):
        if word == "-p" and index + 1 < len(words):
            names.append(words[index + 1])
        elif word.startswith("-p") and len(word) > 2:
            names.append(word[2:])
    return [name for name in names if not name.startswith("no:")]


def _modules(names: list[str], search: list[str], unread: list[str]) -> Iterator[Path]:
    """The source files of the named modules, and of the plugins they name in turn, however
    deep (each module once: a cap would leave the deepest unread). A name not found is
    pytest's own plugin or one the honest run cannot import either."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name, search)
        if path is not None:
            yield path
            todo += _plugins_named([path], unread)


def _module_file(name: str, search: list[str]) -> Path | None:
    """Where ``name`` would be imported from, found without importing anything."""
    path: list[str] | None = [*search, *(entry for entry in sys.path if entry)]
    found = None
    for part in name.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, path)
        if found is None:
            return None
        path = list(found.submodule_search_locations or []) or None
    origin = found.origin if found is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


def _installed_plugins() -> Iterator[tuple[str, str]]:
    """(distribution, the module its entry point loads) for each installed pytest plugin but
    ours. Its module, and the plugins that module names in turn, are read: the rest of a
    distribution only through them (reading every file of every plugin would cost /implement
    a noticeable wait)."""
    for entry in importlib.metadata.entry_points(group="pytest11"):
        distribution = entry.dist
        name = distribution.metadata["Name"] if distribution is not None else None
        if name and _normal(name) not in OURS:
            yield name, entry.module


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
