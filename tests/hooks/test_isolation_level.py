"""The gate run's isolation level is said where a person acts on it: at /implement and in
every answer of a flow's stop and /done, with the one sentence gate/isolation.py holds for
that level; at full, /done and /escalate say what the run saw, and nothing else says a
word. Each test runs at every level this machine can be put at, the lower ones for real
(the wrapper hidden: support/isolation.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import hook_transcripts
import pytest
from hook_transcripts import (
    REPO_ROOT,
    SPEC_TEXT,
    TranscriptBuilder,
    ask_gate,
    make_repo,
    pinned_flow,
    run_hook,
    stop_payload,
)
from support.isolation import LEVELS

from pytest_acceptance.gate import installation, isolation

SPEC = "specs/feature.md"


def said(level: str, message: str) -> None:
    """The level's sentence is in `message` below full, and no level's sentence at full."""
    warning = isolation.LEVELS[level].warning
    if warning is None:
        assert not any(
            other.warning and other.warning in message for other in isolation.LEVELS.values()
        ), message
    else:
        assert warning in message, message


@pytest.mark.parametrize("isolation_level", LEVELS, indirect=True)
def test_a_hook_finds_the_level_it_is_run_at(isolation_level: str) -> None:
    """The probe of a hook process (apart.prefix) sees the level the test asked for."""
    code = "from pytest_acceptance.gate import isolation; print(isolation.current().name)"
    done = subprocess.run(
        [*hook_transcripts.HOOK_WRAPPER, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == isolation_level


@pytest.mark.parametrize("isolation_level", LEVELS, indirect=True)
def test_implement_says_what_the_level_leaves_open(tmp_path: Path, isolation_level: str) -> None:
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    expanded = TranscriptBuilder(repo).implement(SPEC)
    assert expanded is not None and not expanded.blocked
    said(isolation_level, expanded.message)


@pytest.mark.parametrize("isolation_level", LEVELS, indirect=True)
def test_every_stop_and_done_answer_says_it(tmp_path: Path, isolation_level: str) -> None:
    """A stop blocked before /verify, a /done the gate refuses on AC-1: each answer carries
    the sentence; the block and the denial are unchanged."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = pinned_flow(repo)
    builder.text("Working on it.")
    transcript = builder.write(tmp_path / "session.jsonl")
    stop = run_hook("Stop", stop_payload(transcript, repo))
    assert stop.blocked and "have not verified" in stop.reason, stop.stdout
    said(isolation_level, stop.message)
    builder.verify(repo / SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied and "AC-1" in done.deny_reason, done.stdout
    said(isolation_level, done.message)
    assert isolation.LEVELS[isolation_level].said in done.message, done.message


def test_at_full_done_says_what_the_run_saw() -> None:
    """/done's and /escalate's answer names the level at full too: what the run saw, no
    warning (in-process: the sentence each level's answer carries)."""
    full = isolation.LEVELS[isolation.FULL]
    assert full.warning is None
    assert full.said.endswith("(isolation: full).")
    assert "declared inputs (acceptance_reads)" in full.said
    for level in (isolation.VIEW, isolation.PID, isolation.NONE):
        assert isolation.LEVELS[level].said == isolation.LEVELS[level].warning


def test_outside_a_flow_a_stop_says_nothing(tmp_path: Path) -> None:
    """The sentence is for flows: a session without /implement is left alone."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = TranscriptBuilder(repo)
    builder.text("Hello.")
    transcript = builder.write(tmp_path / "session.jsonl")
    assert run_hook("Stop", stop_payload(transcript, repo)).output is None


def test_implement_names_a_hook_missing_from_hooks_json(tmp_path: Path) -> None:
    """A plugin whose hooks.json lost its Stop hook: /implement says so and how to fix it."""
    root = tmp_path / "plugin"
    for part in ("hooks", "skills", ".claude-plugin", "pytest_acceptance"):
        shutil.copytree(REPO_ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    config = json.loads((root / "hooks" / "hooks.json").read_text())
    del config["hooks"]["Stop"]
    (root / "hooks" / "hooks.json").write_text(json.dumps(config))
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    payload = hook_transcripts.expansion_payload(repo, SPEC)
    TranscriptBuilder(repo).write(Path(payload["transcript_path"]))
    expanded = run_hook("UserPromptExpansion", payload, plugin_root=root)
    assert "does not run stop_implement_hook.py on Stop" in expanded.message
    assert "claude plugin install pytest-acceptance@pytest-acceptance" in expanded.message
    assert installation.hook_commands(REPO_ROOT)[1] == []  # the repository's own is whole
