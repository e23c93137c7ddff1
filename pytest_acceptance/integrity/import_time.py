"""Code a new Python module beside the pinned tests runs when it is imported, and writes its
functions make into modules it imports.

A new test file is allowed (new tests never weaken anything), but pytest imports it in the
same process as the pinned tests: module-level code there can monkeypatch the code under
test, swap ``sys.modules`` entries, edit ``builtins``, or write files the tests read. So a
new module in a pinned test folder (or beside a pinned test) is reported when it does more at
import than imports, definitions, classes, constants and ``pytestmark``; ``pytest_plugins``
is configuration (it registers other modules as plugins), not a constant.

Allowed at module (and class) level: docstrings, imports, ``def``/``class`` (their
decorators, defaults, bases and annotations are checked like any expression), assignments
to (and ``del`` of) plain names, ``raise`` and ``pytest.skip()`` (they fail or skip that
module alone), ``if __name__ == "__main__":`` blocks (never run under pytest), and
``if``/``try`` blocks holding only those. Reported: any other statement (a bare call, a
loop, ``with``, an assignment to an attribute or item, ``global``),
and in the expressions that run at import, a call that changes state (``setattr``, ``exec``,
``open(..., "w")``, ``os.system``, ``.write_text``, ``.start()`` of a patcher, ...), a use of
``sys.modules``, ``builtins``, ``os.environ``, ``sys.path`` or ``sys.meta_path`` other than
reading it, and a call of one of the module's own functions (or a decorator of its own)
whose body does any of that or assigns outside itself (a wrapper it defines runs later and
is not counted). Also reported: a function (a test, a fixture, a setup method) that
writes into a module the file imports: no monkeypatch undoes it, so it changes what the
tests that run after it see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

_STATE_CHANGING_CALLS = frozenset(
    {"setattr", "delattr", "exec", "eval", "globals", "locals", "vars", "system", "popen",
     "spawnl", "spawnv", "execv", "execl", "run", "check_call", "check_output", "Popen",
     "write", "writelines", "write_text", "write_bytes", "touch", "unlink", "remove",
     "rmtree", "rename", "mkdir", "makedirs", "chmod", "chown", "symlink", "putenv",
     "unsetenv", "start", "setitem", "delitem", "reload", "settrace", "setprofile",
     "addaudithook", "exit", "_exit", "kill", "setrecursionlimit", "register", "monkeypatch",
     "copyfile", "copy2", "copytree", "move"}
)  # fmt: skip
# The process-wide state every test shares: import-time code may only read it.
_SHARED_STATE = frozenset(
    {("sys", "modules"), ("sys", "path"), ("sys", "meta_path"), ("sys", "path_hooks"),
     ("sys", "path_importer_cache"), ("os", "environ"), ("builtins",), ("__builtins__",),
     ("environ",)}
)  # fmt: skip
_READS = frozenset({"get", "keys", "items", "values", "copy", "__contains__", "__getitem__"})
# A raise at import fails (or, SkipTest, skips) that module alone.
_ALLOWED_STATEMENTS = (ast.Import, ast.ImportFrom, ast.Pass, ast.Raise)
_SKIPS = frozenset({"skip", "importorskip", "skipTest"})  # pytest.skip(allow_module_level=True)
# Module-level names pytest itself reads from a module it imports, beyond tests and marks:
# `pytest_plugins` registers other modules as plugins (their hooks see every test).
_PYTEST_READS = frozenset({"pytest_plugins"})


def module_changes(content: bytes) -> str | None:
    """How a new module can change what other tests see, if it can: code it runs on import,
    or a function that writes into a module it imports (the write outlives the test, so the
    tests that run after it see it); None when neither, or when it does not parse."""
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = import_time_statements(tree)
    if found:
        return f"code that runs when it is imported ({found[0]})"
    writes = leaking_writes(tree)
    return f"a function that writes into a module it imports ({writes[0]})" if writes else None


def leaking_writes(tree: ast.Module) -> list[str]:
    """``line N: test_x writes into app`` for each write a function makes into a module the
    file imports (``app.compute = ...``, ``os.environ[...] = ...``, ``del``, ``setattr(app,
    ...)``): unlike ``monkeypatch.setattr`` it is never undone. Undone by hand or not, it is
    reported; ``monkeypatch`` is the honest way."""
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    found: dict[int, str] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        modules = imported - _bound_in(function)
        for node in ast.walk(function):
            for target in _written(node):
                root = _root_name(target)
                if root in modules and target is not None and not isinstance(target, ast.Name):
                    line = getattr(node, "lineno", 0)
                    found.setdefault(line, f"line {line}: {function.name} writes into {root}")
    return [found[line] for line in sorted(found)]


def _bound_in(function: ast.AST) -> set[str]:
    """Names a function binds itself (arguments, assignments, its own imports)."""
    names = {argument.arg for argument in ast.walk(function) if isinstance(argument, ast.arg)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _written(node: ast.AST) -> list[ast.expr]:
    """What a statement or call writes into: assignment and ``del`` targets, the first
    argument of ``setattr``/``delattr``."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and node.args
    ):
        return [ast.Attribute(value=node.args[0], attr="", ctx=ast.Store())]
    return []


