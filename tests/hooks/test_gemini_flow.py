"""End to end on the REAL Gemini CLI (pinned, tests/support/gemini_cli.py): the gate
installed as the docs say (hooks/gemini/install.py), a fresh HOME, the model scripted by the
Gemini API stand-in on 127.0.0.1. Gemini runs the tool calls and our hooks (BeforeAgent,
BeforeTool, AfterAgent) for real; the gate's verification is a real `pytest --acceptance`
run of the spec pinned from the user's prompt."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from support.gemini_harness import Turn, call, say
from support.gemini_session import Session

from pytest_acceptance.gate import gemini_install

pytestmark = pytest.mark.e2e

Start = Callable[[list[Turn]], Session]
FIX = call("write_file", file_path="value.txt", content="2\n")


def test_the_installer_writes_the_hooks_with_timeouts_above_the_gates_deadlines(
    gemini_session: Start,
) -> None:
    flow = gemini_session([])
    settings = json.loads((flow.project / ".gemini" / "settings.json").read_text())
    assert settings["hooksConfig"]["enabled"] is True
    timeouts = {
        event: groups[0]["hooks"][0]["timeout"] for event, groups in settings["hooks"].items()
    }
    assert timeouts == {"BeforeAgent": 120_000, "BeforeTool": 30_000, "AfterAgent": 900_000}
    trusted = json.loads((flow.home / ".gemini" / gemini_install.TRUSTED_FOLDERS).read_text())
    assert trusted == {str(flow.project.resolve()): "TRUST_FOLDER"}


def test_an_honest_fix_ends_verified(gemini_session: Start) -> None:
    flow = gemini_session([FIX, say("AC-1 is met: value.txt says 2.")])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0 and flow.blocks() == []
    assert "pytest-acceptance pinned the spec" in json.dumps(flow.api.requests[0])
    state = flow.flow()
    assert state["terminal"]["skill"] == "done"
    assert state["last_stop"]["decision"] == "allow"
    assert flow.forced() == []
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]
    assert flow.outcomes() == flow.outcomes(trusted=True)


def test_a_claim_of_done_on_a_failing_tree_is_denied_until_fixed(gemini_session: Start) -> None:
    flow = gemini_session([say("All done."), FIX, say("Now AC-1 is met.")])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0
    (block,) = flow.blocks()
    assert "these criteria fail in the gate's own verification run" in block
    assert "AC-1" in block
    assert flow.flow()["terminal"]["skill"] == "done"
    assert flow.forced() == []
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]


def test_a_stop_loop_ends_recorded_as_forced_never_verified(gemini_session: Start) -> None:
    flow = gemini_session([say("Done.")] * 10)
    run = flow.run(ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS="3")
    assert flow.api.remaining == 10 - 4, run.output  # the first stop and three denied retries
    assert len(flow.blocks()) == 3
    (forced,) = flow.forced()
    assert forced["host"] == "gemini-cli"
    assert "left the working tree as it was" in forced["forced_because"]
    assert "AC-1" in forced["open_reason"]
    state = flow.flow()
    assert state["status"] == "closed" and "terminal" not in state
    assert [o["outcome"] for o in flow.outcomes()] == ["forced"]
    assert "FORCED, NOT verified" in run.output  # Gemini's stopReason, said to the user


def test_a_prompt_without_the_flow_pins_nothing(gemini_session: Start) -> None:
    """Control: an ordinary prompt is no flow; its stop is not judged."""
    flow = gemini_session([say("Hello.")])
    run = flow.run(prompt="Say hello.")
    assert run.returncode == 0, run.output
    assert not list((flow.state / "flows").glob("*/flow.json"))
    assert flow.blocks() == [] and flow.outcomes() == []


def test_an_honest_escalation_on_a_real_failure_is_accepted(gemini_session: Start) -> None:
    escalation = (
        "ESCALATE: AC-1 (value file says two)\n"
        "Tried: reading value.txt; the value is owned by another team's export.\n"
        "Hypothesis: the spec needs the export changed. Resolution: ask its owner."
    )
    flow = gemini_session([say(escalation)])
    run = flow.run()
    assert run.returncode == 0, run.output
    assert flow.api.remaining == 0 and flow.blocks() == []
    assert flow.flow()["terminal"]["skill"] == "escalate"
    assert (flow.project / "value.txt").read_text() == "1\n"  # still failing: escalated
    assert [o["outcome"] for o in flow.outcomes()] == ["escalated"]
