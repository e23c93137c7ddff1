"""End to end on the REAL OpenAI Codex CLI (pinned, tests/support/codex_cli.py): the gate
installed as the docs say (hooks/codex/install.py), a fresh CODEX_HOME, the model scripted
by the Responses API stand-in on 127.0.0.1. Codex runs the commands, the patches and our
hooks for real; the gate's verification is a real `pytest --acceptance` run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest
from hook_transcripts import REPO_ROOT
from support.codex_harness import Turn, replace_file_patch, say, shell_write
from support.codex_session import Session

pytestmark = pytest.mark.e2e

Start = Callable[[list[Turn]], Session]


FIX = replace_file_patch("value.txt", "1", "2")


def test_an_honest_fix_ends_verified(codex_session: Start) -> None:
    flow = codex_session([FIX, say("AC-1 is met: value.txt says 2.")])
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert flow.api.errors == [] and flow.api.remaining == 0
    assert flow.blocks() == []
    first = json.dumps(flow.api.requests[0])
    assert "# $acceptance-implement" in first  # Codex injected the installed skill
    assert "pytest-acceptance pinned the spec" in first  # the prompt hook's note
    state = flow.flow()
    assert state["terminal"]["skill"] == "done"
    assert state["last_stop"]["decision"] == "allow"
    assert flow.forced() == []
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]
    assert flow.outcomes() == flow.outcomes(trusted=True)


def test_a_claim_of_done_on_a_failing_tree_is_refused_until_fixed(codex_session: Start) -> None:
    flow = codex_session([say("All done."), FIX, say("Now AC-1 is met.")])
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert flow.api.errors == [] and flow.api.remaining == 0
    blocks = flow.blocks()
    assert len(blocks) == 1
    assert "these criteria fail in the gate's own verification run" in blocks[0]
    assert "AC-1" in blocks[0]
    state = flow.flow()
    assert state["terminal"]["skill"] == "done"
    assert flow.forced() == []


def test_an_honest_escalation_on_a_real_failure_is_accepted(codex_session: Start) -> None:
    escalation = (
        "ESCALATE: AC-1 (value file says two)\n"
        "Tried: reading value.txt; the value is owned by another team's export.\n"
        "Hypothesis: the spec needs the export changed. Resolution: ask its owner."
    )
    flow = codex_session([say(escalation)])
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert flow.api.remaining == 0 and flow.blocks() == []
    state = flow.flow()
    assert state["terminal"]["skill"] == "escalate"
    assert (flow.project / "value.txt").read_text() == "1\n"  # still failing: escalated
    assert [o["outcome"] for o in flow.outcomes()] == ["escalated"]


def test_a_lazy_done_is_not_an_escalation(codex_session: Start) -> None:
    """Control beside the escalation: the same failing tree, a claim of done, is refused."""
    flow = codex_session([say("Everything is done, ESCALATE: nothing."), FIX, say("Fixed.")])
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert len(flow.blocks()) == 1


def test_a_stop_loop_ends_recorded_as_forced(codex_session: Start) -> None:
    flow = codex_session([say("Done.")] * 10)
    run = flow.run(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS="3")
    assert run.returncode == 0, run.describe()
    assert flow.api.remaining == 10 - 4  # the first stop and three blocked retries
    assert len(flow.blocks()) == 3
    (forced,) = flow.forced()
    assert forced["host"] == "codex"
    assert "left the working tree as it was" in forced["forced_because"]
    assert "AC-1" in forced["open_reason"]
    state = flow.flow()
    assert state["status"] == "closed" and "terminal" not in state
    assert (flow.setup.state / "forced-stops.jsonl").exists()
    assert [o["outcome"] for o in flow.outcomes()] == ["forced"]


def test_the_block_cap_holds_while_the_tree_changes(codex_session: Start) -> None:
    """Progress that never meets the criteria does not loop for ever either."""
    turns: list[Turn] = []
    for value in range(3, 9):
        turns += [shell_write("value.txt", f"{value}\n"), say("Done.")]
    flow = codex_session(turns)
    run = flow.run(ACCEPTANCE_HOOK_MAX_BLOCKS="2")
    assert run.returncode == 0, run.describe()
    assert len(flow.blocks()) == 2
    (forced,) = flow.forced()
    assert "ACCEPTANCE_HOOK_MAX_BLOCKS=2" in forced["forced_because"]


def test_installing_again_keeps_one_trust_entry_per_hook(codex_session: Start) -> None:
    flow = codex_session([FIX, say("Done.")])
    again = subprocess.run(
        [sys.executable, str(REPO_ROOT / "hooks" / "codex" / "install.py"), str(flow.project)],
        env=flow.setup.env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    config = (flow.setup.codex_home / "config.toml").read_text()
    assert config.count("[hooks.state.") == 3
    assert config.count(f"[projects.{json.dumps(str(flow.project))}]") == 1
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert [o["outcome"] for o in flow.outcomes(trusted=True)] == ["verified"]
