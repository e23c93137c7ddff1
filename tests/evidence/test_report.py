"""Report assembly from the evidence file on disk: determinism, spec order, missing and
invalid fragments, every resolution against a previous report, and the priority gap
classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.evidence.fragments import (
    EvidenceLog,
    FragmentError,
    build_fragment,
    clear_evidence,
    evidence_path,
    prepare_dir,
)
from pytest_acceptance.evidence.report import (
    Expected,
    Previous,
    assemble,
    gap_class,
    load_previous,
    render_markdown,
    report_json,
)
from pytest_acceptance.model import (
    Criterion,
    Issue,
    Location,
    Method,
    Priority,
    Result,
    Spec,
    Status,
)


def issues(count: int) -> tuple[Issue, ...]:
    return tuple(Issue(f"src/app.py:{n + 1}", "AppError", "Error()") for n in range(count))


def result(status: str, issue_count: int = 0) -> Result:
    return Result(Status(status), issues=issues(issue_count), message=f"{status} here")


class Project:
    """A spec on disk and runs of it that leave their evidence file, as the plugin does."""

    def __init__(self, root: Path, *ids: str, **criteria_fields: Any) -> None:
        self.root = root
        self.path = root / "spec.md"
        self.path.write_text("# Demo\n")
        self.spec = self.with_ids(*ids, **criteria_fields)

    def with_ids(self, *ids: str, **fields: Any) -> Spec:
        criteria = tuple(
            Criterion(
                id=ident,
                title=f"title {ident}",
                method=fields.get("method", Method.BASH),
                location=Location(self.path, 10 * (n + 1)),
                checks=fields.get("checks", ()),
                priority=fields.get("priority", Priority.MUST),
            )
            for n, ident in enumerate(ids)
        )
        self.spec = Spec(self.path, criteria, "Demo")
        return self.spec

    def run(self, outcomes: dict[str, Result], write: bool = True) -> list[Expected]:
        """A run's results; ``write``: a new evidence file holding them, as a run starts."""
        expected = []
        prepare_dir(self.root, self.path)
        if write:
            clear_evidence(self.root, self.path)
        log = EvidenceLog(self.evidence)
        for index, criterion in enumerate(self.spec.criteria):
            if criterion.id not in outcomes:
                continue
            outcome = outcomes[criterion.id]
            if write:
                log.append(build_fragment(criterion, index, outcome, self.root))
            expected.append(Expected(index, criterion, outcome))
        log.close()
        return expected

    @property
    def evidence(self) -> Path:
        return evidence_path(self.root, self.path)

    def lines(self) -> list[str]:
        return self.evidence.read_text().splitlines(keepends=True)

    def assemble(self, expected: list[Expected], previous: Previous | None = None) -> dict:
        return assemble(self.spec, expected, self.root, previous, "git:abc")

    def baseline(self, outcomes: dict[str, Result]) -> Previous:
        report = self.assemble(self.run(outcomes))
        path = self.root / "previous.json"
        path.write_text(report_json(report))
        return load_previous(path, self.root)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, "AC-1", "AC-2", "AC-3")


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in report["criteria"]}


def test_assembling_the_same_fragments_twice_gives_identical_bytes(project: Project) -> None:
    run = {"AC-1": result("passed"), "AC-2": result("failed", 2), "AC-3": result("manual")}
    previous = project.baseline({"AC-1": result("failed", 1), "AC-2": result("failed", 2)})
    expected = project.run(run)
    first, second = project.assemble(expected, previous), project.assemble(expected, previous)
    assert report_json(first).encode() == report_json(second).encode()
    assert render_markdown(first).encode() == render_markdown(second).encode()
    shuffled = project.assemble(list(reversed(expected)), previous)
    assert report_json(shuffled) == report_json(first)


