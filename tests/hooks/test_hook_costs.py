"""What a Stop costs: the git processes it starts and the writes of the pinned flow.

The hook runs as hooks.json runs it (``python3 -E -S``, the real script, real git
repositories, the real gate), under a Python audit hook that logs every subprocess it
starts and every rename (each atomic write of the plugin's state ends in one). The audit
hook only watches: nothing is replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from hook_transcripts import (
    REPO_ROOT,
    SESSION_ID,
    TranscriptBuilder,
    make_pass,
    make_repo,
    plugin_data,
    stop_payload,
    write_verdict,
)
from support import gate_python

# Runs a hook script with an audit hook that appends one JSON line per subprocess started
# ("popen", argv) and per rename ("rename", destination) to $AUDIT_LOG.
_AUDITED = """
import json, os, runpy, sys
log = open(os.environ["AUDIT_LOG"], "a", buffering=1)
def audit(event, args):
    if event == "subprocess.Popen":
        log.write(json.dumps(["popen", [str(a) for a in args[1]]]) + "\\n")
    elif event == "os.rename":
        log.write(json.dumps(["rename", str(args[1])]) + "\\n")
sys.addaudithook(audit)
script = sys.argv[1]
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


class Audited:
    def __init__(self, output: dict[str, Any] | None, events: list[list[Any]]) -> None:
        self.output = output or {}
        self.events = events

    @property
    def blocked(self) -> bool:
        return self.output.get("decision") == "block"

    def git_calls(self, *words: str) -> list[list[str]]:
        return [
            argv
            for kind, argv in self.events
            if kind == "popen" and Path(argv[0]).name == "git" and set(words) <= set(argv)
        ]

    def writes_of(self, name: str) -> int:
        return sum(1 for kind, target in self.events if kind == "rename" and target.endswith(name))


def audited_stop(payload: dict[str, Any], tmp_path: Path) -> Audited:
    log = tmp_path / "audit.jsonl"
    log.unlink(missing_ok=True)
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_HOOK_", "CLAUDE"))
    }
    environment.update(
        CLAUDE_PLUGIN_ROOT=str(REPO_ROOT),
        CLAUDE_PLUGIN_DATA=str(plugin_data()),
        ACCEPTANCE_GATE_PYTHON=gate_python.EXECUTABLE,
        AUDIT_LOG=str(log),
    )
    script = REPO_ROOT / "hooks" / "stop_implement_hook.py"
    done = subprocess.run(
        ["python3", "-E", "-S", "-c", _AUDITED, str(script)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=environment,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    output = json.loads(done.stdout) if done.stdout.strip() else None
    return Audited(output, events)


def flow_json() -> dict[str, Any]:
    (folder,) = (plugin_data() / "flows").iterdir()
    return json.loads((folder / "flow.json").read_text())


# --- git: what the pin knows is not asked again ----------------------------------------------


def test_evidence_before_done_runs_no_git_when_the_spec_is_in_the_pinned_repository(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """/implement typed in a subfolder: the pin holds the repository's top level, so the
    verdict at <repo>/.acceptance is found (the block says "call done") without any
    `git rev-parse` (the hook ran up to three before)."""
    subfolder = repo / "docs"
    subfolder.mkdir()
    builder = TranscriptBuilder(subfolder)
    builder.implement("../specs/feature.md")
    make_pass(repo)
    builder.verify(spec)
    transcript = builder.write(tmp_path / "session.jsonl")
    result = audited_stop(stop_payload(transcript, subfolder), tmp_path)
    assert result.blocked
    assert "passed on the current tree: call /pytest-acceptance:done" in result.output["reason"]
    assert result.git_calls("rev-parse") == []


def test_evidence_for_a_spec_in_another_repository_runs_no_git(repo: Path, tmp_path: Path) -> None:
    """A spec outside the pinned repository, verified from its own repository: its verdict
    is found in the repository holding the spec's folder, found on disk: no git runs."""
    other = make_repo(tmp_path / "other")
    spec = other / "specs" / "feature.md"
    spec.parent.joinpath("nested").mkdir()
    moved = spec.parent / "nested" / "feature.md"
    spec.rename(moved)
    builder = TranscriptBuilder(repo)
    builder.implement(str(moved))
    make_pass(repo)
    (other / "app.py").write_text("VALUE = 2\n")
    write_verdict(other, moved, "pass")
    builder.verify(moved)
    transcript = builder.write(tmp_path / "session.jsonl")
    result = audited_stop(stop_payload(transcript, repo), tmp_path)
    assert result.blocked
    assert "passed on the current tree: call /pytest-acceptance:done" in result.output["reason"]
    assert result.git_calls("rev-parse") == []


# --- the pinned flow: one write per Stop -------------------------------------------------------


def test_an_accepted_done_writes_the_pinned_flow_once_per_stop(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """The Stop that lets /done through records the terminal and its own decision in one
    atomic write of flow.json (two before). The first Stop also stores the gate's run (its
    own write); the second reuses that result: exactly one write, the same record."""
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    make_pass(repo)
    builder.verify(spec)
    builder.done()
    builder.text("## Implementation Complete\nAC-1 verified.")
    transcript = builder.write(tmp_path / "session.jsonl")
    first = audited_stop(stop_payload(transcript, repo), tmp_path)
    assert not first.blocked, first.output
    assert first.writes_of("flow.json") == 2  # the gate's stored run, then the Stop's record
    recorded = flow_json()
    assert recorded["session_id"] == SESSION_ID
    assert recorded["terminal"]["skill"] == "done" and recorded["terminal"]["fingerprint"]
    assert recorded["last_stop"]["decision"] == "allow"
    assert recorded["last_stop"]["at"] >= recorded["terminal"]["at"]

    again = audited_stop(stop_payload(transcript, repo), tmp_path)
    assert not again.blocked, again.output
    assert again.writes_of("flow.json") == 1
    assert again.writes_of(".json") == 1  # no result file either: the stored one is reused
    record = flow_json()
    assert record["terminal"]["fingerprint"] == recorded["terminal"]["fingerprint"]
    assert record["last_stop"]["decision"] == "allow"
    assert record["gate_runs"] == recorded["gate_runs"]
