"""The run's verdict in pytest's JUnit XML (``--junitxml``), as testsuite properties.

A CI dashboard that reads only JUnit sees the verdict, the exit code, the tree's
fingerprint, each spec's digest and each criterion that reported more than once (its
results, combined: verdict/combine.py). Testsuite-level properties are valid under
pytest's default ``junit_family`` (xunit2) as under xunit1; they are added the way
``record_testsuite_property`` adds them, through junitxml's public ``add_global_property``,
before junitxml writes the file at the end of the session.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_acceptance.text import display_path
from pytest_acceptance.verdict.combine import of as results_of
from pytest_acceptance.verdict.decision import RunFacts, Verdict

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
    ]
    for spec in facts.specs:
        found.append(("acceptance_spec", f"{spec.get('relative', spec['path'])} {_digest(spec)}"))
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