def import_time_statements(tree: ast.Module) -> list[str]:
    """``line N: what`` for each module-level statement that runs code at import."""
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found = []
    for statement in tree.body:
        try:
            what = _statement(statement, functions)
        except RecursionError:
            what = f"line {statement.lineno}: nested too deeply to read"
        if what:
            found.append(what)
    return found


def _first_in_statements(body: list[ast.stmt], functions: Mapping[str, ast.AST]) -> str | None:
    for statement in body:
        found = _statement(statement, functions)
        if found:
            return found
    return None


def _statement(node: ast.stmt, functions: Mapping[str, ast.AST]) -> str | None:
    where = f"line {node.lineno}"
    if isinstance(node, _ALLOWED_STATEMENTS):
        return None
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None  # a docstring
    skip = isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    if skip and _callee(node.value) in _SKIPS:  # type: ignore[attr-defined]
        return None  # skips this module alone
    if isinstance(node, ast.Delete) and all(_plain_names(t) for t in node.targets):
        return None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = node.args
        defaults = [d for d in arguments.kw_defaults if d is not None]  # None: no default
        evaluated = [*node.decorator_list, *arguments.defaults, *defaults]
        evaluated += [a.annotation for a in _all_arguments(arguments) if a.annotation]
        evaluated += [node.returns] if node.returns else []
        return _first_in_expressions(evaluated, functions, where, decorators=True)
    if isinstance(node, ast.ClassDef):
        evaluated = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
        found = _first_in_expressions(evaluated, functions, where, decorators=True)
        return found or _first_in_statements(node.body, functions)
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(_plain_names(target) for target in targets):
            return f"{where}: an assignment to an attribute or item of something else"
        names = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        for name in sorted(names & _PYTEST_READS):
            return f"{where}: `{name}`, which pytest reads as configuration"
        value = [node.value] if node.value is not None else []
        annotation = [node.annotation] if isinstance(node, ast.AnnAssign) else []
        return _first_in_expressions([*value, *annotation], functions, where)
    if isinstance(node, ast.If):
        if _runs_as_script_only(node.test):
            return None  # if __name__ == "__main__": never true when pytest imports it
        found = _first_in_expressions([node.test], functions, where)
        return found or _first_in_statements([*node.body, *node.orelse], functions)
    if isinstance(node, ast.Try):
        handlers = [statement for handler in node.handlers for statement in handler.body]
        blocks = [*node.body, *handlers, *node.orelse, *node.finalbody]
        return _first_in_statements(blocks, functions)
    return f"{where}: a statement that runs at import ({type(node).__name__})"