def test_criteria_are_in_spec_order_with_counts_and_scope(project: Project) -> None:
    report = project.assemble(project.run({"AC-3": result("passed"), "AC-1": result("failed")}))
    assert [entry["id"] for entry in report["criteria"]] == ["AC-1", "AC-3"]
    assert (report["selected"], report["criteria_total"], report["complete"]) == (2, 3, False)
    assert report["counts"] == {
        "passed": 1,
        "flaky": 0,
        "failed": 1,
        "error": 0,
        "manual": 0,
        "unticked": 0,
        "not_run": 0,
    }
    assert report["spec"] == "spec.md" and report["fingerprint"] == "git:abc"


def test_a_missing_fragment_is_an_error_entry_and_a_problem(project: Project) -> None:
    expected = project.run({"AC-1": result("passed"), "AC-2": result("passed")})
    first, _ = project.lines()
    project.evidence.write_text(first)
    report = project.assemble(expected)
    missing = by_id(report)["AC-2"]
    where = project.evidence.relative_to(project.root).as_posix()
    assert missing["status"] == "error"
    assert (
        missing["message"]
        == f"no evidence fragment on disk ({where}); the run recorded: passed here"
    )
    assert report["gaps"]["high"] == ["AC-2"]
    assert report["problems"] == [
        f"AC-2: the run recorded passed but no evidence fragment reached disk ({where})"
    ]


def test_a_criterion_that_never_reported_is_an_error_entry_without_a_problem(
    project: Project,
) -> None:
    crashed = Result(Status.ERROR, attempts=0, message="its worker crashed")
    report = project.assemble(project.run({"AC-1": crashed}, write=False))
    entry = by_id(report)["AC-1"]
    assert entry["status"] == "error" and entry["message"].endswith("its worker crashed")
    assert report["problems"] == []


def test_an_invalid_fragment_stops_the_assembly_naming_the_file(project: Project) -> None:
    expected = project.run({"AC-1": result("passed")})
    project.evidence.write_text('{"schema": "pytest-acceptance/fragment", "version": 1}\n')
    where = f"{project.evidence}:1".replace(".", r"\.")
    with pytest.raises(FragmentError, match=where):
        project.assemble(expected)


def test_a_fragment_under_another_criterions_place_stops_the_assembly(project: Project) -> None:
    expected = project.run({"AC-1": result("passed"), "AC-2": result("passed")})
    first, second = project.lines()
    project.evidence.write_text(first + second.replace('"index":1', '"index":0'))
    with pytest.raises(FragmentError, match="it names AC-2 at index 0, but the spec's place 0"):
        project.assemble(expected)


def test_the_last_fragment_of_a_criterion_run_again_is_its_evidence(project: Project) -> None:
    """pytest-rerunfailures runs a criterion again: its later line is what the report shows."""
    project.run({"AC-1": result("failed", 1)})
    log = EvidenceLog(project.evidence)
    log.append(build_fragment(project.spec.criteria[0], 0, result("passed"), project.root))
    log.close()
    report = project.assemble(project.run({"AC-1": result("passed")}, write=False))
    assert by_id(report)["AC-1"]["status"] == "passed" and report["problems"] == []


def test_a_fragment_contradicting_the_recorded_result_is_a_problem(project: Project) -> None:
    project.run({"AC-1": result("failed", 1)})
    expected = project.run({"AC-1": result("passed")}, write=False)
    report = project.assemble(expected)
    where = project.evidence.relative_to(project.root)
    assert by_id(report)["AC-1"]["status"] == "failed"
    assert report["problems"] == [
        f"AC-1: the fragment says failed but the run recorded passed ({where.as_posix()})"
    ]


