"""Extension hooks of pytest-acceptance (registered through ``pytest_addhooks``).

A plugin adds a verification method, a judge for natural-language pass conditions, or a
spec format, by implementing these instead of by a pile of settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_acceptance.model import Criterion, Result, RunContext
    from pytest_acceptance.spec.formats import SpecFormat
    from pytest_acceptance.verdict.decision import RunFacts, Verdict


@pytest.hookspec(firstresult=True)
def pytest_acceptance_run(criterion: Criterion, context: RunContext) -> Result | None:
    """Run one criterion and return its result, or None if its method is not yours.

    Built in: ``bash`` (pytest_acceptance.run.bash) and ``subagent``
    (pytest_acceptance.agent.verifier). ``manual`` criteria never reach this hook.
    """


@pytest.hookspec(firstresult=True)
def pytest_acceptance_judge(
    criterion: Criterion, context: RunContext, evidence: str
) -> Result | None:
    """Judge a bash criterion whose ``pass_condition`` asks for a judge (``judge: ...``).

    ``evidence`` holds the command, its exit code and a bounded excerpt of its output.
    Return None when no judge (agent) is available; the criterion then ends as an error.
    """


@pytest.hookspec
def pytest_acceptance_result(config: pytest.Config, criterion: Criterion, result: Result) -> None:
    """Called on the controller (or the only process) as each criterion's result arrives,
    wherever it ran: an xdist worker sends it back in its test report. The evidence trail
    writes the criterion's fragment here, so the controller is the only process that writes
    evidence and a worker on another machine needs no disk in common with it."""


@pytest.hookspec
def pytest_acceptance_verdict(
    config: pytest.Config, verdict: Verdict, facts: RunFacts
) -> list[str] | None:
    """Called once per run on the controller (or the only process) after the verdict is
    decided and before verdict.json is written: reports, deltas and CI annotations.

    Return problems that forbid a pass (e.g. evidence that could not be assembled): the
    verdict is decided again with them. ``facts.extra`` entries land in verdict.json."""


@pytest.hookspec
def pytest_acceptance_formats() -> list[SpecFormat] | None:
    """Return spec formats to read (``pytest_acceptance.spec.formats.SpecFormat``): objects with
    ``name``, ``detect(text) -> float`` (0: not this format; up to 1: unmistakable) and
    ``parse(text, path) -> Spec`` (raising only ``SpecError``). Called once per process;
    the format that detects a spec best parses it, a plugin's formats winning ties over the
    built-in ones, and ``--acceptance-format NAME`` forces one."""
