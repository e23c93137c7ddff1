"""The witness: a pytest plugin the gate loads into a criterion's own pytest run.

The gate never imports this module. It writes this file into a zip archive of its run,
under a module name no file and no entry point can carry (witness.py), and has a
criterion's pytest load it from there (``-p``), so neither the project nor the interpreter
the criterion uses supplies it. Standard library only, and no ``import pytest``:
it runs under whatever pytest the criterion starts.

It writes, into the folder named by ``ACCEPTANCE_WITNESS_RECORDS`` (a private folder of the
gate's, made fresh for each run), one file per pytest session, one JSON object per line:

- ``start`` when the session starts: the criterion (``PYTEST_ACCEPTANCE_CRITERION``);
- ``collected``: the node ids the session selected, which carry a skip or xfail mark, the
  rootdir, and the files it collected (a module with no test among them too: it was
  imported all the same), each noted when pytest starts collecting it, as it is then;
  under xdist each worker writes its own file (``worker``, then ``collected``) of the files
  it collected, the controller having told it where (``workerinput``);
- ``finish`` at ``pytest_sessionfinish``: how each test ended, and pytest's exit status;
- ``modules`` at ``pytest_unconfigure``: the source file of every module imported by then
  (``rewritten``: those pytest's assertion rewriting loaded), which the gate compiles once
  for its runs (gate_bytecode.py); in the pin's collection (no distributions listed yet),
  also every distribution it saw, the sources of the modules marked as test code, and
  each top-level module no finder found (``missed``), with the files that asked for it.

With ``ACCEPTANCE_WITNESS_ONLY`` (a file listing paths relative to the rootdir, one a line),
pytest collects no file but those, conftest files and ``__init__.py``: the gate's second run
of a criterion whose tests were joined by new test files, so that the pinned tests are judged
in a process no new test file ran in (witness.py). A listed file changed since /implement
comes with a tab and the path of its content then: pytest's assertion rewriting compiles
that content in its place (``substituted`` in the ``collected`` record), and one it did not
compile so (no copy, or assertion rewriting off) is noted as ``unsubstituted``.

A session cut short (``os._exit``, a kill, a crash) never writes ``finish``. The variable
is taken out of the environment when this module loads, before any of the project's code
runs: a pytest the tests start themselves, and xdist's workers, record nothing (the
controller hears every worker's reports).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.machinery
import json
import os
import sys
import time
from typing import Any

RECORDS_VARIABLE = "ACCEPTANCE_WITNESS_RECORDS"
DISTRIBUTIONS_VARIABLE = "ACCEPTANCE_WITNESS_DISTRIBUTIONS"
ONLY_VARIABLE = "ACCEPTANCE_WITNESS_ONLY"
_RECORDS = os.environ.pop(RECORDS_VARIABLE, "")
_DISTRIBUTIONS = os.environ.get(DISTRIBUTIONS_VARIABLE, "")  # kept: xdist workers load plugins
_ONLY = os.environ.get(ONLY_VARIABLE, "")  # kept: xdist workers collect
_CRITERION = os.environ.get("PYTEST_ACCEPTANCE_CRITERION", "")
_MARKS = ("skip", "skipif", "xfail")
# How a test ended, strongest last: a later phase never hides an earlier failure.
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 2, "error": 2}


def distribution_key(distribution: Any) -> str:
    """A distribution by identity: its metadata folder and what its ``entry_points.txt``
    declares (what makes it load code into a run it was never named in)."""
    try:
        declared = distribution.read_text("entry_points.txt") or ""
    except (OSError, ValueError):
        declared = "\0unreadable"
    digest = hashlib.sha256(declared.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{getattr(distribution, '_path', '')}\t{digest}"


def _only_pinned_distributions(listing: str) -> None:
    """Under the gate, for the whole session: the distributions ``importlib.metadata``
    lists (pytest's ``pytest11`` entry points, a plugin's own entry point groups, anything
    that asks) are those the criterion's pytest saw at /implement, each with the entry
    points it declared then, listed by :func:`distribution_key` one a line in `listing`. A
    metadata folder written or changed since, in the project (on ``sys.path``) or anywhere
    else, declares nothing. This module is the run's first ``-p``: pytest loads entry
    points after it."""
    import importlib.metadata as metadata

    try:
        with open(listing, encoding="utf-8") as stream:
            allowed = set(stream.read().splitlines())
    except OSError:
        allowed = set()
    every = metadata.distributions
    known: dict[str, bool] = {}

    def pinned(**kwargs: Any) -> Any:
        for distribution in every(**kwargs):
            path = str(getattr(distribution, "_path", ""))
            if path not in known:
                known[path] = distribution_key(distribution) in allowed
            if known[path]:
                yield distribution

    metadata.distributions = pinned


if _DISTRIBUTIONS:
    _only_pinned_distributions(_DISTRIBUTIONS)


# The import machinery, and pytest.importorskip: they import a name for their caller.
_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__ or ""))
_IMPORTORSKIP = os.path.join("_pytest", "outcomes.py")
_IMPORTERS_KEPT = 8  # files noted asking for one missing module


class _MissedImports:
    """Last on ``sys.meta_path``, in the pin's collection: each top-level module no finder
    before it found, with the file of the code that asked for it (the importer). A module
    the environment looks for and does not find (pytest-randomly's optional ``numpy``) is
    one the project must not gain later: it would be imported instead (witness.py)."""

    def __init__(self) -> None:
        self.asked: dict[str, set[str]] = {}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if path is None:
            importers = self.asked.setdefault(name, set())
            if len(importers) < _IMPORTERS_KEPT:
                importers.add(_importer())
        return None

    def missed(self) -> list[str]:
        """``name<TAB>importer`` for each module not imported by the end (a finder added
        later than this one may have found it) and each file that asked for it."""
        return sorted(
            f"{name}\t{by}"
            for name, importers in self.asked.items()
            if name not in sys.modules
            for by in importers
        )


def _importer() -> str:
    """The file of the code that asked for a module: the first frame outside the import
    machinery, pytest.importorskip and this module."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        machinery = name.startswith(("<frozen", _IMPORTLIB + os.sep))
        if not machinery and not name.endswith(_IMPORTORSKIP) and name != __file__:
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return ""


_missed_imports: _MissedImports | None = None
if _RECORDS and not _DISTRIBUTIONS:  # the pin's collection: what only the pin records
    _missed_imports = _MissedImports()
    sys.meta_path.append(_missed_imports)


class _Importers:
    """First on ``sys.meta_path`` in the gate's run, its xdist workers' too: for each
    top-level module asked for, who asked and where a search of the import path finds it,
    whether the import then succeeds or not. A module in the project that code outside it
    asked for (the standard library's optional ``org.python.core``, a plugin's ``numpy``)
    stands in for one the environment lacks; new since /implement, the gate trusts no pass
    it took part in (witness.py). What was imported before this module loaded was asked
    for by start-up code (the names such code asks for and does not find are pinned at
    /implement: pins/shadowed_names.py)."""

    def __init__(self) -> None:
        self.asked: dict[str, set[str]] = {}
        self.found: dict[str, set[str]] = {}
        self.searching = False
        for name, module in list(sys.modules.items()):
            if "." not in name:
                self.asked[name] = {""}
                self.found[name] = {_location(getattr(module, "__spec__", None))}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if path is not None or self.searching:
            return None
        self.asked.setdefault(name, set()).add(_importer())
        self.searching = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(name)
        except Exception:  # a broken path entry: the import itself will say so
            spec = None
        finally:
            self.searching = False
        self.found.setdefault(name, set()).add(_location(spec))
        return None

    def from_the_project(self, root: str) -> list[str]:
        """``name<TAB>location<TAB>importer`` for each top-level module found inside
        ``root``, by the path the import found or by where it leads (a link in the project
        to a folder outside it is the project's), that code outside it asked for (start-up
        code: an empty importer)."""
        real = os.path.realpath(root) + os.sep
        inside = (os.path.abspath(root) + os.sep, real)
        found = []
        for name, places in sorted(self.found.items()):
            for where in sorted(p for p in places if p):
                if not where.startswith(inside) and not os.path.realpath(where).startswith(real):
                    continue
                for importer in sorted(self.asked.get(name, ())):
                    if not importer or not os.path.realpath(importer).startswith(real):
                        found.append(f"{name}\t{where}\t{importer}")
        return found


def _location(spec: Any) -> str:
    """A module spec's file, or a namespace package's first folder ("" when neither)."""
    origin = getattr(spec, "origin", None)
    if isinstance(origin, str) and os.path.isabs(origin):
        return origin
    folders = list(getattr(spec, "submodule_search_locations", None) or ())
    return str(folders[0]) if folders and isinstance(folders[0], str) else ""


_importers: _Importers | None = None
if _DISTRIBUTIONS:  # the gate's run
    _importers = _Importers()
    sys.meta_path.insert(0, _importers)


# First among its peers (pluggy's own marker, written out: this module imports no pytest).
_FIRST = {
    "wrapper": False,
    "hookwrapper": False,
    "optionalhook": False,
    "tryfirst": True,
    "trylast": False,
    "specname": None,
}
# A hook of xdist's: optional, since the criterion's pytest may run without it.
_OPTIONAL = {**_FIRST, "optionalhook": True, "tryfirst": False}
_WORKER_RECORDS = "acceptance_witness_records"  # the records folder, in xdist's workerinput


def _listed(listing: str) -> dict[str, str | None]:
    """Each listed file, with the path of the content to run in its place (None: as it is;
    "": changed, with no content to run instead)."""
    try:
        with open(listing, encoding="utf-8") as stream:
            lines = stream.read().splitlines()
    except OSError:
        return {}  # nothing listed: nothing but conftest files is collected
    found: dict[str, str | None] = {}
    for line in lines:
        path, tab, pinned = line.partition("\t")
        found[path] = pinned if tab else None
    return found


_COLLECTED_ONLY = _listed(_ONLY) if _ONLY else None
_SUBSTITUTED: set[str] = set()  # listed files compiled from their content at /implement
_ALWAYS_COLLECTED = ("conftest.py", "__init__.py")  # configuration and packages, pinned whole


def pytest_ignore_collect(collection_path: Any, config: Any) -> bool | None:
    """Under ``ACCEPTANCE_WITNESS_ONLY``: every file not listed is left uncollected, so never
    imported. First: a conftest answering False would otherwise have it collected."""
    if _COLLECTED_ONLY is None or collection_path.is_dir():
        return None
    if collection_path.name in _ALWAYS_COLLECTED:
        return None
    relative = os.path.relpath(str(collection_path), str(config.rootpath))
    return None if relative.replace(os.sep, "/") in _COLLECTED_ONLY else True


pytest_ignore_collect.pytest_impl = _FIRST  # type: ignore[attr-defined]


def pytest_configure(config: Any) -> None:
    """Under ``ACCEPTANCE_WITNESS_ONLY``, a listed file changed since /implement is compiled
    from its content then: pytest's assertion rewriting reads it instead of the file (and
    never its bytecode cache). pytest's private names: a pytest without them substitutes
    nothing, and every such file is reported unsubstituted."""
    pinned = {
        os.path.join(str(config.rootpath), path): (path, copy)
        for path, copy in (_COLLECTED_ONLY or {}).items()
        if copy
    }
    if not pinned:
        return
    rewrite: Any = sys.modules.get("_pytest.assertion.rewrite")  # loaded by pytest by now
    if not all(hasattr(rewrite, n) for n in ("_rewrite_test", "_read_pyc", "rewrite_asserts")):
        return
    compile_test, read_pyc = rewrite._rewrite_test, rewrite._read_pyc

    def pinned_test(fn: Any, config: Any) -> Any:
        if str(fn) not in pinned:
            return compile_test(fn, config)
        path, copy = pinned[str(fn)]
        with open(copy, "rb") as stream:
            source = stream.read()
        tree = ast.parse(source, filename=str(fn))
        rewrite.rewrite_asserts(tree, source, str(fn), config)
        code = compile(tree, str(fn), "exec", dont_inherit=True)
        _SUBSTITUTED.add(path)
        return os.stat(fn), code

    def no_cache_for_pinned(source: Any, *args: Any, **kwargs: Any) -> Any:
        return None if str(source) in pinned else read_pyc(source, *args, **kwargs)

    rewrite._rewrite_test, rewrite._read_pyc = pinned_test, no_cache_for_pinned


def visible_distributions() -> list[str]:
    """Every distribution ``importlib.metadata`` lists in this process, by identity."""
    import importlib.metadata as metadata

    return sorted({distribution_key(d) for d in metadata.distributions()})


class _Session:
    def __init__(self, path: str, worker: bool = False) -> None:
        self.path = path
        self.worker = worker  # an xdist worker's: it records the files it collects, only
        self.outcomes: dict[str, str] = {}
        self.files: set[str] = set()  # node ids of the files it started collecting

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)