@pytest.mark.parametrize(
    ("before", "now", "resolution"),
    [
        (result("passed"), result("passed"), "unchanged"),
        (result("flaky"), result("passed"), "unchanged"),
        (result("failed", 2), result("passed"), "fixed"),
        (result("error"), result("flaky"), "fixed"),
        (result("passed"), result("failed", 1), "regressed"),
        (result("passed"), result("error"), "regressed"),
        (result("failed", 2), result("failed", 2), "still_failing"),
        (result("failed", 1), result("failed", 3), "still_failing"),
        (result("error"), result("error"), "still_failing"),
        (result("failed", 3), result("failed", 1), "partially_fixed"),
        (None, result("failed", 1), "new"),
        (result("manual"), result("passed"), "new"),
        (result("passed"), result("manual"), None),
    ],
)
def test_each_resolution_against_the_previous_report(
    project: Project, before: Result | None, now: Result, resolution: str | None
) -> None:
    previous = project.baseline({"AC-1": before} if before else {"AC-2": result("passed")})
    report = project.assemble(project.run({"AC-1": now}), previous)
    entry = by_id(report)["AC-1"]
    assert entry["resolution"] == resolution
    assert entry["previous_status"] == (before.status.value if before else None)
    listed = [kind for kind, ids in report["resolutions"].items() if "AC-1" in ids]
    assert listed == ([resolution] if resolution else [])


def test_ids_gone_from_the_spec_are_listed_as_removed(project: Project) -> None:
    previous = project.baseline({"AC-1": result("passed"), "AC-3": result("failed", 1)})
    project.with_ids("AC-1", "AC-2")
    report = project.assemble(project.run({"AC-1": result("passed")}), previous)
    assert report["removed"] == [{"id": "AC-3", "title": "title AC-3", "previous_status": "failed"}]
    assert "- removed: AC-3 (was failed)" in render_markdown(report)


def test_without_a_previous_report_there_are_no_resolutions(project: Project) -> None:
    report = project.assemble(project.run({"AC-1": result("failed", 1)}))
    assert report["previous"] is None and report["resolutions"] is None
    assert by_id(report)["AC-1"]["resolution"] is None
    assert "No previous complete report. This run was partial: the baseline stays" in (
        render_markdown(report)
    )


def test_an_unusable_previous_report_says_why_and_gives_no_deltas(project: Project) -> None:
    bad = project.root / "old.json"
    bad.write_text('{"schema": "something else"}')
    report = project.assemble(
        project.run({"AC-1": result("passed")}), load_previous(bad, project.root)
    )
    assert report["previous"] == {
        "source": "old.json",
        "usable": False,
        "reason": 'not a pytest-acceptance report (schema "pytest-acceptance/report")',
    }
    assert report["resolutions"] is None
    assert "Previous report `old.json` unusable" in render_markdown(report)


@pytest.mark.parametrize(
    ("priority", "status", "partial", "expected"),
    [
        ("MUST", "failed", False, "high"),
        ("MUST", "error", False, "high"),
        ("MUST", "failed", True, "medium"),
        ("SHOULD", "failed", False, "medium"),
        ("SHOULD", "error", False, "medium"),
        ("SHOULD", "failed", True, "low"),
        ("COULD", "failed", False, "low"),
        ("COULD", "failed", True, "low"),
        ("WONT", "failed", False, "low"),
        ("MUST", "passed", False, None),
        ("MUST", "flaky", False, None),
        ("MUST", "manual", False, None),
    ],
)
def test_gap_classes_follow_seed_002(
    priority: str, status: str, partial: bool, expected: str | None
) -> None:
    assert gap_class(priority, status, partial) == expected


def test_an_agent_failure_with_some_checks_holding_is_a_partial_gap(tmp_path: Path) -> None:
    project = Project(tmp_path, "AC-1", "AC-2", method=Method.SUBAGENT, checks=("a", "b", "c"))
    report = project.assemble(
        project.run({"AC-1": result("failed", 1), "AC-2": result("failed", 3)})
    )
    entries = by_id(report)
    assert (entries["AC-1"]["partial"], entries["AC-1"]["gap"]) == (True, "medium")
    assert (entries["AC-2"]["partial"], entries["AC-2"]["gap"]) == (False, "high")


