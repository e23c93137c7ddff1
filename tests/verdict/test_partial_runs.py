"""Partial runs are honest: a subset of the criteria (-k, -m, node ids, --lf) says so and is
never "verified"; it never becomes the baseline of the deltas; -x stops the same way with and
without xdist workers, and the criteria it never reached are "not run", never verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.specs import bash, manual, spec

VERIFIED = "*verified. /done may follow*"


def write_spec(pytester: pytest.Pytester, *blocks: str) -> None:
    pytester.makefile(".md", spec=spec(*blocks))


def spec_dir(pytester: pytest.Pytester) -> Path:
    (directory,) = (pytester.path / ".acceptance" / "specs").iterdir()
    return directory


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return load(pytester.path / ".acceptance" / "verdict.json")


def test_a_k_selection_that_passes_says_it_is_not_a_verification(
    pytester: pytest.Pytester,
) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", "false"), bash("AC-3", "true"))
    result = pytester.runpytest("--acceptance", "spec.md", "-k", "AC-1")
    assert result.ret == 0  # the selection passed, as pytest users expect of -k
    result.stdout.fnmatch_lines(
        [
            "## Verification Results",
            "1 of 3 criteria selected: not a verification of the spec.",
            "1 selected criterion passes, but this run was partial: the spec is not verified.*",
        ]
    )
    result.stdout.no_fnmatch_line(VERIFIED)
    written = verdict(pytester)
    assert (written["status"], written["complete"]) == ("pass", False)


def test_a_partial_selection_waiting_for_a_human_does_not_say_escalate(
    pytester: pytest.Pytester,
) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", "false"), manual("AC-3"))
    result = pytester.runpytest("--acceptance", "spec.md", "-m", "manual")
    assert result.ret == 10
    result.stdout.fnmatch_lines(["1 of 3 criteria selected: not a verification of the spec."])
    result.stdout.fnmatch_lines(["1 needs a human, but this run was partial*"])
    result.stdout.no_fnmatch_line("*Call /escalate*")


@pytest.mark.parametrize(
    "selection",
    [["-k", "AC-1"], ["spec.md::AC-1"], ["-m", "not manual"], ["--lf"]],
    ids=["-k", "node id", "-m", "--lf"],
)
def test_only_a_complete_run_becomes_the_baseline_of_the_deltas(
    pytester: pytest.Pytester, selection: list[str]
) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", "false"), manual("AC-3"))
    assert pytester.runpytest("--acceptance", "spec.md").ret == 1
    baseline = (spec_dir(pytester) / "baseline.json").read_text()
    partial = pytester.runpytest("--acceptance", "spec.md", *selection)
    assert verdict(pytester)["complete"] is False, partial.stdout.str()
    report = load(spec_dir(pytester) / "report.json")
    assert report["complete"] is False  # the partial run's own report, marked as such
    assert (spec_dir(pytester) / "baseline.json").read_text() == baseline
    assert (
        "This run was partial: the baseline stays as it was."
        in (spec_dir(pytester) / "report.md").read_text()
    )
    again = pytester.runpytest("--acceptance", "spec.md")
    again.stdout.fnmatch_lines(["  since the previous report: still open 1 (AC-2)"])
    resolutions = load(spec_dir(pytester) / "report.json")["resolutions"]
    assert (resolutions["new"], resolutions["unchanged"]) == ([], ["AC-1"])
    assert (spec_dir(pytester) / "baseline.json").read_text() != baseline  # a complete run


def stop_at_first(
    pytester: pytest.Pytester, *workers: str, later: str = "sleep 1"
) -> pytest.RunResult:
    """AC-2 fails; the six after it take long enough to be still running at the stop."""
    write_spec(
        pytester,
        bash("AC-1", "true"),
        bash("AC-2", "echo broken; exit 1", retries=0),
        *[bash(f"AC-{n}", later) for n in range(3, 9)],
    )
    return pytester.runpytest_subprocess("--acceptance", "spec.md", "-x", *workers)


@pytest.mark.parametrize("workers", [["-n", "0"], ["-n", "2"]], ids=["no workers", "2 workers"])
def test_x_stops_the_same_way_with_and_without_workers_and_never_verifies_what_it_skipped(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    result = stop_at_first(pytester, *workers)
    assert result.ret == 1  # a failure stopped the run: the failure's exit code, not 2
    written = verdict(pytester)
    assert (written["status"], written["exit_code"], written["complete"]) == ("fail", 1, False)
    statuses = {c["id"]: c["status"] for c in written["criteria"]}
    assert statuses["AC-2"] == "failed"
    not_run = [ident for ident, status in statuses.items() if status == "not_run"]
    assert not_run and written["counts"]["not_run"] == len(not_run)
    assert written["counts"]["error"] == 0  # not run is unknown, not an error
    result.stdout.fnmatch_lines(
        [
            f"{len(not_run)} of 8 selected criteria not run (the run stopped after 1 "
            "failure(s): -x/--maxfail): nothing is known about them.",
            f"### Not run ({len(not_run)})",
        ]
    )
    report = load(spec_dir(pytester) / "report.json")
    assert report["complete"] is False and report["not_run"] == len(not_run)
    ran = 8 - len(not_run)
    assert (
        f"8 of 8 criteria selected, {ran} ran, {len(not_run)} not run: a partial run"
        in (spec_dir(pytester) / "report.md").read_text()
    )
    assert not (spec_dir(pytester) / "baseline.json").exists()
    assert {c["id"] for c in report["criteria"] if c["gap"]} == {"AC-2"}


def test_x_after_a_complete_run_lists_the_skipped_criteria_as_not_run_not_as_deltas(
    pytester: pytest.Pytester,
) -> None:
    stop_at_first(pytester, "-n", "0", later="true")
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "0")
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-x", "-n", "0")
    result.stdout.fnmatch_lines(
        [
            "  since the previous report: still open 1 (AC-2); "
            "not run 6 (AC-3, AC-4, AC-5, AC-6, AC-7, AC-8)"
        ]
    )
    resolutions = load(spec_dir(pytester) / "report.json")["resolutions"]
    assert resolutions["regressed"] == resolutions["fixed"] == resolutions["new"] == []