_session: _Session | None = None


def pytest_configure_node(node: Any) -> None:
    """xdist's controller, for each worker it starts: where the worker records."""
    if _RECORDS:
        node.workerinput[_WORKER_RECORDS] = _RECORDS


pytest_configure_node.pytest_impl = _OPTIONAL  # type: ignore[attr-defined]


def pytest_sessionstart(session: Any) -> None:
    """First: before xdist's controller starts the workers, whose records come after."""
    global _session
    if _session is not None:
        return
    workerinput = getattr(session.config, "workerinput", None)
    records = workerinput.get(_WORKER_RECORDS) if isinstance(workerinput, dict) else _RECORDS
    if not records:
        return
    name = f"{time.time_ns()}-{os.getpid()}.jsonl"
    _session = _Session(os.path.join(records, name), worker=workerinput is not None)
    # The environment it runs in, named as Python found it: the gate pins each one its
    # criteria ran under at /implement, and trusts no session of another.
    _session.write(
        {
            "event": "worker" if _session.worker else "start",
            "criterion": _CRITERION,
            "python": sys.executable,
            "prefix": sys.prefix,
        }
    )


pytest_sessionstart.pytest_impl = _FIRST  # type: ignore[attr-defined]


def pytest_collectstart(collector: Any) -> None:
    """A file is noted before pytest imports it: what the file does once imported (rename
    itself away, say) cannot take it off the list."""
    if _session is None or not collector.nodeid or "::" in collector.nodeid:
        return
    if os.path.isfile(str(getattr(collector, "path", ""))):
        _session.files.add(collector.nodeid)


