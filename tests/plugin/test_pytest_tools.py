"""pytest's own tools on criteria, with the real plugins loaded (``-p``): the cache's
``--lf``, ``--ff``, ``--sw`` and ``--nf``, pytest-rerunfailures, pytest-timeout and
pytest-randomly.

- ``--lf`` and ``--sw`` are selections: partial when partial, said so, and a fixed ``--lf``
  run passes (exit code 0, never "verified"); ``--ff`` and ``--nf`` change nothing but the
  order the criteria run in.
- A rerun is more attempts of the criterion: a pass on a rerun is flaky, never a plain
  pass, and every run's evidence is kept.
- pytest-timeout's cut is one line naming it, with the criterion's processes killed.
- pytest-randomly's shuffle leaves criteria in spec order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.processes import kill_all, wait_gone
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import evidence_path, read_evidence

VERIFIED = "*: verified.*"


def verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def statuses(pytester: pytest.Pytester) -> dict[str, str]:
    return {c["id"]: c["status"] for c in verdict(pytester)["criteria"]}


def fragment(pytester: pytest.Pytester, ident: str) -> dict[str, Any]:
    """The criterion's evidence: the last of its lines (a rerun appends one per run)."""
    path = evidence_path(pytester.path, pytester.path / "spec.md")
    return [fragment for _, fragment in read_evidence(path) if fragment["id"] == ident][-1]


# --- the cache's selections ------------------------------------------------------------------

FIXABLE = spec(
    bash("AC-1", "true"),
    bash("AC-2", "test -e fixed", retries=0),
    bash("AC-3", "true"),
)


def test_lf_after_a_failure_runs_the_failure_only_and_says_the_run_was_partial(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=FIXABLE)
    assert pytester.runpytest("--acceptance", "spec.md").ret == 1
    result = pytester.runpytest("--acceptance", "spec.md", "--lf")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["1 of 3 criteria selected: not a verification of the spec."])
    assert statuses(pytester) == {"AC-2": "failed"}  # no "not run" for what --lf left out
    assert verdict(pytester)["complete"] is False


def test_lf_after_the_fix_passes_and_is_still_not_a_verification(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=FIXABLE)
    pytester.runpytest("--acceptance", "spec.md")
    (pytester.path / "fixed").touch()
    result = pytester.runpytest("--acceptance", "spec.md", "--lf")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "1 of 3 criteria selected: not a verification of the spec.",
            "1 selected criterion passes, but this run was partial: the spec is not verified.*",
        ]
    )
    result.stdout.no_fnmatch_line(VERIFIED)
    written = verdict(pytester)
    assert (written["status"], written["exit_code"], written["complete"]) == ("pass", 0, False)
    assert pytester.runpytest("--acceptance", "spec.md").ret == 0  # the whole spec: verified


def test_sw_continues_from_the_failure_as_a_partial_run(pytester: pytest.Pytester) -> None:
    """--sw stops at the failure (the rest not run), then starts from it after the fix,
    leaving out what passed before it: partial both times."""
    pytester.makefile(".md", spec=FIXABLE)
    first = pytester.runpytest("--acceptance", "spec.md", "--sw")
    assert first.ret == 1
    assert statuses(pytester) == {"AC-1": "passed", "AC-2": "failed", "AC-3": "not_run"}
    (pytester.path / "fixed").touch()
    second = pytester.runpytest("--acceptance", "spec.md", "--sw")
    assert second.ret == 0
    second.stdout.fnmatch_lines(["2 of 3 criteria selected: not a verification of the spec."])
    second.stdout.no_fnmatch_line(VERIFIED)
    assert statuses(pytester) == {"AC-2": "passed", "AC-3": "passed"}


@pytest.mark.parametrize("option", ["--ff", "--nf"])
def test_ff_and_nf_reorder_a_complete_run_and_the_verdict_reads_in_spec_order(
    pytester: pytest.Pytester, option: str
) -> None:
    pytester.makefile(".md", spec=FIXABLE)
    pytester.runpytest("--acceptance", "spec.md")
    (pytester.path / "fixed").touch()
    result = pytester.runpytest("--acceptance", "spec.md", option, "-v")
    assert result.ret == 0
    if option == "--ff":  # the last failure ran first
        ran = [line.split()[0] for line in result.stdout.lines if " PASSED" in line]
        assert ran[0] == "spec.md::AC-2", ran
    result.stdout.fnmatch_lines(["All 3 criteria pass: verified."])
    written = verdict(pytester)
    assert written["complete"] is True
    assert [c["id"] for c in written["criteria"]] == ["AC-1", "AC-2", "AC-3"]


# --- pytest-rerunfailures ----------------------------------------------------------------------

# Fails on its first two runs (a counter in a file), passes on the third.
THIRD_TIME = (
    'n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; echo "run $n"; test "$n" -ge 2'
)