def test_fewer_issues_than_before_makes_a_partial_gap(project: Project) -> None:
    previous = project.baseline({"AC-1": result("failed", 3)})
    report = project.assemble(project.run({"AC-1": result("failed", 2)}), previous)
    assert by_id(report)["AC-1"]["partial"] is True
    assert report["gaps"] == {"high": [], "medium": ["AC-1"], "low": []}


def test_report_md_lists_gaps_by_class_then_changes_then_every_criterion(tmp_path: Path) -> None:
    project = Project(tmp_path, "AC-1", "AC-2")
    project.spec = Spec(
        project.path,
        (
            project.spec.criteria[0],
            Criterion(
                "AC-2",
                "a | piped title",
                Method.BASH,
                Location(project.path, 20),
                priority=Priority.COULD,
            ),
        ),
        "Demo",
    )
    previous = project.baseline({"AC-1": result("passed"), "AC-2": result("passed")})
    markdown = render_markdown(
        project.assemble(
            project.run({"AC-1": result("failed", 1), "AC-2": result("error")}), previous
        )
    )
    sections = [line for line in markdown.splitlines() if line.startswith("#")]
    assert sections == [
        "# Verification report: Demo",
        "## Gaps by priority",
        "### High: a MUST not met (1)",
        "### Medium: a MUST partly met, or a SHOULD not met (0)",
        "### Low: a SHOULD partly met, or a COULD or WONT not met (1)",
        "## Changes since the previous report",
        "## Criteria",
        "## Details of the gaps",
        "### AC-1: title AC-1",
        "### AC-2: a | piped title",
    ]
    assert "- AC-1 [MUST] failed: title AC-1 (spec.md:10), regressed" in markdown
    assert "- AC-2 [COULD] error: a \\| piped title (spec.md:20), regressed" in markdown
    assert "- regressed (2): AC-1, AC-2" in markdown
    assert "| 2 | AC-2 | COULD | error | low | regressed | a \\| piped title |" in markdown
    assert "- Issue at `src/app.py:1`: expected AppError; actual Error()" in markdown


def test_report_json_is_valid_json_in_the_documented_shape(project: Project) -> None:
    report = json.loads(report_json(project.assemble(project.run({"AC-1": result("passed")}))))
    assert report["schema"] == "pytest-acceptance/report" and report["version"] == 1
    assert set(report) == {
        "schema", "version", "spec", "title", "fingerprint", "criteria_total", "selected",
        "not_run", "complete", "counts", "gaps", "previous", "resolutions", "removed", "problems",
        "ran_in", "criteria", "requirements",
    }  # fmt: skip
    assert set(report["criteria"][0]) >= {
        "id", "title", "priority", "status", "issues", "gap", "partial", "resolution",
        "previous_status", "previous_issues", "line", "index", "output", "message",
    }  # fmt: skip


def test_a_criterion_that_was_not_run_is_no_problem_no_gap_and_no_delta(project: Project) -> None:
    previous = project.baseline({"AC-1": result("passed"), "AC-2": result("failed", 1)})
    expected = project.run({"AC-1": result("failed", 1)})
    expected += project.run({"AC-2": result("not_run")}, write=False)  # it left no fragment
    report = project.assemble(expected, previous)
    entry = by_id(report)["AC-2"]
    assert (entry["status"], entry["gap"], entry["resolution"]) == ("not_run", None, "not_run")
    assert report["problems"] == [] and report["not_run"] == 1 and report["complete"] is False
    assert report["resolutions"]["still_failing"] == []  # unknown is not still failing
    assert "2 of 3 criteria selected, 1 ran, 1 not run: a partial run" in render_markdown(report)


def test_one_criterion_is_named_in_the_singular(tmp_path: Path) -> None:
    lone = Project(tmp_path, "AC-1")
    markdown = render_markdown(lone.assemble(lone.run({"AC-1": result("failed", 1)})))
    assert "1 criterion, which ran" in markdown and "after 1 attempt," in markdown
    assert "1 criteria" not in markdown and "attempt(s)" not in markdown
