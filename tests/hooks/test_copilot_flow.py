"""End to end on the REAL GitHub Copilot CLI (pinned, tests/support/copilot_cli.py): the
gate installed as the docs say (hooks/copilot/install.py), a fresh HOME, the model scripted
by the Chat Completions stand-in on 127.0.0.1. Copilot runs the tool calls and our hooks
(userPromptSubmitted, preToolUse, agentStop) for real; the gate's verification is a real
`pytest --acceptance` run of the spec pinned from the user's prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hook_transcripts import REPO_ROOT
from support.copilot_harness import bash, call, say
from support.copilot_session import Session

from pytest_acceptance.gate import host_copilot

pytestmark = pytest.mark.e2e

Start = Callable[..., Session]
FIX = call("edit", path="value.txt", old_str="1", new_str="2")


def test_the_installer_writes_the_hooks_with_timeouts_above_the_gates_deadlines(
    copilot_session: Start,
) -> None:
    flow = copilot_session([])
    config = json.loads(flow.hooks_file.read_text())
    assert config["version"] == 1
    timeouts = {event: hooks[0]["timeoutSec"] for event, hooks in config["hooks"].items()}
    assert timeouts == {"userPromptSubmitted": 120, "preToolUse": 30, "agentStop": 900}
    assert host_copilot.hooks_problems(flow.project) == []


def test_an_honest_fix_ends_verified(copilot_session: Start) -> None:
    flow = copilot_session([FIX, say("AC-1 is met: value.txt says 2.")])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert (flow.project / "value.txt").read_text() == "2\n"
    assert flow.api.remaining == 0 and flow.blocks() == []
    assert "pytest-acceptance pinned the spec" in json.dumps(flow.api.requests[0])
    state = flow.flow()
    assert state["terminal"]["skill"] == "done"
    assert state["last_stop"]["decision"] == "allow"
    assert flow.forced() == []
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]
    assert flow.outcomes() == flow.outcomes(trusted=True)


def test_a_claim_of_done_on_a_failing_tree_is_refused_until_fixed(copilot_session: Start) -> None:
    flow = copilot_session([say("All done."), FIX, say("Now AC-1 is met.")])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0
    (block,) = flow.blocks()
    assert "these criteria fail in the gate's own verification run" in block
    assert "AC-1" in block
    assert flow.flow()["terminal"]["skill"] == "done"
    assert flow.forced() == []
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]


def test_an_honest_escalation_on_a_real_failure_is_accepted(copilot_session: Start) -> None:
    """Copilot's stop payload has no last message: the adapter reads it from the transcript."""
    escalation = (
        "ESCALATE: AC-1 (value file says two)\n"
        "Tried: reading value.txt; the value is owned by another team's export.\n"
        "Hypothesis: the spec needs the export changed. Resolution: ask its owner."
    )
    flow = copilot_session([bash("cat value.txt"), say(escalation)])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0 and flow.blocks() == []
    assert flow.flow()["terminal"]["skill"] == "escalate"
    assert (flow.project / "value.txt").read_text() == "1\n"  # still failing: escalated
    assert [o["outcome"] for o in flow.outcomes()] == ["escalated"]


def test_an_escalation_on_a_passing_tree_is_refused(copilot_session: Start) -> None:
    """The control of the escalation: the same words after the fix are no real failure."""
    flow = copilot_session([FIX, say("ESCALATE: AC-1 cannot be met."), say("AC-1 is met.")])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert len(flow.blocks()) == 1
    assert flow.flow()["terminal"]["skill"] == "done"


def test_a_stop_loop_ends_recorded_as_forced_at_copilots_cap(copilot_session: Start) -> None:
    """A model that only ever says done, on a tree the gate's idle cap would let run: Copilot
    ends the turn after its 8th block, and the gate records that stop as forced itself."""
    cap = host_copilot.CONTRACT.block_cap
    assert cap == 8
    flow = copilot_session([say("Done.")] * 12)
    run = flow.run(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS="50", ACCEPTANCE_HOOK_MAX_BLOCKS="50")
    assert flow.api.remaining == 12 - (cap + 1), run.output  # the first stop and 8 retries
    assert len(flow.blocks()) == cap
    (forced,) = flow.forced()
    assert forced["host"] == "copilot-cli"
    assert "the host's own cap of 8 blocks" in forced["forced_because"]
    assert "AC-1" in forced["open_reason"]
    state = flow.flow()
    assert state["status"] == "closed" and "terminal" not in state
    assert [o["outcome"] for o in flow.outcomes()] == ["forced"]


def test_the_gates_idle_cap_forces_first_when_nothing_changes(copilot_session: Start) -> None:
    flow = copilot_session([say("Done.")] * 10)
    run = flow.run(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS="3")
    assert flow.api.remaining == 10 - 4, run.output  # the first stop and three refused retries
    assert len(flow.blocks()) == 3
    (forced,) = flow.forced()
    assert "left the working tree as it was" in forced["forced_because"]
    assert [o["outcome"] for o in flow.outcomes()] == ["forced"]


def test_a_prompt_without_the_flow_pins_nothing(copilot_session: Start) -> None:
    """Control: an ordinary prompt is no flow; its stop is not judged."""
    flow = copilot_session([say("Hello.")])
    run = flow.run(prompt="Say hello.")
    assert run.returncode == 0, run.output
    assert not list((flow.state / "flows").glob("*/flow.json"))
    assert flow.blocks() == [] and flow.outcomes() == []


def test_with_claude_codes_hooks_too_the_gate_judges_each_stop_once(
    copilot_session: Start, tmp_path: Path
) -> None:
    """Claude Code's whole hook set of this plugin in `.claude/settings.json` beside ours:
    Copilot runs both (each Claude Code hook's payload is logged on its way in). Claude
    Code's hooks recognise Copilot's payloads and step aside (no flow of theirs is open), so
    the lazy done gets one refusal, Copilot's, and the flow ends verified once; Claude
    Code's state pins nothing."""
    flow = copilot_session([say("All done."), FIX, say("Now AC-1 is met.")])
    log = tmp_path / "claude-hooks.jsonl"
    hooks = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    for groups in hooks.values():
        for hook in (hook for group in groups for hook in group["hooks"]):
            command = hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(REPO_ROOT))
            hook["command"] = f"(cat; echo) | tee -a {log} | {command}"
    (flow.project / ".claude").mkdir()
    (flow.project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    claude_state = tmp_path / "claude-plugin-data"
    run = flow.run(CLAUDE_PLUGIN_DATA=str(claude_state))
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0
    (block,) = flow.blocks()
    assert block.count("these criteria fail in the gate's own verification run") == 1
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    stops = [payload for payload in seen if payload.get("hook_event_name") == "Stop"]
    assert len(stops) == 2 and all("stop_reason" in stop for stop in stops), seen
    assert not list(claude_state.glob("flows/*/flow.json"))
