"""CI shards and one verdict, through real runs: clones of one repository stand in for CI
runners, each running a shard with real pytest-split (``--splits/--group``), pytest-shard
(``--num-shards/--shard-id``), node ids or ``-k``; ``pytest --acceptance-merge DIR…`` in
another clone makes one verdict, report, JUnit and HTML of their outputs, or refuses, with
the reason, shards that do not make one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from support.judges import Judge
from support.repos import git
from support.runs import BASE, assert_clean
from support.specs import bash, criterion, spec

from pytest_acceptance.evidence.fragments import spec_dir

INI = "[pytest]\nacceptance_retries = 0\nfilterwarnings = error\n"
SIX = [bash(f"AC-{n}", "true") for n in range(1, 7)]
# Fails on a runner that sets FAIL_HERE: one criterion, two results.
DEPENDS_ON_RUNNER = bash("AC-7", 'test -z "$FAIL_HERE"')


def origin(tmp_path: Path, *blocks: str) -> Path:
    root = tmp_path / "origin"
    root.mkdir()
    (root / "pytest.ini").write_text(INI)
    (root / "spec.md").write_text(spec(*blocks))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "spec")
    return root


# Each CI runner has both splitters installed, as a project that tried both would.
SPLITTERS = ("-p", "pytest-split", "-p", "pytest-shard")


def clone(source: Path, where: Path) -> Path:
    git(source.parent, "clone", "-q", str(source), str(where))
    return where


def pytest_run(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*BASE, *SPLITTERS, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert_clean(done.stdout + done.stderr)
    return done


def shard(
    source: Path, name: str, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A CI runner: a fresh clone runs the shard; its ``.acceptance`` is the artifact."""
    runner = clone(source, source.parent / name)
    return pytest_run(runner, "--acceptance", "spec.md", *args, env=env), runner / ".acceptance"


def merge(
    source: Path,
    *artifacts: Path,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The fan-in job: a fresh clone downloads the shards' artifacts and merges them."""
    checkout = clone(source, source.parent / "merge")
    given = []
    for number, artifact in enumerate(artifacts, 1):
        shutil.copytree(artifact, checkout / "shards" / str(number) / ".acceptance")
        given.append(f"shards/{number}")
    return pytest_run(checkout, "--acceptance-merge", *given, *extra, env=env), checkout


def verdict_of(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "verdict.json").read_text())