def _runs_as_script_only(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _all_arguments(arguments: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, *extra]


def _plain_names(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_plain_names(element) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _plain_names(target.value)
    return False


def _first_in_expressions(
    expressions: list[ast.expr],
    functions: Mapping[str, ast.AST],
    where: str,
    decorators: bool = False,
) -> str | None:
    for expression in expressions:
        if decorators and isinstance(expression, ast.Name) and expression.id in functions:
            found = _changes_state(functions[expression.id], functions)  # @decorator calls it
            if found:
                return f"{where}: the decorator {expression.id}() {found}"
        shared = _shared_reference(expression)
        if shared:
            return f"{where}: {shared}"
        for node in ast.walk(expression):
            if isinstance(node, ast.Call):
                found = _call(node, functions)
                if found:
                    return f"{where}: {found}"
    return None


def _shared_reference(tree: ast.AST, nodes: list[ast.AST] | None = None) -> str | None:
    """A use of ``sys.modules``, ``builtins``, ``os.environ``, ``sys.path``... other than
    reading it (``.get()``, ``x in``, ``[key]``): passing it on or aliasing it counts too."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree) if nodes is None else nodes:
        chain = tuple(_attribute_chain(node)) if isinstance(node, (ast.Attribute, ast.Name)) else ()
        if chain not in _SHARED_STATE or not _escapes(node, parents):
            continue
        return f"{'.'.join(chain)} used at import other than by reading it"
    return None


def _call(node: ast.Call, functions: Mapping[str, ast.AST]) -> str | None:
    if _changes_shared_state(node):
        return f"a call of {_callee(node)}()"
    if isinstance(node.func, ast.Name) and node.func.id in functions:
        found = _changes_state(functions[node.func.id], functions)
        if found:
            return f"a call of {node.func.id}(), which {found}"
    return None


def _changes_shared_state(node: ast.Call) -> bool:
    """A call that changes files, processes or the interpreter."""
    name = _callee(node)
    if name == "open":
        return _opens_for_writing(node)
    return name in _STATE_CHANGING_CALLS


def _escapes(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether this use of shared state can change it or hand it on (reported), rather than
    read it: ``os.environ.get("CI")``, ``"CI" in os.environ``, ``sys.modules["x"]`` read."""
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return False
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return not isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr in _READS:
            return False
        call = parents.get(parent)
        called = isinstance(call, ast.Call) and call.func is parent
        return called or not isinstance(parent.ctx, ast.Load)
    return True


def _opens_for_writing(node: ast.Call) -> bool:
    """``open(path)`` reads; a mode with w/a/x/+ (or one not written as a literal) writes."""
    modes = [k.value for k in node.keywords if k.arg == "mode"]
    modes += (
        node.args[1:2]
        if _callee(node) == "open" and isinstance(node.func, ast.Name)
        else node.args[:1]
    )
    for mode in modes:
        if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
            return True
        if set(mode.value) & set("wax+"):
            return True
    return False


def _callee(node: ast.Call) -> str:
    """``write_text`` of ``Path(p).write_text(...)``."""
    chain = _attribute_chain(node.func)
    return chain[-1] if chain else ""


def _attribute_chain(node: ast.expr) -> list[str]:
    """``sys.modules.update`` -> ["sys", "modules", "update"]."""
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        chain.append(node.id)
    return chain[::-1]


def _changes_state(
    function: ast.AST, functions: Mapping[str, ast.AST], seen: frozenset[str] = frozenset()
) -> str | None:
    """What a module function does beyond computing a value, if anything: a state-changing
    call (its own module functions followed), an assignment into something not its own,
    ``global``/``nonlocal``."""
    own = {
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    } | {argument.arg for argument in ast.walk(function) if isinstance(argument, ast.arg)}
    seen = seen | {getattr(function, "name", "")}
    runs = list(_runs_when_called(function))
    shared = _shared_reference(function, runs)
    if shared:
        return shared.replace(" at import", "")
    for node in runs:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return f"declares {type(node).__name__.lower()} names"
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if not all(_plain_names(t) or _root_name(t) in own for t in targets):
                return "assigns to an attribute or item of something else"
        if isinstance(node, ast.Call):
            if _changes_shared_state(node):
                return f"calls {_callee(node)}()"
            callee = node.func.id if isinstance(node.func, ast.Name) else ""
            if callee in functions and callee not in seen:
                found = _changes_state(functions[callee], functions, seen)
                if found:
                    return f"calls {callee}(), which {found}"
    return None


def _runs_when_called(function: ast.AST) -> Iterator[ast.AST]:
    """What a call of ``function`` runs: its body, but not the bodies of the functions,
    lambdas and classes it defines (a decorator's wrapper runs later, if ever)."""
    todo: list[ast.AST] = list(getattr(function, "body", []))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _root_name(target: ast.expr) -> str:
    """``a`` of ``a.b[c].d``."""
    while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else ""
