"""Inside an /implement flow, only the sign-offs that existed at /implement count: the pin
copies the sign-offs file, and the gate's own verification run reads that copy. Real hook
subprocess for the pin, real `pytest --acceptance` runs (the sign-off command and the
gate's), a real git repository."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hook_transcripts import SESSION_ID, expansion_payload, make_pass, make_repo, run_hook

from pytest_acceptance.gate import gate
from pytest_acceptance.gate.flow_state import SIGNOFF_FILE, Flow

SPEC_WITH_MANUAL = """# Spec

#### AC-1: works
```yaml
method: bash
command: "grep -qx 'VALUE = 2' app.py"
```

#### AC-2: reads well
```yaml
method: manual
checks: ["a person finds it friendly"]
```
"""


SIGN_OFF_AC2 = ("--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", SPEC_WITH_MANUAL)


def person_signs_off(repo: Path) -> None:
    """The real command, as a person runs it in the project."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PYTEST"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--acceptance", "specs/feature.md", *SIGN_OFF_AC2],
        cwd=repo,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / SIGNOFF_FILE).is_file()


def judge_done(plugin_state: Path, monkeypatch: pytest.MonkeyPatch) -> str | None:
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(plugin_state))
    flow = Flow.load(SESSION_ID)
    assert flow is not None
    result = gate.run(flow, time.monotonic() + 300, reuse=False)
    return gate.done_problem(flow, result)


def test_a_sign_off_made_before_implement_lets_the_gate_accept_done(
    repo: Path, plugin_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person_signs_off(repo)
    run_hook("UserPromptExpansion", expansion_payload(repo, "specs/feature.md"))
    make_pass(repo)
    assert judge_done(plugin_state, monkeypatch) is None


def test_a_sign_off_written_during_the_flow_never_counts(
    repo: Path, plugin_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_hook("UserPromptExpansion", expansion_payload(repo, "specs/feature.md"))
    person_signs_off(repo)  # after /implement: in the project, but not in the pin
    make_pass(repo)
    problem = judge_done(plugin_state, monkeypatch)
    assert problem is not None and "manual criteria remain: AC-2" in problem
