"""Evidence fragments: schema, bounds, validation errors that name the file, and atomic
writes that no concurrent reader ever sees torn (real processes racing on real files)."""

from __future__ import annotations

import json
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
    FragmentError,
    build_fragment,
    clear_fragments,
    fragment_path,
    load_fragment,
    prepare_dir,
    spec_dir,
    write_fragment,
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
    criterion = make_criterion(tmp_path, **more)
    prepare_dir(tmp_path, criterion.location.path)
    path = fragment_path(tmp_path, criterion.location.path, 3, criterion.id)
    write_fragment(path, build_fragment(criterion, 3, result, tmp_path))
    return path


def test_a_fragment_round_trips_with_every_schema_field(tmp_path: Path) -> None:
    issue = Issue("src/app.py:3", "AppError", "Error()")
    result = Result(Status.FAILED, attempts=2, duration=1.23456, issues=(issue,), message="m")
    path = written(tmp_path, result, priority=Priority.SHOULD, checks=("a", "b"))
    assert path.name == "0003-AC-1.json"
    assert path.with_suffix(".done").is_file()
    assert load_fragment(path) == {
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
    fragment = load_fragment(written(tmp_path, Result(Status.FAILED, issues=issues, output=output)))
    assert len(fragment["output"]) == OUTPUT_LIMIT
    assert fragment["output"].endswith("the failing line") and "start" not in fragment["output"]
    assert len(fragment["issues"]) == ISSUE_LIMIT


def test_spec_directories_are_stable_and_distinct_for_same_named_specs(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "spec.md", tmp_path / "b" / "spec.md"
    assert spec_dir(tmp_path, first) == spec_dir(tmp_path, first)
    assert spec_dir(tmp_path, first) != spec_dir(tmp_path, second)
    assert spec_dir(tmp_path, first).name.startswith("spec-")
    assert spec_dir(tmp_path, first).parent == tmp_path / ".acceptance" / "specs"


def test_clearing_forgets_the_previous_fragments_at_once_and_sweeps_them_away(
    tmp_path: Path,
) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    clear_fragments(tmp_path, tmp_path / "spec.md")
    assert not path.exists() and not path.with_suffix(".done").exists()
    spec_directory = path.parent.parent
    deadline = time.monotonic() + 30  # the sweep runs on a background thread
    while any(p.name.startswith("fragments.stale-") for p in spec_directory.iterdir()):
        assert time.monotonic() < deadline, "stale fragments were never removed"
        time.sleep(0.01)
    assert written(tmp_path, Result(Status.FAILED)).exists()  # the next run writes afresh


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
def test_a_fragment_failing_the_schema_is_an_error_naming_file_and_field(
    tmp_path: Path, change: str, named: str
) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    path.write_text(json.dumps(mutate(json.loads(path.read_text()), change)))
    with pytest.raises(FragmentError) as excinfo:
        load_fragment(path)
    message = str(excinfo.value)
    assert str(path) in message and named in message
    assert "delete it and run again" in message


def test_a_torn_or_non_json_fragment_names_file_line_and_column(tmp_path: Path) -> None:
    path = written(tmp_path, Result(Status.PASSED))
    path.write_text(path.read_text()[:40])
    with pytest.raises(FragmentError, match=r"is not JSON \(line \d+, column \d+"):
        load_fragment(path)


# A writer process: rewrites its fragments (shared and own) with outputs of varying size.
WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_acceptance.evidence.fragments import build_fragment, fragment_path, write_fragment
    from pytest_acceptance.evidence.fragments import prepare_dir
    from pytest_acceptance.model import Criterion, Location, Method, Result, Status
    root, me, rounds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    prepare_dir(root, root / "spec.md")
    for n in range(rounds):
        for ident, index in (("AC-1", 0), (f"AC-{me + 2}", me + 1)):
            criterion = Criterion(ident, "t", Method.BASH, Location(root / "spec.md", 1))
            output = f"writer {me} round {n} " + "y" * ((n * 7919 + me * 104729) % 60000)
            result = Result(Status.FAILED, attempts=me + 1, output=output)
            path = fragment_path(root, criterion.location.path, index, ident)
            write_fragment(path, build_fragment(criterion, index, result, root))
    """
)


def test_concurrent_writers_never_leave_a_torn_fragment_for_a_reader(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(me), "150"])
        for me in range(4)
    ]
    shared = fragment_path(tmp_path, tmp_path / "spec.md", 0, "AC-1")
    reads, writers_seen = 0, set()
    while any(writer.poll() is None for writer in writers):
        if shared.exists():
            fragment = load_fragment(shared)  # raises on a torn or invalid file
            writers_seen.add(fragment["attempts"])
            reads += 1
        else:
            time.sleep(0.001)
    assert [writer.returncode for writer in writers] == [0, 0, 0, 0]
    assert reads > 0, "the reader never saw the shared fragment while writers ran"
    directory = shared.parent
    assert sorted(p.name for p in directory.glob("*.json")) == [
        "0000-AC-1.json",
        "0001-AC-2.json",
        "0002-AC-3.json",
        "0003-AC-4.json",
        "0004-AC-5.json",
    ]
    assert len(list(directory.glob("*.done"))) == 5
    assert not list(directory.glob("*.tmp")), "a temp file was left behind"
    for path in directory.glob("*.json"):
        load_fragment(path)
