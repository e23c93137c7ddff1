"""The run's verdict in pytest's JUnit XML (``--junitxml``), as testsuite properties.

A CI dashboard that reads only JUnit sees the verdict, the exit code, the tree's
fingerprint, each spec's digest and each criterion that reported more than once (its
results, combined: verdict/combine.py). Testsuite-level properties are valid under
pytest's default ``junit_family`` (xunit2) as under xunit1; they are added the way
``record_testsuite_property`` adds them, through junitxml's public ``add_global_property``,
before junitxml writes the file at the end of the session.
"""

from __future__ import annotations

import contextlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.text import display_path
from pytest_acceptance.tree.hostile import write_atomic
from pytest_acceptance.verdict.combine import of as results_of
from pytest_acceptance.verdict.decision import (
    RunFacts,
    Verdict,
    agent_line,
    agent_totals,
    scope_lines,
    sign_off_words,
)

LISTED = 1000  # criteria with several results named; a run of more says how many more


def add_properties(config: pytest.Config, verdict: Verdict, facts: RunFacts) -> None:
    """The verdict's testsuite properties, when ``--junitxml`` writes a file."""
    xml = junit_writer(config)
    if xml is None:
        return
    for name, value in properties(verdict, facts):
        xml.add_global_property(name, value)


def junit_writer(config: pytest.Config) -> Any:
    """junitxml's writer of this run (None without ``--junitxml``, and on xdist workers)."""
    for plugin in config.pluginmanager.get_plugins():
        if callable(getattr(plugin, "add_global_property", None)) and hasattr(plugin, "logfile"):
            return plugin
    return None


def properties(verdict: Verdict, facts: RunFacts) -> list[tuple[str, str]]:
    found = [
        ("acceptance_verdict", verdict.status.value),
        ("acceptance_exit_code", str(int(verdict.exit_code))),
        ("acceptance_fingerprint", facts.fingerprint),
        ("acceptance_scope", " ".join(scope_lines(verdict)).strip() or "complete"),
    ]
    for spec in facts.specs:
        found.append(("acceptance_spec", f"{spec.get('relative', spec['path'])} {_digest(spec)}"))
    if totals := agent_totals(verdict.outcomes):
        found.append(("acceptance_agent", agent_line(totals)))
    for outcome in verdict.outcomes:
        if signed := sign_off_words(outcome.result):
            where = display_path(outcome.criterion.location.path, facts.rootdir)
            found.append(("sign_off", f"{where}::{outcome.criterion.id}: {signed}"))
    several = [o for o in verdict.outcomes if o.result.results > 1]
    for outcome in several[:LISTED]:
        criterion, result = outcome.criterion, outcome.result
        where = display_path(criterion.location.path, facts.rootdir)
        words = f"{where}::{criterion.id}: {result.status.value}, {results_of(result)}"
        found.append(("acceptance_results", words))
    if len(several) > LISTED:
        found.append(("acceptance_results", f"… and {len(several) - LISTED} more criteria"))
    return found


def _digest(spec: dict[str, Any]) -> str:
    digest = spec.get("sha256")
    return f"sha256:{digest}" if digest else "sha256: unavailable (the spec could not be read)"


class JunitFile:
    """What junitxml writes by itself, made to agree with the terminal once it is written
    (the controller, or the only process):

    - a criterion that could not be verified (status ``error``, shown as ERROR by the
      terminal) is an ``<error>``, not a ``<failure>``, and the testsuite's ``errors`` and
      ``failures`` count them so;
    - under ``xunit2`` (pytest's default) a testcase may hold no ``<properties>``: the
      criteria's own (criterion, title, method, priority) are written only under xunit1,
      and the run's facts stand at testsuite level.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)  # after junitxml wrote the file
    def pytest_sessionfinish(self) -> None:
        xml = junit_writer(self.config)
        recorder = self.config.pluginmanager.get_plugin("acceptance-recorder")
        if xml is None or recorder is None or getattr(recorder, "verdict", None) is None:
            return
        names = {_testcase_name(nodeid) for nodeid in getattr(recorder, "criteria", {})}
        with contextlib.suppress(OSError, ET.ParseError):
            agree(Path(xml.logfile), names, xunit2=getattr(xml, "family", "") == "xunit2")


def agree(path: Path, criteria: set[tuple[str, str]], xunit2: bool) -> None:
    tree = ET.parse(path)
    changed = False
    for suite in tree.getroot().iter("testsuite"):
        for case in suite.iter("testcase"):
            if (case.get("classname", ""), case.get("name", "")) not in criteria:
                continue
            for failure in case.findall("failure"):
                if failure.get("message", "").rstrip().endswith("— error"):
                    failure.tag, changed = "error", True
            if xunit2:
                for found in case.findall("properties"):
                    case.remove(found)
                    changed = True
        suite.set("failures", str(sum(1 for _ in suite.iter("failure"))))
        suite.set("errors", str(sum(1 for _ in suite.iter("error"))))
    if changed:
        write_atomic(
            path,
            '<?xml version="1.0" encoding="utf-8"?>'
            + ET.tostring(tree.getroot(), encoding="unicode"),
        )


def _testcase_name(nodeid: str) -> tuple[str, str]:
    """(classname, name) as junitxml writes a node id (``mangle_test_address``)."""
    path, _, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".")
    names[0] = re.sub(r"\.py$", "", names[0])
    names[-1] += f"[{params}" if params else ""
    return ".".join(names[:-1]), names[-1]
