"""What CI gets besides the terminal, through real runs: the GitHub step summary (appended),
::error for MUST and ::warning for SHOULD/COULD/WONT failures, a ::notice for a partial run,
and JUnit failures whose message is the first line (the whole text in the body)."""

from __future__ import annotations

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.runs import BASE
from support.specs import bash, manual, spec

from pytest_acceptance.evidence.ci import CELL_CHARS, md

HOSTILE_TITLE = "pipes | and <script>alert(1)</script>"


@dataclass(frozen=True)
class CiRun:
    root: Path
    returncode: int
    lines: list[str]


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> CiRun:
    """One run (shared by the tests below) under two xdist workers, as on GitHub Actions,
    with a step summary file that an earlier step already wrote to."""
    root = tmp_path_factory.mktemp("ci")
    (root / "pyproject.toml").write_text("")
    (root / "summary.md").write_text("earlier step\n")
    (root / "spec.md").write_text(
        spec(
            bash("AC-1", "true"),
            bash("AC-2", "echo out; exit 1", "must fail", retries=0),
            bash("AC-3", "exit 1", HOSTILE_TITLE, priority="SHOULD", retries=0),
            bash("AC-4", "exit 1", "could fail", priority="COULD", retries=0),
            bash("AC-5", "exit 1", "wont fail", priority="WONT", retries=0),
            manual("AC-6"),
        )
    )
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "summary.md")}
    command = [*BASE, "--acceptance", "spec.md", "-n", "2"]
    run = subprocess.run(
        [*command, "--junitxml", "j.xml"], cwd=root, env=env, capture_output=True, text=True
    )
    return CiRun(root, run.returncode, run.stdout.splitlines())


def test_must_failures_are_errors_and_the_others_warnings(ci_run: CiRun) -> None:
    assert ci_run.returncode == 1  # priority ranks the annotations, never the verdict
    levels = {
        line.split("title=")[1].split("::")[0]: line.split(" ")[0]
        for line in ci_run.lines
        if line.startswith("::")
    }
    assert levels == {
        "AC-2": "::error",
        "AC-3": "::warning",
        "AC-4": "::warning",
        "AC-5": "::warning",
    }


def test_the_step_summary_is_appended_and_inert(ci_run: CiRun) -> None:
    summary = (ci_run.root / "summary.md").read_text()
    assert summary.startswith("earlier step\n### ❌ Acceptance: FAIL (exit code 1)\n")
    assert "| spec.md | 1 | 0 | 4 | 0 | 1 | 0 |" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| AC-")]
    assert [row.split(" | ")[1] for row in rows] == ["MUST", "SHOULD", "COULD", "WONT"]
    assert (
        "| AC-3: pipes \\| and &lt;script&gt;alert(1)&lt;/script&gt; | SHOULD | failed |"
    ) in summary
    assert "<script>" not in summary
    assert "GitHub step summary written to summary.md" in ci_run.lines  # relative to the rootdir


def test_junit_failure_message_is_the_first_line_and_the_body_the_whole_text(ci_run: CiRun) -> None:
    cases = {case.get("name"): case for case in ET.parse(ci_run.root / "j.xml").iter("testcase")}
    failure = cases["AC-2"].find("failure")
    assert failure is not None
    assert failure.get("message") == "AC-2: must fail — failed"
    assert "Expected: exit code 0" in (failure.text or "") and "out" in (failure.text or "")
    hostile = cases["AC-3"].find("failure")  # the title survives XML as written
    assert hostile is not None and hostile.get("message") == f"AC-3: {HOSTILE_TITLE} — failed"


def test_without_workers_junit_and_the_short_summary_show_the_first_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "exit 2", "broken", retries=0)))
    result = pytester.runpytest("--acceptance", "spec.md", "--junitxml", "j.xml", "-rf")
    result.stdout.fnmatch_lines(["FAILED spec.md::AC-1 - AC-1: broken — failed"])
    failure = ET.parse(pytester.path / "j.xml").find(".//failure")
    assert failure is not None and failure.get("message") == "AC-1: broken — failed"
    assert "Actual: exit code 2" in (failure.text or "")


def test_a_partial_run_is_a_notice_and_each_run_appends_its_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), bash("AC-2", "true")))
    pytester.runpytest("--acceptance", "spec.md")
    result = pytester.runpytest("--acceptance", "spec.md", "-k", "AC-1")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "::notice title=pytest-acceptance::1 of 2 criteria selected: "
            "not a verification of the spec."
        ]
    )
    text = summary.read_text()
    assert text.count("### ✅ Acceptance: PASS (exit code 0)") == 2
    assert "> 1 of 2 criteria selected: not a verification of the spec." in text


def test_a_step_summary_that_cannot_be_written_is_said_and_the_verdict_stands(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path))  # a directory
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["GitHub step summary NOT written to .: *"])


def test_an_html_path_that_is_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    result = pytester.runpytest("--acceptance", "spec.md", "--acceptance-html", ".")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--acceptance-html .: is a directory; name a file*"])


def test_the_html_report_lands_where_asked_creating_its_directory(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true", "the one")))
    pytester.runpytest("--acceptance", "spec.md", "--acceptance-html", "deep/er/r.html")
    page = Path(pytester.path / "deep" / "er" / "r.html").read_text()
    assert "PASS: Verified: every criterion passed" in page and "the one" in page


@given(st.text())
def test_any_text_becomes_one_inert_markdown_line(value: str) -> None:
    line = md(value)
    assert "\n" not in line and "\r" not in line and "<" not in line and ">" not in line
    assert not re.search(r"(?<!\\)[|`*_\[\]~]", line)  # table cells, code, emphasis, links
    assert not re.match(r"[#+=-]|\d+[.)]", line)  # no heading, list or quote of its own
    assert len(line) <= 2 * CELL_CHARS
