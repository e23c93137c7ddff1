"""The evidence trail through real `pytest --acceptance` runs: evidence from xdist workers,
reports and deltas across runs, evidence problems that fail the run, the JUnit properties
and the GitHub Actions annotations."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from support.specs import bash, manual, spec

from pytest_acceptance.evidence.trail import escape_data, escape_property


def report_dir(pytester: pytest.Pytester) -> Path:
    (directory,) = (pytester.path / ".acceptance" / "specs").iterdir()
    return directory


def report(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((report_dir(pytester) / "report.json").read_text())


def verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def write_spec(pytester: pytest.Pytester, *blocks: str) -> Path:
    return pytester.makefile(".md", spec=spec(*blocks))


def test_one_evidence_line_per_criterion_from_the_workers_and_the_controller_one_report(
    pytester: pytest.Pytester,
) -> None:
    write_spec(
        pytester,
        bash("AC-1", "true", "one"),
        bash("AC-2", "echo broken; exit 3", "two", priority="SHOULD"),
        manual("AC-3", "three"),
        bash("AC-4", "true", "four"),
    )
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "2")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "## Verification Results",
            "*acceptance evidence*",
            "spec.md: report .acceptance/specs/spec-*/report.md",
            "  gaps: 1 medium (a MUST partly met, or a SHOULD not met): AC-2",
        ]
    )
    assert sorted(p.name for p in report_dir(pytester).iterdir()) == [
        "baseline.json", "evidence.jsonl", "report.json", "report.md",
    ]  # fmt: skip
    lines = (report_dir(pytester) / "evidence.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == ["AC-1", "AC-2", "AC-3", "AC-4"]
    assembled = report(pytester)
    assert [(c["id"], c["status"]) for c in assembled["criteria"]] == [
        ("AC-1", "passed"), ("AC-2", "failed"), ("AC-3", "manual"), ("AC-4", "passed"),
    ]  # fmt: skip
    assert "broken" in assembled["criteria"][1]["output"]
    assert verdict(pytester)["reports"] == [str(report_dir(pytester) / "report.json")]
    markdown = (report_dir(pytester) / "report.md").read_text()
    medium = "### Medium: a MUST partly met, or a SHOULD not met (1)"
    assert f"{medium}\n- AC-2 [SHOULD] failed: two (spec.md:" in markdown


def test_a_second_run_shows_what_was_fixed_regressed_added_and_removed(
    pytester: pytest.Pytester,
) -> None:
    flag = "test -f fixed"
    write_spec(
        pytester,
        bash("AC-1", flag, "one"),
        bash("AC-2", "true", "two"),
        bash("AC-4", "true", "four"),
    )
    assert pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist").ret == 1
    first = (report_dir(pytester) / "report.json").read_text()
    (pytester.path / "fixed").write_text("")
    write_spec(
        pytester,
        bash("AC-1", flag, "one"),
        bash("AC-2", "false", "two"),
        bash("AC-3", "true", "three"),
    )
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "  gaps: 1 high (a MUST not met): AC-2",
            "  since the previous report: fixed 1 (AC-1); regressed 1 (AC-2); new 1 (AC-3); "
            "removed 1 (AC-4)",
        ]
    )
    assert (report_dir(pytester) / "report.previous.json").read_text() == first
    resolutions = {c["id"]: c["resolution"] for c in report(pytester)["criteria"]}
    assert resolutions == {"AC-1": "fixed", "AC-2": "regressed", "AC-3": "new"}


def test_a_named_previous_report_is_the_baseline(pytester: pytest.Pytester) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", "true"))
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    baseline = pytester.path / "baseline.json"
    baseline.write_text((report_dir(pytester) / "report.json").read_text())
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", "false"))
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "--acceptance-previous", "baseline.json", "-p", "no:xdist"
    )
    result.stdout.fnmatch_lines(["  since the previous report: regressed 1 (AC-2)"])
    assert report(pytester)["previous"]["source"] == "baseline.json"


def test_a_missing_previous_report_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_spec(pytester, bash("AC-1", "true"))
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "--acceptance-previous", "x")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--acceptance-previous x: no such file*"])


# A criterion whose command tampers with the evidence of the criterion before it: a line
# that is no fragment, or the criterion's line taken out (the file rewritten in place).
CORRUPT = "echo '{\"schema\": 1}' >> .acceptance/specs/*/evidence.jsonl"
DELETE = (
    'f=$(echo .acceptance/specs/*/evidence.jsonl); grep -v \'"id":"AC-1"\' $f > kept; cat kept > $f'
)


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (CORRUPT, "evidence: evidence fragment */evidence.jsonl:2: schema must be*"),
        (DELETE, "evidence: spec.md: AC-1: the run recorded passed but no evidence fragment*"),
    ],
)
def test_evidence_that_cannot_be_assembled_turns_a_pass_into_an_error(
    pytester: pytest.Pytester, tamper: str, problem: str
) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", tamper))
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    assert result.ret == 11
    result.stdout.fnmatch_lines(["### Errors (1)", problem.replace("evidence: ", "- evidence: ")])
    result.stdout.fnmatch_lines(["verdict: ERROR (exit code 11)*"])
    result.stdout.no_fnmatch_line("*/done may follow*")
    result.stdout.fnmatch_lines(["EVIDENCE ERROR: *", "the verdict cannot pass while*"])
    written = verdict(pytester)
    assert (written["status"], written["exit_code"]) == ("error", 11)
    assert any(fnmatch(p, problem) for p in written["problems"]), written["problems"]


def test_an_evidence_problem_keeps_a_failing_verdict_at_exit_code_1(
    pytester: pytest.Pytester,
) -> None:
    write_spec(pytester, bash("AC-1", "true"), bash("AC-2", DELETE), bash("AC-3", "false"))
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    assert result.ret == 1
    assert verdict(pytester)["status"] == "fail"
    assert any("AC-1: the run recorded passed" in p for p in verdict(pytester)["problems"])


def test_junit_xml_carries_criterion_title_method_and_priority_from_workers(
    pytester: pytest.Pytester,
) -> None:
    """Per testcase under xunit1 only: xunit2's schema has no properties there."""
    pytester.makeini("[pytest]\njunit_family = xunit1\n")
    write_spec(
        pytester,
        bash("AC-1", "true", priority="COULD"),
        bash("AC-2", "false", priority="SHOULD"),
        manual("AC-3"),
    )
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "2", "--junitxml", "out.xml")
    cases = ET.parse(pytester.path / "out.xml").iter("testcase")
    properties = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in cases
    }
    assert properties == {
        "AC-1": {"criterion": "AC-1", "title": "ac-1", "method": "bash", "priority": "COULD"},
        "AC-2": {"criterion": "AC-2", "title": "ac-2", "method": "bash", "priority": "SHOULD"},
        "AC-3": {"criterion": "AC-3", "title": "ac-3", "method": "manual", "priority": "MUST"},
    }


