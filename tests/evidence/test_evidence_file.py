"""The evidence file of a spec in real runs: the evidence of every finished criterion
survives a SIGKILL of the whole run, and the controller reads each spec's evidence once
(no file per criterion, no read-back of one)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import textwrap
from pathlib import Path

import pytest
from support.processes import kill_all
from support.runs import assert_clean, project, recorded, run, start, wait_for
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import evidence_path, read_evidence

# The last criterion waits until the controller's file holds the three before it (whole
# lines), then says it runs and sleeps: the run is killed while it does.
WAITS = (
    "for i in $(seq 600); do "
    "[ \"$(grep -c '' .acceptance/specs/*/evidence.jsonl 2>/dev/null)\" = 3 ] && break; "
    "sleep 0.1; done; echo $$ > started; exec sleep 300"
)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_run_killed_midway_leaves_the_evidence_of_every_finished_criterion(
    tmp_path: Path, workers: str
) -> None:
    criteria = (
        bash("AC-1", "true"),
        bash("AC-2", "echo two; false", retries=0),
        bash("AC-3", "true"),
        bash("AC-4", WAITS),
    )
    root = project(tmp_path, spec(*criteria))
    process = start(root, "-n", workers, session=True)
    try:
        wait_for(root / "started", process)
        os.killpg(process.pid, signal.SIGKILL)  # the controller and its workers, at once
        process.wait(60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        kill_all(recorded(root / "started"))  # the criterion's sleep, in its own session
    assert process.returncode == -signal.SIGKILL
    found = {f["id"]: f for _, f in read_evidence(evidence_path(root, root / "spec.md"))}
    assert {ident: f["status"] for ident, f in found.items()} == {
        "AC-1": "passed",
        "AC-2": "failed",
        "AC-3": "passed",
    }
    assert found["AC-2"]["output"].strip() == "two" and found["AC-2"]["attempts"] == 1


# Counts, in every process of the run, the files opened under .acceptance/specs/.
COUNTER = textwrap.dedent(
    """
    import json, os, sys

    OPENED = []

    def _audit(event, args):
        if event == "open" and isinstance(args[0], (str, os.PathLike)):
            path = os.fspath(args[0])
            if "/.acceptance/specs/" in path:
                OPENED.append((path, args[2] & os.O_ACCMODE == os.O_RDONLY))

    sys.addaudithook(_audit)

    def pytest_unconfigure(config):
        if not hasattr(config, "workerinput"):
            with open(os.environ["OPENED_LOG"], "w") as log:
                json.dump(OPENED, log)
    """
)


def test_the_controller_reads_each_specs_evidence_once_and_writes_no_file_per_criterion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 40
    root = tmp_path / "project"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    for name in ("one", "two"):
        (root / f"{name}.md").write_text(
            spec(*(bash(f"AC-{n}", "true") for n in range(1, count + 1)))
        )
    (tmp_path / "counter.py").write_text(COUNTER)
    log = tmp_path / "opened.json"
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the run's processes load counter.py
    monkeypatch.setenv("OPENED_LOG", str(log))
    done = run(root, "--acceptance", "two.md", "-p", "counter", "-n", "2", name="one.md")
    assert_clean(done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    opened = json.loads(log.read_text())
    for name in ("one", "two"):
        evidence = str(evidence_path(root, root / f"{name}.md"))
        reads = [path for path, reading in opened if path == evidence and reading]
        assert len(reads) == 1, opened
        assert len(list(read_evidence(Path(evidence)))) == count
        folder = os.path.dirname(evidence)
        assert len([path for path, _ in opened if path.startswith(folder)]) < 10, opened
        assert sorted(os.listdir(folder)) == [
            "baseline.json",
            "evidence.jsonl",
            "report.json",
            "report.md",
        ]
