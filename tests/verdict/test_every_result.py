"""A criterion that reports more than once never loses a failure (verdict/combine.py).

Each time pytest reports an outcome of a criterion is a result: one per worker under
``--dist each``, one per repetition of its item, one per shard of a merge
(tests/verdict/test_shards.py). Results combine by one rule, whatever order they arrive
in: any failed result fails the criterion. Retries and pytest-rerunfailures' reruns are
attempts of one result: a pass after a failed attempt is flaky. Every output counts the
results. The rule is tested in-process over any results in any order; the runs are real
(xdist in subprocesses)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import spec_dir
from pytest_acceptance.model import Result, Status
from pytest_acceptance.verdict.combine import combined

INI = "[pytest]\nacceptance_retries = 0\n"
# Passes the first time anywhere in the run, fails every time after: one result each way.
FIRST_ONLY = "mkdir once"
# Fails the first time anywhere in the run, passes every time after.
FIRST_FAILS = "test -e marker || { touch marker; exit 1; }"
# A plugin that runs every item twice (as repeating plugins do): two results of one item.
TWICE = (
    "def pytest_collection_modifyitems(items):\n    items[:] = [i for i in items for _ in (1, 2)]\n"
)

RESULTS = st.lists(st.sampled_from(list(Status)), min_size=1, max_size=6).map(
    lambda statuses: [Result(status, message=status.value) for status in statuses]
)


@given(RESULTS, st.randoms())
def test_any_failed_result_fails_the_criterion_in_any_order(
    results: list[Result], random: Any
) -> None:
    shuffled = results[:]
    random.shuffle(shuffled)
    sources = [f"gw{n}" for n in range(len(results))]
    one, other = combined(results, sources), combined(shuffled, sources)
    assert one.status is other.status
    assert one.results == len(results)
    statuses = {result.status for result in results}
    if Status.FAILED in statuses:
        assert one.status is Status.FAILED
    if one.status.passed:
        assert statuses <= {Status.PASSED, Status.FLAKY}
        assert (one.status is Status.FLAKY) == (Status.FLAKY in statuses)


def test_combined_results_are_counted_and_named() -> None:
    """Named in the order of their sources (gw0 before gw1), not of arrival."""
    passed = Result(Status.PASSED, output="fine")
    failed = Result(Status.FAILED, output="broke", message="expected exit code 0")
    one = combined([passed, failed], ["gw1", "gw0"])
    assert (one.status, one.results, one.attempts) == (Status.FAILED, 2, 2)
    assert one.message == "expected exit code 0 (2 results: gw0 failed, gw1 passed)"
    assert one.output == "--- gw0: failed ---\nbroke\n--- gw1: passed ---\nfine"


def verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def criteria(pytester: pytest.Pytester) -> dict[str, tuple[str, int]]:
    return {c["id"]: (c["status"], c["results"]) for c in verdict(pytester)["criteria"]}


def test_dist_each_with_one_worker_failing_fails_the_run_in_every_output(
    pytester: pytest.Pytester,
) -> None:
    """Under ``--dist each`` both workers run AC-1; the second to run it fails. pytest says
    one failed: the verdict fails (exit 1) and the terminal, report.md, report.json,
    verdict.json, JUnit and HTML all count two results."""
    pytester.makeini(INI)
    pytester.makefile(".md", spec=spec(bash("AC-1", FIRST_ONLY), bash("AC-2", "true")))
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-n", "2", "--dist", "each",
        "--junitxml", "j.xml", "--acceptance-html", "r.html",
    )  # fmt: skip
    output = result.stdout.str()
    assert result.ret == 1, output
    assert "verdict: FAIL (exit code 1)" in output
    assert criteria(pytester) == {"AC-1": ("failed", 2), "AC-2": ("passed", 2)}
    assert "2 results: gw0 " in output and "AC-2: ac-2 ✓ (2 results" in output
    folder = spec_dir(pytester.path, pytester.path / "spec.md")
    assert "| failed (2 results) |" in (folder / "report.md").read_text()
    report = json.loads((folder / "report.json").read_text())
    assert [c["results"] for c in report["criteria"]] == [2, 2]
    assert "<dt>Results</dt><dd>2 results: gw0" in (pytester.path / "r.html").read_text()
    properties = junit_properties(pytester)
    assert ("acceptance_verdict", "fail") in properties
    assert any(
        name == "acceptance_results" and value.startswith("spec.md::AC-1: failed, 2 results")
        for name, value in properties
    ), properties


def junit_properties(pytester: pytest.Pytester) -> list[tuple[str, str]]:
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None
    return [(p.get("name", ""), p.get("value", "")) for p in suite.iter("property")]


def test_a_repeating_plugin_that_runs_an_item_twice_keeps_both_results(
    pytester: pytest.Pytester,
) -> None:
    """Written after the fix: a plugin runs each item twice in one process. AC-1 fails the
    first time and passes the second; that is two results, not a rerun: it fails."""
    pytester.makeini(INI)
    pytester.makeconftest(TWICE)
    pytester.makefile(".md", spec=spec(bash("AC-1", FIRST_FAILS), bash("AC-2", "true")))
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == 1, result.stdout.str()
    assert criteria(pytester) == {"AC-1": ("failed", 2), "AC-2": ("passed", 2)}
    result.stdout.fnmatch_lines(["*1 failed, 3 passed*"])


def test_control_a_rerun_that_passes_is_one_flaky_result(pytester: pytest.Pytester) -> None:
    """The same criterion under pytest-rerunfailures: the rerun is an attempt, so it
    passes as flaky, one result of two attempts (pytest says 1 passed, 1 rerun)."""
    pytester.makeini(INI)
    pytester.makefile(".md", spec=spec(bash("AC-1", FIRST_FAILS)))
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "rerunfailures", "--reruns", "1")
    assert result.ret == 0, result.stdout.str()
    (entry,) = verdict(pytester)["criteria"]
    assert (entry["status"], entry["attempts"], entry["results"]) == ("flaky", 2, 1)


@pytest.mark.parametrize(
    ("command", "status", "code"),
    [(FIRST_ONLY, "failed", 1), (FIRST_FAILS, "flaky", 0)],
    ids=["a-worker-fails-every-rerun", "a-worker-passes-on-its-rerun"],
)
def test_reruns_under_dist_each_combine_each_workers_result(
    pytester: pytest.Pytester, command: str, status: str, code: int
) -> None:
    """Written after the fix: pytest-rerunfailures' reruns on each of two ``--dist each``
    workers. A worker whose every rerun fails fails the criterion, whatever the other
    worker found; a worker that passed on its rerun makes it flaky (a pass, never hidden)."""
    pytester.makeini(INI)
    pytester.makefile(".md", spec=spec(bash("AC-1", command)))
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-n", "2", "--dist", "each", "-p", "rerunfailures",
        "--reruns", "1",
    )  # fmt: skip
    assert result.ret == code, result.stdout.str()
    assert criteria(pytester) == {"AC-1": (status, 2)}
