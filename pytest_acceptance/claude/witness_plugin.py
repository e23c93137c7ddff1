"""The witness: a pytest plugin the gate loads into a criterion's own pytest run.

The gate never imports this module. It copies this file into a private folder of its run
and has a criterion's pytest load it from there (``-p``), so neither the project nor the
interpreter the criterion uses supplies it. Standard library only, and no ``import pytest``:
it runs under whatever pytest the criterion starts.

It writes, into the folder named by ``ACCEPTANCE_WITNESS_RECORDS`` (a private folder of the
gate's, made fresh for each run), one file per pytest session, one JSON object per line:

- ``start`` when the session starts: the criterion (``PYTEST_ACCEPTANCE_CRITERION``);
- ``collected``: the node ids the session selected, and which carry a skip or xfail mark;
- ``finish`` at ``pytest_sessionfinish``: how each test ended, and pytest's exit status;
- ``modules`` at ``pytest_unconfigure``: the source file of every module imported by then
  (``rewritten``: those pytest's assertion rewriting loaded), which the gate compiles once
  for its runs (gate_bytecode.py).

A session cut short (``os._exit``, a kill, a crash) never writes ``finish``. The variable
is taken out of the environment when this module loads, before any of the project's code
runs: a pytest the tests start themselves, and xdist's workers, record nothing (the
controller hears every worker's reports).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

RECORDS_VARIABLE = "ACCEPTANCE_WITNESS_RECORDS"
PLUGINS_VARIABLE = "ACCEPTANCE_WITNESS_PLUGINS"
_RECORDS = os.environ.pop(RECORDS_VARIABLE, "")
_PLUGINS = os.environ.get(PLUGINS_VARIABLE, "")  # kept: xdist workers load plugins too
_CRITERION = os.environ.get("PYTEST_ACCEPTANCE_CRITERION", "")
_MARKS = ("skip", "skipif", "xfail")
# How a test ended, strongest last: a later phase never hides an earlier failure.
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 2, "error": 2}


def _only_pinned_distributions(listing: str) -> None:
    """Under the gate: the installed plugins pytest loads next (its ``pytest11`` entry points)
    come only from the distributions that provided them at /implement, listed one metadata
    folder a line in `listing`. A metadata folder written since, in the project (which is on
    ``sys.path``) or anywhere else, declares nothing. pytest loads entry points right after
    this module, the first ``-p`` of the run; the filter ends at the first hook after that."""
    import importlib.metadata as metadata

    try:
        with open(listing, encoding="utf-8") as stream:
            allowed = set(stream.read().splitlines())
    except OSError:
        allowed = set()
    every = metadata.distributions

    def pinned(**kwargs: Any) -> Any:
        for distribution in every(**kwargs):
            if str(getattr(distribution, "_path", "")) in allowed:
                yield distribution

    metadata.distributions = pinned
    _RESTORE.append(lambda: setattr(metadata, "distributions", every))


_RESTORE: list[Any] = []
if _PLUGINS:
    _only_pinned_distributions(_PLUGINS)


def pytest_load_initial_conftests(early_config: Any) -> None:
    while _RESTORE:
        _RESTORE.pop()()


# First among its peers (pluggy's own marker, written out: this module imports no pytest).
pytest_load_initial_conftests.pytest_impl = {  # type: ignore[attr-defined]
    "wrapper": False,
    "hookwrapper": False,
    "optionalhook": False,
    "tryfirst": True,
    "trylast": False,
    "specname": None,
}


def plugin_distributions(config: Any) -> list[str]:
    """The metadata folders of the installed plugins this session loaded."""
    found = set()
    for _, distribution in config.pluginmanager.list_plugin_distinfo():
        path = getattr(distribution, "_path", None)
        if path is not None:
            found.add(str(path))
    return sorted(found)


class _Session:
    def __init__(self, path: str) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)


_session: _Session | None = None


def pytest_sessionstart(session: Any) -> None:
    global _session
    if not _RECORDS or _session is not None or hasattr(session.config, "workerinput"):
        return
    name = f"{time.time_ns()}-{os.getpid()}.jsonl"
    _session = _Session(os.path.join(_RECORDS, name))
    _session.write({"event": "start", "criterion": _CRITERION})


def pytest_collection_finish(session: Any) -> None:
    if _session is None:
        return
    ids: list[str] = []
    marked: list[str] = []
    for item in session.items:
        ids.append(item.nodeid)
        if _carries_a_mark(item):
            marked.append(item.nodeid)
    _session.write({"event": "collected", "ids": ids, "marked": marked})


def _carries_a_mark(item: Any) -> bool:
    for name in _MARKS:
        if next(iter(item.iter_markers(name=name)), None) is not None:
            return True
    function = getattr(item, "obj", None)
    owner = getattr(item, "cls", None)
    return any(getattr(thing, "__unittest_skip__", False) for thing in (function, owner))


def pytest_runtest_logreport(report: Any) -> None:
    if _session is None:
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
    if _session is None:
        return
    _session.write({"event": "finish", "exitstatus": int(exitstatus), "tests": _session.outcomes})


def pytest_unconfigure(config: Any) -> None:
    """Last: plugins still import at the terminal summary (hypothesis does)."""
    if _session is None:
        return
    plain, rewritten = _module_sources()
    plugins = plugin_distributions(config)
    _session.write({"event": "modules", "plain": plain, "rewritten": rewritten, "plugins": plugins})


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
