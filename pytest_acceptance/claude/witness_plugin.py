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
_RECORDS = os.environ.pop(RECORDS_VARIABLE, "")
_CRITERION = os.environ.get("PYTEST_ACCEPTANCE_CRITERION", "")
_MARKS = ("skip", "skipif", "xfail")
# How a test ended, strongest last: a later phase never hides an earlier failure.
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 2, "error": 2}


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
    _session.write({"event": "modules", "plain": plain, "rewritten": rewritten})


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
