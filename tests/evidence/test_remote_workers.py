"""Criteria on xdist workers in folders of their own (stand-ins for other machines): real
``popen//chdir=`` workers and real execnet socket servers on 127.0.0.1, the project sent
with ``--rsyncdir``. The criteria run in the copies; results, evidence and output come
back over xdist's channel and the controller alone writes fragments, report and verdict,
as for a local run."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.execnet_servers import socket_servers
from support.runs import BASE, assert_clean, project, verdict
from support.specs import bash, spec

from pytest_acceptance.evidence.fragments import evidence_path, read_evidence, spec_dir

# xdist says --rsyncdir is deprecated (it still is how xdist sends a project), and
# execnet's socket gateways shut their sockets down without closing them (whether Python
# says so depends on when the collector runs): neither is shown.
INI = (
    "[pytest]\nacceptance_retries = 0\n"
    "filterwarnings =\n    error\n    ignore:The --rsyncdir:DeprecationWarning\n"
    "    ignore:unclosed <socket.socket:ResourceWarning\n"
)
# Passes only where the project's file is: in the worker's copy of the project.
READS_PROJECT = "grep -q hello data.txt && pwd"


def make_project(root: Path, *blocks: str) -> Path:
    project(root, spec(*blocks), ini=INI)
    (root / "data.txt").write_text("hello\n")
    return root


def run_remote(
    root: Path, *args: str, spec_arg: str = "spec.md", timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BASE, "--acceptance", spec_arg, "-d", "--rsyncdir", ".", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def fragments(root: Path) -> dict[str, dict[str, Any]]:
    loaded = read_evidence(evidence_path(root, root / "spec.md"))
    return {fragment["id"]: fragment for _, fragment in loaded}


@pytest.mark.parametrize("spec_arg", ["spec.md", "sp*.md"])
def test_popen_chdir_workers_run_a_relative_spec_in_their_copy(
    tmp_path: Path, spec_arg: str
) -> None:
    """``--acceptance spec.md`` (relative, or a glob) with ``popen//chdir=DIR --rsyncdir
    .``: no INTERNALERROR; each criterion ran in a worker's copy of the project (the
    project file is there, the printed folder is the copy's), and the output printed there
    is in the fragment the controller wrote; the workers' folders hold no fragments."""
    root = make_project(tmp_path / "project", bash("AC-1", READS_PROJECT), bash("AC-2", "pwd"))
    machines = [tmp_path / "machine-1", tmp_path / "machine-2"]
    for machine in machines:
        machine.mkdir()
    txs = [f"--tx=popen//chdir={machine}" for machine in machines]
    done = run_remote(root, *txs, spec_arg=spec_arg)
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 0, output
    assert (verdict(root)["status"], verdict(root)["exit_code"]) == ("pass", 0)
    found = fragments(root)
    assert sorted(found) == ["AC-1", "AC-2"]
    for fragment in found.values():
        assert fragment["status"] == "passed"
        ran_in = Path(fragment["output"].strip())
        assert ran_in.name == "project" and ran_in.parent in machines, fragment["output"]
    report = json.loads((spec_dir(root, root / "spec.md") / "report.json").read_text())
    assert report["complete"] and report["problems"] == []
    assert not [p for m in machines for p in m.rglob("*") if p.name == "evidence.jsonl"]
    assert not [p for m in machines for p in m.rglob("*") if p.name == "fragments"]


def test_socket_workers_bring_a_failure_home_with_its_evidence(tmp_path: Path) -> None:
    """Two execnet socket servers in their own folders: the failing criterion fails (exit 1,
    verdict fail), the passing ones pass, and the failure's output tail, printed on the
    remote side, is in the controller's fragment and report."""
    failing = bash("AC-3", "echo remote-says-no; pwd; false")
    root = make_project(
        tmp_path / "project", bash("AC-1", READS_PROJECT), bash("AC-2", "true"), failing
    )
    with socket_servers(tmp_path / "machines", 2) as servers:
        done = run_remote(root, *(f"--tx={server.tx}" for server in servers))
        folders = [server.folder for server in servers]
    output = done.stdout + done.stderr
    assert_clean(output)
    assert done.returncode == 1, output
    data = verdict(root)
    assert (data["status"], data["exit_code"], data["problems"]) == ("fail", 1, [])
    found = fragments(root)
    assert {ident: f["status"] for ident, f in found.items()} == {
        "AC-1": "passed",
        "AC-2": "passed",
        "AC-3": "failed",
    }
    assert "remote-says-no" in found["AC-3"]["output"]
    assert any(str(folder) in found["AC-3"]["output"] for folder in folders)
    report = (spec_dir(root, root / "spec.md") / "report.md").read_text()
    assert any(str(folder) in report for folder in folders)  # its last output line


@pytest.mark.parametrize("restarts", [[], ["--max-worker-restart=0"]], ids=["restart", "none"])
def test_a_machine_that_goes_away_mid_run_is_an_error_never_a_pass(
    tmp_path: Path, restarts: list[str]
) -> None:
    """The socket server running a criterion is killed with its worker while the criterion
    runs: that criterion is an error and the verdict is an error (exit 11), whether xdist
    tries to start another worker there (and cannot reach the machine: no INTERNALERROR)
    or not."""
    marker = tmp_path / "running"
    slow = bash("AC-1", f"pwd > {marker}; sleep 60")
    root = make_project(tmp_path / "project", slow, bash("AC-2", "true"), bash("AC-3", "true"))
    with socket_servers(tmp_path / "machines", 2) as servers:
        run = subprocess.Popen(
            [*BASE, "--acceptance", "spec.md", "-d", "--rsyncdir", ".", *restarts]
            + [f"--tx={server.tx}" for server in servers],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text().strip()):
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, "AC-1 never started"
            time.sleep(0.05)
        running_in = Path(marker.read_text().strip())
        [machine] = [s for s in servers if running_in.is_relative_to(s.folder)]
        machine.kill()
        output = run.communicate(timeout=120)[0]
    assert_clean(output)
    assert run.returncode == 11, output
    data = verdict(root)
    assert data["status"] == "error"
    statuses = {c["id"]: c["status"] for c in data["criteria"]}
    assert statuses["AC-1"] == "error", statuses
    assert data["counts"]["passed"] < 3


def test_a_spec_outside_every_rsync_root_is_a_usage_error(tmp_path: Path) -> None:
    """A worker in another folder without ``--rsyncdir``: xdist cannot send the spec; the
    run stops with a usage error naming the fix, not an INTERNALERROR."""
    root = make_project(tmp_path / "project", bash("AC-1", "true"))
    machine = tmp_path / "machine"
    machine.mkdir()
    done = subprocess.run(
        [*BASE, "--acceptance", "spec.md", "-d", f"--tx=popen//chdir={machine}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert_clean(done.stdout + done.stderr)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "not relative to an rsync root" in done.stderr
    assert "--rsyncdir ." in done.stderr