def pytest_collection_finish(session: Any) -> None:
    if _session is None:
        return
    ids: list[str] = []
    marked: list[str] = []
    for item in session.items:
        ids.append(item.nodeid)
        if _carries_a_mark(item):
            marked.append(item.nodeid)
    files = sorted(_session.files)
    changed = {path for path, copy in (_COLLECTED_ONLY or {}).items() if copy is not None}
    runs = {
        "substituted": sorted(_SUBSTITUTED),
        "unsubstituted": sorted(changed & _session.files - _SUBSTITUTED),
    }
    if _session.worker:
        _session.write({"event": "collected", "files": files, **runs})
        return
    root = str(session.config.rootpath)
    record = {"event": "collected", "ids": ids, "marked": marked, "files": files, "root": root}
    _session.write({**record, **runs})


def _carries_a_mark(item: Any) -> bool:
    for name in _MARKS:
        if next(iter(item.iter_markers(name=name)), None) is not None:
            return True
    function = getattr(item, "obj", None)
    owner = getattr(item, "cls", None)
    return any(getattr(thing, "__unittest_skip__", False) for thing in (function, owner))


def pytest_runtest_logreport(report: Any) -> None:
    if _session is None or _session.worker:
        return
    outcome = _outcome(report)
    if outcome is None:
        return
    earlier = _session.outcomes.get(report.nodeid)
    if earlier is None or _RANK.get(outcome, 0) >= _RANK.get(earlier, 0):
        _session.outcomes[report.nodeid] = outcome