def test_a_criterion_that_passes_on_a_rerun_is_flaky_with_every_runs_evidence(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", THIRD_TIME, retries=0)))
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "rerunfailures", "--reruns", "2")
    assert result.ret == 0
    (criterion,) = verdict(pytester)["criteria"]
    assert (criterion["status"], criterion["attempts"]) == ("flaky", 3)
    assert criterion["message"].startswith("flaky: passed on run 3 (pytest-rerunfailures)")
    assert "run 1 failed" in criterion["message"] and "run 2 failed" in criterion["message"]
    for number, output in enumerate(["run 0", "run 1", "run 2"], 1):
        assert f"--- run {number} of 3" in criterion["output"]
        assert output in criterion["output"]
    assert fragment(pytester, "AC-1")["output"] == criterion["output"]
    result.stdout.fnmatch_lines(["*AC-1*(flaky: passed after 2 failed attempts)*"])


def test_reruns_add_to_the_criterions_own_retries(pytester: pytest.Pytester) -> None:
    """A criterion that always fails, 1 retry of its own, 2 reruns: 3 runs of 2 attempts."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "echo nope; exit 1", retries=1)))
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "rerunfailures", "--reruns", "2")
    assert result.ret == 1
    (criterion,) = verdict(pytester)["criteria"]
    assert (criterion["status"], criterion["attempts"]) == ("failed", 6)
    assert "pytest-rerunfailures ran it 3 times" in criterion["message"]
    result.stdout.fnmatch_lines(["*1 failed, 2 rerun*"])


def test_reruns_under_xdist_workers_are_flaky_too(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", THIRD_TIME, retries=0), bash("AC-2", "true")))
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-p", "rerunfailures", "--reruns", "2", "-n", "2"
    )
    assert result.ret == 0, result.stdout.str()
    assert statuses(pytester) == {"AC-1": "flaky", "AC-2": "passed"}


# --- pytest-timeout --------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["signal", "thread"])
def test_pytest_timeout_cuts_a_criterion_in_one_line_and_kills_its_processes(
    pytester: pytest.Pytester, method: str
) -> None:
    """Either method: no stack dump, no traceback, the run goes on to its verdict (the
    thread method would end the whole process)."""
    pytester.makefile(
        ".md",
        spec=spec(bash("AC-1", "sleep 300 & echo $! > pids; sleep 300"), bash("AC-2", "true")),
    )
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "-p", "timeout", "--timeout", "1", "--timeout-method", method
    )
    pids = [int(pid) for pid in (pytester.path / "pids").read_text().split()]
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert survivors == []
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "Timeout +++" not in output and "Stack of" not in output
    assert result.ret == 1, output
    cut = "timed out: cut by pytest-timeout's timeout of 1 s (process group killed)"
    result.stdout.fnmatch_lines([f"  Actual: {cut}; no output"])
    assert statuses(pytester) == {"AC-1": "failed", "AC-2": "passed"}


def test_pytest_timeouts_budget_covers_every_attempt_of_a_run(pytester: pytest.Pytester) -> None:
    """Five retries of a 1 s timeout each, under a 2 s budget: the attempts stop once the
    budget is spent (the last one cut by it), not after six."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "sleep 30", timeout=1, retries=5)))
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "timeout", "--timeout", "2")
    assert result.ret == 1
    (criterion,) = verdict(pytester)["criteria"]
    assert criterion["attempts"] < 6
    assert "cut by pytest-timeout's timeout of 2 s" in criterion["message"]


def test_pytest_timeout_keeps_its_own_timer_for_other_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    pytester.makepyfile(test_slow="import time\ndef test_slow():\n    time.sleep(30)\n")
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "test_slow.py", "-p", "timeout", "--timeout", "1"
    )
    result.stdout.fnmatch_lines(["*Failed: Timeout (>1.0s) from pytest-timeout.*"])
    assert statuses(pytester) == {"AC-1": "passed"}


# --- pytest-randomly ---------------------------------------------------------------------------

# Each step needs the one before it: out of spec order, a step fails.
STEPS = spec(
    *(bash(f"AC-{n}", f"test -e step-{n - 1} && touch step-{n}", retries=0) for n in range(1, 9))
)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pytest_randomly_leaves_criteria_in_spec_order(
    pytester: pytest.Pytester, seed: int
) -> None:
    pytester.makefile(".md", spec=STEPS)
    (pytester.path / "step-0").touch()
    result = pytester.runpytest(
        "--acceptance", "spec.md", "-p", "randomly", f"--randomly-seed={seed}", "-v"
    )
    result.stdout.fnmatch_lines([f"Using --randomly-seed={seed}"])
    assert result.ret == 0, result.stdout.str()
    ran = [line.split()[0] for line in result.stdout.lines if " PASSED" in line]
    assert ran == [f"spec.md::AC-{n}" for n in range(1, 9)]


def test_pytest_randomly_still_shuffles_the_projects_other_tests(
    pytester: pytest.Pytester,
) -> None:
    """Only criteria go back to their order: a shuffle of 12 tests that left them in place
    for every one of 4 seeds would be a shuffle undone."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    pytester.makepyfile(**{f"test_{n:02d}": f"def test_{n:02d}():\n    pass\n" for n in range(12)})
    orders = set()
    for seed in range(1, 5):
        result = pytester.runpytest(
            "--acceptance", "spec.md", ".", "-p", "randomly", f"--randomly-seed={seed}", "-v"
        )
        orders.add(tuple(line.split()[0] for line in result.stdout.lines if " PASSED" in line))
    assert len(orders) > 1
