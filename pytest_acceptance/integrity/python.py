"""The inventory of a Python test file, read with ``ast``: per test, its assertions, constant
assertions and skip/xfail markers; per file, what can skip or rewrite every test."""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Iterator
from typing import Any

from .findings import FILE_LEVEL
from .import_time import import_time_statements, leaking_writes

_SKIP_MARKS = {"skip": "skip", "skipif": "skip", "skipIf": "skip", "skipUnless": "skip",
               "xfail": "xfail", "expectedFailure": "xfail"}  # fmt: skip


_SKIP_CALLS = {"skip": "skip", "importorskip": "skip", "skipTest": "skip", "xfail": "xfail"}
_ASSERT_CALLS = frozenset({"fail", "raises", "warns", "deprecated_call", "assertRaises"})


def python_inventory(content: bytes) -> tuple[dict[str, Any], str | None]:
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
    _pin_definitions(tree.body, "", inventory)
    return inventory


def identity(node: ast.AST) -> str:
    """A definition's content: its code, decorators and signature, not where it stands (a
    test moved down the file is the same test; one whose body changed in any way is not)."""
    dumped = ast.dump(node, annotate_fields=True, include_attributes=False)
    return hashlib.sha256(dumped.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _pin_definitions(body: list[ast.stmt], prefix: str, inventory: dict[str, Any]) -> None:
    """Every function and class of the module (and of its test classes) by identity, and how
    often each name is bound: a second binding (``test_x = lambda: None``, a later ``def``
    of the same name, an import under that name) replaces the pinned definition."""
    bound = _bindings(body)
    for node in body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        name = prefix + node.name
        entry = inventory.setdefault(name, {})
        entry["identity"] = identity(_without_tests(node))
        entry["bindings"] = bound.get(node.name, 1)
        if isinstance(node, ast.ClassDef) and _is_test_class(node):
            _pin_definitions(node.body, f"{name}::", inventory)


def _without_tests(node: ast.AST) -> ast.AST:
    """A test class as pinned on its own: its tests are pinned one by one."""
    if not isinstance(node, ast.ClassDef) or not _is_test_class(node):
        return node
    kept = copy.copy(node)
    kept.body = [
        statement
        for statement in node.body
        if not (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and statement.name.startswith(("test", "Test"))
        )
    ]
    return kept


def _bindings(body: list[ast.stmt]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in body:
        for name in _bound_names(node):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names = []
    for target in targets:
        names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


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
        name_of(base).endswith("TestCase") for base in node.bases
    )


def _add_counts(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    total = dict(first)
    for key, value in second.items():
        total[key] = total.get(key, 0) + value
    return total


def name_of(node: ast.AST) -> str:
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
    code = len(import_time_statements(tree))  # what it runs on import, beyond definitions
    if code:
        markers["import-code"] = code
    writes = len(leaking_writes(tree))  # writes into imported modules that outlive a test
    if writes:
        markers["module-write"] = writes
    return markers


def _statement_markers(body: list[ast.stmt]) -> dict[str, int]:
    """``pytestmark = ...`` and ``__test__ = False`` among a module's or class's statements."""
    markers: dict[str, int] = {}
    for statement in body:
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = {name_of(target) for target in targets}
        if "pytestmark" in names and statement.value is not None:
            markers = _add_counts(markers, _marks_in(statement.value))
        if "__test__" in names and literal(statement.value) is False:
            markers["not-collected"] = markers.get("not-collected", 0) + 1
        if "pytest_plugins" in names:
            markers["plugins"] = markers.get("plugins", 0) + 1
    return markers


def _skip_calls(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            kind = _SKIP_CALLS.get(name_of(inner))
            if kind:
                yield kind
        elif isinstance(inner, ast.Raise) and inner.exc is not None:
            name = name_of(inner.exc)  # raise unittest.SkipTest(...), pytest.skip.Exception
            if name == "SkipTest" or (name == "Exception" and "attr='skip'" in ast.dump(inner.exc)):
                yield "skip"


def _body_skips(node: ast.AST) -> list[str]:
    kinds: list[str] = []
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
                name = name_of(inner)
                if name.startswith("assert") or name in _ASSERT_CALLS:
                    args = [*inner.args, *(k.value for k in inner.keywords)]
                    if (
                        args
                        and all(literal(a) is not _NOT_LITERAL for a in args)
                        and (name not in _ASSERT_CALLS)
                    ):
                        constant += 1
                    else:
                        real += 1
                elif isinstance(inner.func, ast.Name) and name in helpers:
                    real += 1
    return real, constant


_NOT_LITERAL = object()


def literal(node: ast.AST | None) -> Any:
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
    value = literal(test)
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
        if not (isinstance(decorator, ast.Call) and name_of(decorator) == "parametrize"):
            continue
        values = decorator.args[1] if len(decorator.args) > 1 else None
        for keyword in decorator.keywords:
            if keyword.arg == "argvalues":
                values = keyword.value
        if not isinstance(values, (ast.List, ast.Tuple, ast.Set)):
            return None
        total *= len(values.elts)
    return total