def _outcome(report: Any) -> str | None:
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if xfail:
            return "xfailed" if report.skipped else "xpassed"
        return str(report.outcome)
    if report.failed:
        return "error"
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    return None  # a setup or teardown that passed says nothing about the test


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    if _session is None or _session.worker:
        return
    _session.write({"event": "finish", "exitstatus": int(exitstatus), "tests": _session.outcomes})


def pytest_unconfigure(config: Any) -> None:
    """Last: plugins still import at the terminal summary (hypothesis does)."""
    if _session is None:
        return
    if _importers is not None:
        imports = _importers.from_the_project(str(config.rootpath))
        _session.write({"event": "outside", "imports": imports})
    if _session.worker:
        return
    plain, rewritten = _module_sources()
    record: dict[str, Any] = {"event": "modules", "plain": plain, "rewritten": rewritten}
    if not _DISTRIBUTIONS:  # the pin's collection: what only the pin records
        files, folders = _registered_sources(_entry_point_plugins(config))
        record.update(distributions=visible_distributions(), registered=files, folders=folders)
        record.update(missed=_missed_imports.missed() if _missed_imports else [])
    _session.write(record)


def _entry_point_plugins(config: Any) -> list[str]:
    """The sources of the modules pytest loaded as plugins through a distribution's
    ``pytest11`` entry point: harness code, whatever pytest could mark for rewriting (an
    editable install's record names no module of it, an egg-info folder may list no file).
    A package's folder comes first, followed by its ``.py`` files."""
    try:
        loaded = config.pluginmanager.list_plugin_distinfo()
    except Exception:  # a pluggy without it: pytest's own marks stand alone
        return []
    found: list[str] = []
    for plugin, _ in loaded:
        folders = list(getattr(plugin, "__path__", None) or ())
        source = getattr(plugin, "__file__", None)
        if folders and isinstance(folders[0], str):
            found += [folders[0], *_python_files(folders[0])]
        elif isinstance(source, str) and source.endswith(".py"):
            found.append(source)
    return found