def test_pytest_split_shards_pass_and_merge_into_one_complete_verdict(tmp_path: Path) -> None:
    """Three pytest-split shards each pass (exit 0) and say what they selected and how they
    were split; criteria they did not select are not "not run". The merge gives the verdict
    of one local run: pass, complete, six criteria, with report, JUnit and HTML."""
    source = origin(tmp_path, *SIX)
    artifacts = []
    for group in (1, 2, 3):
        done, artifact = shard(source, f"runner-{group}", "--splits", "3", "--group", str(group))
        assert done.returncode == 0, done.stdout + done.stderr
        data = verdict_of(artifact)
        assert (data["status"], data["shard"]) == (
            "pass",
            f"pytest-split --splits 3 --group {group}",
        )
        assert data["counts"]["not_run"] == 0 and len(data["criteria"]) == 2
        assert data["specs"][0]["relative"] == "spec.md"
        artifacts.append(artifact)
    done, checkout = merge(
        source, *artifacts, extra=("--junitxml", "merged.xml", "--acceptance-html", "merged.html")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    merged = verdict_of(checkout / ".acceptance")
    assert (merged["status"], merged["complete"]) == ("pass", True)
    assert [c["id"] for c in merged["criteria"]] == [f"AC-{n}" for n in range(1, 7)]
    assert merged["fingerprint"] == verdict_of(artifacts[0])["fingerprint"]
    suite = ET.parse(checkout / "merged.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "6" and suite.get("failures") == "0"
    assert "AC-6" in (checkout / "merged.html").read_text()
    report = json.loads((spec_dir(checkout, checkout / "spec.md") / "report.json").read_text())
    assert report["complete"] and report["counts"]["passed"] == 6


def test_pytest_shard_shards_with_a_failure_merge_into_a_failing_verdict(tmp_path: Path) -> None:
    """pytest-shard: the shard holding the failing criterion fails (exit 1); the merged
    verdict fails on it (exit 1), its JUnit names the failure, its evidence keeps the
    output the shard recorded."""
    failing = bash("AC-7", "echo broken-on-the-runner; false")
    source = origin(tmp_path, *SIX, failing)
    runs = [shard(source, f"runner-{n}", "--num-shards", "2", "--shard-id", str(n)) for n in (0, 1)]
    holder = [artifact for _, artifact in runs if "AC-7" in json.dumps(verdict_of(artifact))]
    assert len(holder) == 1
    assert sorted(done.returncode for done, _ in runs) == [0, 1]
    done, checkout = merge(source, *(artifact for _, artifact in runs), extra=("--junitxml=m.xml",))
    assert done.returncode == 1, done.stdout + done.stderr
    merged = verdict_of(checkout / ".acceptance")
    assert merged["status"] == "fail" and merged["counts"] == {
        **merged["counts"],
        "passed": 6,
        "failed": 1,
    }
    failures = ET.parse(checkout / "m.xml").getroot().iter("failure")
    assert ["AC-7" in (f.get("message") or "") for f in failures] == [True]
    report = (spec_dir(checkout, checkout / "spec.md") / "report.md").read_text()
    assert "broken-on-the-runner" in report


def test_a_shard_given_no_criterion_by_the_splitter_passes_but_an_empty_run_does_not(
    tmp_path: Path,
) -> None:
    """More groups than criteria: pytest-split's last group is empty; that shard passes
    (exit 0, nothing selected, its split recorded). Without a splitter, a selection of
    nothing (``-k`` matching none) stays an error."""
    source = origin(tmp_path, *SIX)
    done, artifact = shard(source, "runner-empty", "--splits", "8", "--group", "8")
    assert done.returncode == 0, done.stdout + done.stderr
    data = verdict_of(artifact)
    assert (data["status"], data["criteria"], data["shard"]) == (
        "pass",
        [],
        "pytest-split --splits 8 --group 8",
    )
    done, artifact = shard(source, "runner-nothing", "-k", "no_such_criterion")
    assert done.returncode != 0, done.stdout
    assert verdict_of(artifact)["status"] == "error"


def test_node_id_and_k_shards_merge(tmp_path: Path) -> None:
    """Shards by node ids and by ``-k`` merge like the plugins' shards."""
    source = origin(tmp_path, *SIX[:3])
    first = shard(source, "runner-1", "spec.md::AC-1", "spec.md::AC-2")
    second = shard(source, "runner-2", "-k", "AC_3 or AC-3")
    assert [done.returncode for done, _ in (first, second)] == [0, 0]
    done, checkout = merge(source, first[1], second[1])
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdict_of(checkout / ".acceptance")["complete"] is True


def refused(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--acceptance-merge refused: " in done.stderr
    assert reason in done.stderr, done.stderr


def test_a_merge_missing_a_shard_is_refused_naming_the_criteria(tmp_path: Path) -> None:
    source = origin(tmp_path, *SIX)
    runs = [shard(source, f"runner-{g}", "--splits", "3", "--group", str(g)) for g in (1, 2, 3)]
    done, checkout = merge(source, runs[0][1], runs[1][1])
    left_out = [c["id"] for c in verdict_of(runs[2][1])["criteria"]]
    refused(done, f"no shard ran {', '.join(left_out)} of spec.md (2 missing)")
    assert not (checkout / ".acceptance" / "verdict.json").exists()


def test_overlapping_shards_that_disagree_fail_the_criterion_with_both_results(
    tmp_path: Path,
) -> None:
    """AC-7 ran in both shards, failing on one runner only: its two results combine by the
    one rule, so it fails (exit 1), whichever shard is named first, and the merged verdict
    and report count both results. Overlaps that agree (AC-1 in both) pass, counted too."""
    source = origin(tmp_path, bash("AC-1", "true"), DEPENDS_ON_RUNNER)
    first = shard(source, "runner-1", "spec.md::AC-1", "spec.md::AC-7")
    second = shard(source, "runner-2", "spec.md::AC-7", env={"FAIL_HERE": "1"})
    orders = {
        "shards/1 passed, shards/2 failed": (first[1], second[1]),
        "shards/1 failed, shards/2 passed": (second[1], first[1]),
    }
    for words, order in orders.items():
        shutil.rmtree(source.parent / "merge", ignore_errors=True)
        done, checkout = merge(source, *order)
        assert done.returncode == 1, done.stdout + done.stderr
        data = verdict_of(checkout / ".acceptance")
        found = {c["id"]: (c["status"], c["results"]) for c in data["criteria"]}
        assert (data["status"], found) == ("fail", {"AC-1": ("passed", 1), "AC-7": ("failed", 2)})
        assert f"2 results: {words}" in done.stdout, done.stdout
    third = shard(source, "runner-3", "spec.md::AC-1", "spec.md::AC-7")
    assert merge_again(source, first[1], third[1]).returncode == 0
    again = verdict_of(source.parent / "merge" / ".acceptance")
    assert {c["id"]: c["results"] for c in again["criteria"]} == {"AC-1": 2, "AC-7": 2}


def merge_again(source: Path, *artifacts: Path) -> subprocess.CompletedProcess[str]:
    shutil.rmtree(source.parent / "merge")
    return merge(source, *artifacts)[0]


def test_shards_of_different_trees_or_spec_versions_are_refused(tmp_path: Path) -> None:
    """A runner on another commit (a project file changed): different trees. A runner whose
    spec differs: different spec versions too. A checkout whose spec differs from the
    shards': refused as well."""
    source = origin(tmp_path, *SIX)
    first = shard(source, "runner-1", "--splits", "2", "--group", "1")
    (source / "README").write_text("changed\n")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "another tree")
    second = shard(source, "runner-2", "--splits", "2", "--group", "2")
    done, _ = merge(source, first[1], second[1])
    refused(done, "the shards ran on different trees")
    (source / "spec.md").write_text(spec(*SIX, bash("AC-8", "true")))
    git(source, "commit", "-qam", "another spec")
    third = shard(source, "runner-3", "--splits", "2", "--group", "2")
    refused(merge_again(source, first[1], third[1]), "the shards ran different versions of spec.md")
    fourth = shard(source, "runner-4", "--splits", "2", "--group", "1")
    (source / "spec.md").write_text(spec(*SIX))
    git(source, "commit", "-qam", "the spec as it was")
    done = merge_again(source, third[1], fourth[1])
    refused(done, "spec.md in this checkout")
    assert "differs from the one the shards ran" in done.stderr


def test_a_directory_without_a_shard_verdict_is_refused(tmp_path: Path) -> None:
    source = origin(tmp_path, *SIX)
    checkout = clone(source, tmp_path / "merge")
    (checkout / "empty").mkdir()
    done = pytest_run(checkout, "--acceptance-merge", "empty")
    assert done.returncode == 4
    assert "--acceptance-merge empty: holds no verdict.json" in done.stderr


def test_the_gate_reads_a_shard_verdict_as_the_package_writes_it(tmp_path: Path) -> None:
    """The keys a shard verdict adds (the split, each spec's place and digest) are of the
    shape the Claude Code gate accepts over its pipe."""
    from pytest_acceptance.gate.verdict_check import shape_problem

    source = origin(tmp_path, *SIX)
    _, artifact = shard(source, "runner", "--num-shards", "2", "--shard-id", "1")
    data = verdict_of(artifact)
    assert data["shard"] == "pytest-shard --num-shards 2 --shard-id 1"
    ids = [f"AC-{n}" for n in range(1, 7)]
    assert shape_problem(data, ids) is None
    data["specs"][0]["sha256"] = {"nested": "object"}
    assert shape_problem(data, ids) == "a spec entry's 'sha256' has the wrong type"


def test_a_shard_problem_forbids_the_merged_pass(tmp_path: Path) -> None:
    """A shard whose run failed outside the criteria (a failing test beside the spec) has an
    error verdict: the merged verdict keeps its problem, naming the shard, and is no pass
    although every criterion passed."""
    source = origin(tmp_path, *SIX[:2])
    (source / "test_beside.py").write_text("def test_beside():\n    assert False\n")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "a test beside the spec")
    first = shard(source, "runner-1", "spec.md::AC-1", "test_beside.py")
    second = shard(source, "runner-2", "spec.md::AC-2")
    assert verdict_of(first[1])["status"] == "error"
    done, checkout = merge(source, first[1], second[1])
    assert done.returncode == 11, done.stdout + done.stderr
    merged = verdict_of(checkout / ".acceptance")
    assert merged["status"] == "error" and merged["counts"]["passed"] == 2
    assert any(p.startswith("shard shards/1: ") for p in merged["problems"]), merged["problems"]


PAUSE_IN_THE_MERGE = """
import os, time

def pytest_runtestloop(session):
    if os.environ.get("PAUSE_IN_THE_MERGE"):
        time.sleep(3)
"""


def test_a_merge_of_agent_criteria_calls_no_agent(tmp_path: Path) -> None:
    """Shards whose criteria an agent judged (a scripted judge command): the merge takes
    their results and starts no agent of its own (an agent-only run would otherwise start
    every check ahead)."""
    (tmp_path / "judge-home").mkdir()
    judge = Judge(tmp_path / "judge-home")
    agents = [
        criterion(f"AC-{n}", method="subagent", agent="reviewer", checks=["holds"])
        for n in range(1, 5)
    ]
    source = origin(tmp_path, *agents)
    # Without filterwarnings = error: an agent run leaves a ResourceWarning at exit.
    ini = f"[pytest]\nacceptance_agent_command = {judge.command}\n"
    (source / "pytest.ini").write_text(ini)
    # In the merge, time for an agent started ahead to reach the judge before the run ends.
    (source / "conftest.py").write_text(PAUSE_IN_THE_MERGE)
    git(source, "add", "-A")
    git(source, "commit", "-qm", "the judge")
    first = shard(source, "runner-1", "spec.md::AC-1", "spec.md::AC-2", "-n", "0")
    second = shard(source, "runner-2", "spec.md::AC-3", "spec.md::AC-4", "-n", "0")
    assert [done.returncode for done, _ in (first, second)] == [0, 0]
    assert len(judge.calls()) == 4
    pause = {"PAUSE_IN_THE_MERGE": "1"}
    done, checkout = merge(source, first[1], second[1], extra=("-n", "0"), env=pause)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(judge.calls()) == 4
    assert verdict_of(checkout / ".acceptance")["counts"]["passed"] == 4


def test_a_merge_takes_its_specs_from_the_shards_only(tmp_path: Path) -> None:
    """``--acceptance`` beside ``--acceptance-merge`` is a usage error saying why."""
    source = origin(tmp_path, *SIX)
    done = pytest_run(source, "--acceptance", "spec.md", "--acceptance-merge", "shards/1")
    assert done.returncode == 4
    assert "takes the specs from the shards' verdicts: leave out --acceptance" in done.stderr