def test_on_github_actions_each_failure_is_an_error_annotation_at_its_spec_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    docs = pytester.mkdir("docs")
    text = spec(
        bash("AC-1", "true"),
        bash("AC-2", "printf '100%% broken'; exit 1", "fails, badly: 100%"),
        manual("AC-3"),
    )
    (docs / "spec.md").write_text(text)
    line = text.splitlines().index("#### AC-2: fails, badly: 100%") + 1
    result = pytester.runpytest_subprocess("--acceptance", "docs/spec.md", "-n", "2")
    assert result.ret == 1
    annotations = [x for x in result.stdout.lines if x.startswith("::")]
    assert len(annotations) == 1
    assert annotations[0].startswith(
        f"::error file=docs/spec.md,line={line},title=AC-2::fails, badly: 100%25: failed (MUST)%0A"
    )
    assert "%0A" in annotations[0] and "\n" not in annotations[0]


def test_annotations_name_the_spec_from_the_repository_root_and_say_each_sentence_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's ini is in app/, a folder of the repository: the annotation and the step
    summary name app/spec.md, where GitHub attaches it, and the failure's sentence appears
    once in the annotation."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    app = pytester.mkdir("app")
    (app / "pytest.ini").write_text("[pytest]\nacceptance_retries = 0\n")
    (app / "spec.md").write_text(spec(bash("AC-1", "exit 3")))
    result = pytester.runpytest_subprocess(
        "--acceptance", "app/spec.md", "-p", "no:xdist", "--rootdir", "app", "-c", "app/pytest.ini"
    )
    assert result.ret == 1, result.stdout.str()
    (annotation,) = [x for x in result.stdout.lines if x.startswith("::error file=")]
    assert annotation.startswith("::error file=app/spec.md,"), annotation
    assert annotation.count("expected exit code 0") == 1, annotation
    assert "| app/spec.md:" in summary.read_text() and "| app/spec.md |" in summary.read_text()


def test_off_github_actions_there_are_no_annotations(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    write_spec(pytester, bash("AC-1", "false"))
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    assert result.ret == 1
    assert not [x for x in result.stdout.lines if x.startswith("::error")]


def test_workflow_command_escaping_follows_github() -> None:
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("docs/a,b: c%\n") == "docs/a%2Cb%3A c%25%0A"


def test_an_interrupted_run_keeps_the_last_report_as_the_baseline(
    pytester: pytest.Pytester,
) -> None:
    write_spec(pytester, bash("AC-1", "true"))
    pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:xdist")
    last = (report_dir(pytester) / "report.json").read_text()
    pytester.makefile(".md", broken="#### AC-1: x\n```yaml\nmethod: nope\n```\n")
    result = pytester.runpytest_subprocess(
        "--acceptance", "spec.md", "--acceptance", "broken.md", "-p", "no:xdist"
    )
    assert result.ret == 2
    result.stdout.fnmatch_lines(["no report written: the run did not complete (exit code 2)*"])
    assert (report_dir(pytester) / "report.json").read_text() == last