def _registered_sources(plugins: list[str]) -> tuple[list[str], list[str]]:
    """The source files of the modules pytest was told are test code (its assertion
    rewriting's marks: ``register_assert_rewrite``, ``pytest_plugins``, ``-p``), whether the
    session imported them or not, found on ``sys.path`` as an import would find them: a
    marked module's file, a marked package's every ``.py`` file; and the packages' folders;
    with the ``plugins`` pytest loaded through entry points (their sources, folders first)."""
    hook = next((f for f in sys.meta_path if type(f).__name__ == "AssertionRewritingHook"), None)
    names = getattr(hook, "_must_rewrite", None)
    files = {path for path in plugins if not os.path.isdir(path)}
    folders = {path for path in plugins if os.path.isdir(path)}
    for name in sorted(names) if isinstance(names, (set, frozenset)) else []:
        found = _sources_of(str(name))
        if found and os.path.isdir(found[0]):
            folders.add(found.pop(0))
        files.update(found)
    return sorted(files)[:_SOURCES_LIMIT], sorted(folders)


_SOURCES_LIMIT = 20000


def _sources_of(name: str) -> list[str]:
    """A module's file, or a package's folder followed by its ``.py`` files."""
    for entry in sys.path:
        base = os.path.join(os.path.abspath(entry or os.curdir), *name.split("."))
        if os.path.isdir(base):
            return [base, *_python_files(base)]
        if os.path.isfile(base + ".py"):
            return [base + ".py"]
    return []


def _python_files(folder: str) -> list[str]:
    found = []
    for here, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        found += [os.path.join(here, f) for f in sorted(files) if f.endswith(".py")]
        if len(found) > _SOURCES_LIMIT:
            break
    return found


def _module_sources() -> tuple[list[str], list[str]]:
    plain: set[str] = set()
    rewritten: set[str] = set()
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if not isinstance(origin, str) or not origin.endswith(".py"):
            continue
        loader = type(getattr(spec, "loader", None)).__name__
        (rewritten if loader == "AssertionRewritingHook" else plain).add(origin)
    return sorted(plain), sorted(rewritten)
