"""One verdict per run, computed on the controller: failures only / manual pending / pass,
each with its own exit code and a machine-readable verdict.json."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from support.specs import bash, manual, spec

from pytest_acceptance.tree.fingerprint import tree_fingerprint


@pytest.fixture(autouse=True)
def agent_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's verdict words are for the agent: these runs are tool calls of a Claude
    Code session (test_words.py covers what a person reads)."""
    monkeypatch.setenv("CLAUDECODE", "1")


def verdict_json(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def run(pytester: pytest.Pytester, text: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".md", spec=text)
    return pytester.runpytest("--acceptance", "spec.md", *args)


def test_all_pass_is_verified_and_exits_0(pytester: pytest.Pytester) -> None:
    result = run(pytester, spec(bash("AC-1", "true", "one"), bash("AC-2", "echo ok", "two")))
    result.stdout.fnmatch_lines(
        [
            "## Verification Results",
            "### Passed (2)",
            "- AC-1: one ✓",
            "- AC-2: two ✓",
            "All 2 criteria pass: verified. /done may follow.",
            "verdict: PASS (exit code 0)*",
        ]
    )
    assert result.ret == 0
    verdict = verdict_json(pytester)
    assert verdict["status"] == "pass" and verdict["exit_code"] == 0
    assert verdict["complete"] is True
    assert verdict["counts"]["passed"] == 2
    spec_file = (pytester.path / "spec.md").resolve()
    assert verdict["specs"] == [
        {
            "path": str(spec_file),
            "criteria_total": 2,
            "selected": 2,
            "relative": "spec.md",
            "sha256": hashlib.sha256(spec_file.read_bytes()).hexdigest(),
        }
    ]
    assert verdict["shard"] is None


def test_failures_are_listed_alone_and_manual_criteria_never_mentioned(
    pytester: pytest.Pytester,
) -> None:
    text = spec(
        bash("AC-1", "true", "fine"),
        bash("AC-2", "echo 'sent'; exit 1", "queues notifications", retries=0),
        manual("AC-3", "secret-manual-title"),
    )
    result = run(pytester, text)
    result.stdout.fnmatch_lines(
        [
            "## Verification Results",
            "### Failed (1)",
            "- AC-2: queues notifications",
            "  Method: bash `echo 'sent'; exit 1`",
            "  Location: spec.md:*",
            "  Expected: exit code 0",
            "  Actual: exit code 1*",
            "### Passed (1)",
            "- AC-1: fine ✓",
            "Continue working on failed criteria, then call /verify again.",
        ]
    )
    out = result.stdout.str()
    assert "AC-3" not in out and "secret-manual-title" not in out
    assert "Manual" not in out and "manual" not in result.stdout.lines[-1]
    assert result.ret == 1
    assert verdict_json(pytester)["status"] == "fail"


def test_all_automated_pass_with_manual_left_says_escalate_and_exits_10(
    pytester: pytest.Pytester,
) -> None:
    text = spec(bash("AC-1", "true", "fine"), manual("AC-2", "looks right", checks=["UI ok"]))
    result = run(pytester, text)
    result.stdout.fnmatch_lines(
        [
            "### Passed (1)",
            "### Manual verification required (1)",
            "- AC-2: looks right",
            "  Location: spec.md:*",
            "  Check: UI ok",
            "1 automated criterion passes; 1 needs a human. Call /escalate*",
            "*1 passed*1 manual*",  # pytest may add "N warnings" in between
        ]
    )
    assert result.ret == 10
    verdict = verdict_json(pytester)
    assert verdict["status"] == "manual"
    assert [c["status"] for c in verdict["criteria"]] == ["passed", "manual"]


def test_a_pass_after_a_failed_attempt_is_reported_flaky_not_hidden(
    pytester: pytest.Pytester,
) -> None:
    flaky = "test -f once || { touch once; exit 1; }"
    result = run(pytester, spec(bash("AC-1", flaky, "eventually")), "-v")
    result.stdout.fnmatch_lines(
        [
            "*AC-1 eventually [[]bash[]] FLAKY*",
            "- AC-1: eventually ✓ (flaky: passed after 1 failed attempt)",
        ]
    )
    result.stdout.fnmatch_lines(["*1 flaky*"])
    assert result.ret == 0
    assert verdict_json(pytester)["criteria"][0]["status"] == "flaky"


def test_a_partial_selection_is_not_a_complete_verdict(pytester: pytest.Pytester) -> None:
    run(pytester, spec(bash("AC-1", "true"), bash("AC-2", "true")), "-k", "AC-1")
    verdict = verdict_json(pytester)
    assert verdict["status"] == "pass" and verdict["complete"] is False
    assert verdict["specs"][0]["selected"] == 1


def test_selecting_nothing_is_pytests_exit_5_and_an_error_verdict(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, spec(bash("AC-1", "true")), "-k", "nothing-matches")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert verdict_json(pytester)["status"] == "error"


def test_verdict_records_the_tree_it_was_computed_on(pytester: pytest.Pytester) -> None:
    pytester.run("git", "init", "-q")
    run(pytester, spec(bash("AC-1", "true")))
    verdict = verdict_json(pytester)
    assert verdict["fingerprint"] == verdict["fingerprint_after"] == tree_fingerprint(pytester.path)
    assert verdict["started_at_epoch"] <= verdict["finished_at_epoch"]
    (pytester.path / "new.txt").write_text("change")
    assert tree_fingerprint(pytester.path) != verdict["fingerprint"]


def test_verdict_directory_ignores_itself_in_git(pytester: pytest.Pytester) -> None:
    pytester.run("git", "init", "-q")
    run(pytester, spec(bash("AC-1", "true")))
    status = pytester.run("git", "status", "--porcelain", "--untracked-files=all")
    assert ".acceptance" not in status.stdout.str()


def test_collect_only_removes_the_previous_verdict_and_writes_none(
    pytester: pytest.Pytester,
) -> None:
    """A --collect-only run verifies nothing: the earlier run's pass must not read as the
    last run's verdict."""
    run(pytester, spec(bash("AC-1", "true")))
    assert (pytester.path / ".acceptance" / "verdict.json").exists()
    assert pytester.runpytest("--acceptance", "spec.md", "--co").ret == 0
    assert not (pytester.path / ".acceptance" / "verdict.json").exists()


# --- under xdist: real workers, the verdict computed once on the controller ----------------


def run_xdist(pytester: pytest.Pytester, text: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".md", spec=text)
    return pytester.runpytest_subprocess("--acceptance", "spec.md", *args)


def test_verdict_under_two_workers_is_computed_once(pytester: pytest.Pytester) -> None:
    blocks = [bash(f"AC-{n}", "true") for n in range(1, 7)] + [bash("AC-7", "exit 1")]
    result = run_xdist(pytester, spec(*blocks), "-n", "2")
    out = result.stdout.str()
    assert out.count("## Verification Results") == 1
    result.stdout.fnmatch_lines(["### Failed (1)", "- AC-7: ac-7", "### Passed (6)"])
    assert result.ret == 1
    assert verdict_json(pytester)["counts"] == {
        "passed": 6,
        "flaky": 0,
        "failed": 1,
        "error": 0,
        "manual": 0,
        "unticked": 0,
        "not_run": 0,
    }


def test_a_criterion_whose_worker_crashed_is_an_error_never_a_pass(
    pytester: pytest.Pytester,
) -> None:
    text = spec(bash("AC-1", "true"), bash("AC-2", "kill -9 $PPID", "crashes its worker"))
    result = run_xdist(pytester, text, "-n", "2")
    result.stdout.fnmatch_lines(["### Errors (1)", "- AC-2: crashes its worker", "*crash*"])
    assert result.ret == 11
    statuses = {c["id"]: c["status"] for c in verdict_json(pytester)["criteria"]}
    assert statuses == {"AC-1": "passed", "AC-2": "error"}


def test_criteria_that_never_ran_after_a_crash_are_not_run_and_the_verdict_an_error(
    pytester: pytest.Pytester,
) -> None:
    blocks = [bash("AC-1", "kill -9 $PPID")] + [bash(f"AC-{n}", "true") for n in range(2, 5)]
    result = run_xdist(pytester, spec(*blocks), "-n", "1", "--max-worker-restart", "0")
    verdict = verdict_json(pytester)
    assert verdict["status"] == "error" and result.ret != 0 and verdict["complete"] is False
    statuses = {c["id"]: c["status"] for c in verdict["criteria"]}
    assert statuses == {"AC-1": "error", "AC-2": "not_run", "AC-3": "not_run", "AC-4": "not_run"}
    assert "a crashed worker" in verdict["criteria"][1]["message"]


def test_exit_code_4_for_usage_errors_keeps_pytests_meaning(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--acceptance", str(Path("missing.md")))
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_paths_beside_the_project_are_shown_relative_to_the_rootdir(tmp_path: Path) -> None:
    from pytest_acceptance.text import display_path

    root = tmp_path / "project"
    root.mkdir()
    assert display_path(root / "specs" / "a.md", root) == "specs/a.md"
    assert display_path(tmp_path / "elsewhere" / "seed.txt", root) == "../elsewhere/seed.txt"


def test_the_verdict_line_names_the_file_written_and_the_one_a_run_forgets(
    pytester: pytest.Pytester,
) -> None:
    """One path (store.verdict_path) for the file written, the file the terminal names and
    the stale verdict a new run removes first (a collect-only run too)."""
    from pytest_acceptance.store import verdict_path

    target = verdict_path(pytester.path)
    assert target == pytester.path / ".acceptance" / "verdict.json"
    result = run(pytester, spec(bash("AC-1", "true")))
    # Shown relative to the rootdir, as every path of the output.
    written = "verdict: PASS (exit code 0), written to .acceptance/verdict.json"
    result.stdout.fnmatch_lines([written])
    assert json.loads(target.read_text())["status"] == "pass"
    assert (target.parent / ".gitignore").is_file()
    target.write_text("stale")
    pytester.runpytest("--acceptance", "spec.md", "--collect-only")
    assert not target.exists()
    target.write_text("stale")
    pytester.runpytest("--acceptance", "spec.md", "-k", "nothing-selected")
    assert not target.exists() or target.read_text() != "stale"
