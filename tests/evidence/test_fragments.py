"""Evidence fragments: schema, bounds, validation errors that name the file and line, and
the append-only evidence file that a reader never sees torn, even while it is written or
after a write cut short (real processes on real files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.evidence.fragments import (
    ISSUE_LIMIT,
    OUTPUT_LIMIT,
    EvidenceLog,
    FragmentError,
    build_fragment,
    clear_evidence,
    evidence_path,
    prepare_dir,
    read_evidence,
    spec_dir,
)
from pytest_acceptance.model import Criterion, Issue, Location, Method, Priority, Result, Status


def make_criterion(tmp_path: Path, ident: str = "AC-1", **more: Any) -> Criterion:
    return Criterion(
        id=ident,
        title=f"title of {ident}",
        method=more.pop("method", Method.BASH),
        location=Location(tmp_path / "spec.md", 7),
        category="Core",
        command="true",
        **more,
    )


def written(tmp_path: Path, result: Result, **more: Any) -> Path:
    """The evidence file after one fragment was appended to it."""
    criterion = make_criterion(tmp_path, **more)
    prepare_dir(tmp_path, criterion.location.path)
    path = evidence_path(tmp_path, criterion.location.path)
    log = EvidenceLog(path)
    log.append(build_fragment(criterion, 3, result, tmp_path))
    log.close()
    return path


def only(path: Path) -> dict[str, Any]:
    ((_, fragment),) = read_evidence(path)
    return fragment


def test_a_fragment_round_trips_with_every_schema_field(tmp_path: Path) -> None:
    issue = Issue("src/app.py:3", "AppError", "Error()")
    result = Result(Status.FAILED, attempts=2, duration=1.23456, issues=(issue,), message="m")
    path = written(tmp_path, result, priority=Priority.SHOULD, checks=("a", "b"))
    assert path.name == "evidence.jsonl" and path.read_text().count("\n") == 1
    assert only(path) == {
        "schema": "pytest-acceptance/fragment",
        "version": 1,
        "spec": "spec.md",
        "index": 3,
        "id": "AC-1",
        "title": "title of AC-1",
        "category": "Core",
        "method": "bash",
        "priority": "SHOULD",
        "line": 7,
        "checks": 2,
        "status": "failed",
        "attempts": 2,
        "results": 1,
        "duration": 1.235,
        "message": "m",
        "output": "",
        "issues": [{"location": "src/app.py:3", "expected": "AppError", "actual": "Error()"}],
        "usage": None,  # not an agent criterion
        "unstable": False,
    }


def test_output_keeps_its_tail_and_issues_are_capped(tmp_path: Path) -> None:
    output = "start\n" + "x" * (OUTPUT_LIMIT * 3) + "\nthe failing line"
    issues = tuple(Issue(f"f.py:{n}", "e", "a") for n in range(ISSUE_LIMIT + 20))
    fragment = only(written(tmp_path, Result(Status.FAILED, issues=issues, output=output)))
    assert len(fragment["output"]) == OUTPUT_LIMIT
    assert fragment["output"].endswith("the failing line") and "start" not in fragment["output"]
    assert len(fragment["issues"]) == ISSUE_LIMIT


def test_spec_directories_are_stable_and_distinct_for_same_named_specs(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "spec.md", tmp_path / "b" / "spec.md"
    assert spec_dir(tmp_path, first) == spec_dir(tmp_path, first)
    assert spec_dir(tmp_path, first) != spec_dir(tmp_path, second)
    assert spec_dir(tmp_path, first).name.startswith("spec-")
    assert spec_dir(tmp_path, first).parent == tmp_path / ".acceptance" / "specs"


def test_clearing_forgets_the_previous_evidence_at_once_and_sweeps_old_fragment_files_away(
    tmp_path: Path,
) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    legacy = path.parent / "fragments"  # a file per criterion, as earlier versions wrote
    legacy.mkdir()
    for n in range(50):
        (legacy / f"{n:04d}-AC-{n}.json").write_text("{}")
    clear_evidence(tmp_path, tmp_path / "spec.md")
    assert not path.exists() and not legacy.exists()
    deadline = time.monotonic() + 30  # the sweep runs detached
    while any(p.name.startswith("fragments.stale-") for p in path.parent.iterdir()):
        assert time.monotonic() < deadline, "stale fragments were never removed"
        time.sleep(0.01)
    assert only(written(tmp_path, Result(Status.FAILED)))["status"] == "failed"  # afresh


def mutate(fragment: dict[str, Any], change: str) -> Any:
    if change == "not an object":
        return [fragment]
    key, _, value = change.partition("=")
    if value == "<missing>":
        del fragment[key]
    else:
        fragment[key] = json.loads(value)
    return fragment


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("status=<missing>", '"status" is missing'),
        ('attempts="2"', '"attempts" must be an integer'),
        ("attempts=true", '"attempts" must be an integer'),
        ("duration=null", '"duration" must be an integer or a number'),
        ('status="sort of"', "status 'sort of' is not one of"),
        ('priority="must"', "priority 'must' is not one of"),
        ("version=2", "version 2"),
        ('schema="other"', "'other'"),
        ("line=0", "line >= 1"),
        ('issues=[{"location": "x"}]', "issues[0] must be an object"),
        ("issues={}", '"issues" must be a list'),
        ("not an object", "must be a JSON object"),
    ],
)
def test_a_fragment_failing_the_schema_is_an_error_naming_file_line_and_field(
    tmp_path: Path, change: str, named: str
) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    good = path.read_text()
    path.write_text(good + json.dumps(mutate(json.loads(good), change)) + "\n")
    with pytest.raises(FragmentError) as excinfo:
        list(read_evidence(path))
    message = str(excinfo.value)
    assert f"{path}:2:" in message and named in message
    assert "delete it and run again" in message


def test_a_whole_line_that_is_not_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    path.write_text(path.read_text()[:40] + "\n")
    with pytest.raises(FragmentError, match=r"evidence\.jsonl:1: is not JSON \(column \d+"):
        list(read_evidence(path))


@pytest.mark.parametrize(
    "cut", [1, 40, -2, -1], ids=["one byte", "40 bytes", "all but }", "no newline"]
)
def test_a_last_line_cut_short_is_ignored_and_its_criterion_has_no_evidence(
    tmp_path: Path, cut: int
) -> None:
    """A kill in the middle of a write leaves a last line without its newline: the
    fragments before it are read, that one is not (no crash, and never a pass)."""
    path = written(tmp_path, Result(Status.FAILED))
    whole = path.read_text()
    passed = whole.replace('"status":"failed"', '"status":"passed"').replace(
        '"index":3', '"index":4'
    )
    path.write_text(whole + passed[:cut])
    assert [(line, f["index"], f["status"]) for line, f in read_evidence(path)] == [
        (1, 3, "failed")
    ]


def test_a_line_longer_than_any_fragment_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_acceptance.evidence.fragments as fragments

    monkeypatch.setattr(fragments, "LINE_LIMIT", 1000)  # the real bound is 128 MiB
    path = written(tmp_path, Result(Status.PASSED))
    path.write_text(path.read_text() + "x" * 5000 + "\n")
    with pytest.raises(FragmentError, match=r"evidence\.jsonl:2: the line is longer than 1000"):
        list(read_evidence(path))


def test_a_missing_evidence_file_holds_no_fragment_and_a_fifo_does_not_block(
    tmp_path: Path,
) -> None:
    path = evidence_path(tmp_path, tmp_path / "spec.md")
    assert list(read_evidence(path)) == []
    prepare_dir(tmp_path, tmp_path / "spec.md")
    os.mkfifo(path)  # planted by a criterion's command: read without blocking, refused
    with pytest.raises(FragmentError, match="cannot be read"):
        list(read_evidence(path))


# A writer process: appends fragments with outputs of varying size, as the controller does.
WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_acceptance.evidence.fragments import EvidenceLog, build_fragment
    from pytest_acceptance.evidence.fragments import evidence_path, prepare_dir
    from pytest_acceptance.model import Criterion, Location, Method, Result, Status
    root, count = Path(sys.argv[1]), int(sys.argv[2])
    prepare_dir(root, root / "spec.md")
    log = EvidenceLog(evidence_path(root, root / "spec.md"))
    for n in range(count):
        criterion = Criterion(f"AC-{n + 1}", "t", Method.BASH, Location(root / "spec.md", 1))
        output = f"round {n} " + "y" * ((n * 7919) % 60000)
        log.append(build_fragment(criterion, n, Result(Status.FAILED, output=output), root))
    """
)


def test_a_reader_never_sees_a_torn_fragment_while_the_file_is_appended_to(
    tmp_path: Path,
) -> None:
    count = 400
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(count)])
    path = evidence_path(tmp_path, tmp_path / "spec.md")
    reads, seen = 0, 0
    while writer.poll() is None:
        indexes = [fragment["index"] for _, fragment in read_evidence(path)]  # raises if torn
        assert indexes == list(range(len(indexes)))  # whole lines, in order, none lost
        assert len(indexes) >= seen  # append-only: what was read stays
        seen, reads = len(indexes), reads + 1
    assert writer.returncode == 0
    assert reads > 0
    assert [fragment["index"] for _, fragment in read_evidence(path)] == list(range(count))
    assert sorted(p.name for p in path.parent.iterdir()) == ["evidence.jsonl"]
