"""End to end: the REAL Claude Code CLI (pinned) loads this repository as a plugin
(`--plugin-dir`) and talks to the scripted Messages API stand-in on 127.0.0.1. The model's
turns are scripted; the CLI runs the tools, the skills and our hooks for real, and the
verification is a real `pytest --acceptance` run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import BLOCK_TAG, REPO_ROOT, implement_arguments
from support import gate_python
from support.claude_harness import (
    MessagesStandIn,
    StandInFactory,
    claude_env,
    read_transcript,
    run_claude,
    text,
    tool_results,
    tool_use,
    transcript_path,
)

pytestmark = pytest.mark.e2e

PYTEST = f"{gate_python.EXECUTABLE} -m pytest --acceptance spec.md -p no:cacheprovider"


def implement(
    project: Path,
    home: Path,
    claude_bin: Path,
    api: MessagesStandIn,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    environment = claude_env(home, api.url, claude_bin)
    # The gate's own runs use the tests' gate interpreter (the project has no .venv here).
    environment["ACCEPTANCE_GATE_PYTHON"] = gate_python.EXECUTABLE
    environment.update(env or {})
    return run_claude(
        implement_arguments("spec.md", 12),
        project,
        environment,
        timeout=240,
    )


def carries_block(request: dict[str, Any]) -> bool:
    return BLOCK_TAG in json.dumps(request)


def test_premature_stop_is_blocked(
    project: Path, claude_home: Path, claude_bin: Path, messages_api: StandInFactory
) -> None:
    api = messages_api([text("All criteria are met, I am done."), text("Stopping anyway.")])
    result = implement(
        project, claude_home, claude_bin, api, env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "1"}
    )
    assert api.remaining == 0
    assert not carries_block(api.requests[0])
    blocked = json.dumps(api.requests[1])
    assert BLOCK_TAG in blocked  # the model was sent back to work with our reason
    assert "have not verified it" in blocked
    # The second attempt hit the (lowered) cap: let through, but recorded as forced.
    forced = (project / ".acceptance" / "forced-stops.jsonl").read_text().splitlines()
    assert len(forced) == 1
    assert json.loads(forced[0])["spec"] == str(project / "spec.md")
    assert result["result"] == "Stopping anyway."


def test_early_escalate_is_denied(
    project: Path, claude_home: Path, claude_bin: Path, messages_api: StandInFactory
) -> None:
    api = messages_api(
        [
            tool_use("Skill", {"skill": "pytest-acceptance:escalate", "args": "AC-1"}),
            text("Giving up."),
            text("Stopping."),
        ]
    )
    implement(project, claude_home, claude_bin, api, env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "1"})
    denial = tool_results(api.requests[1])[0]
    assert denial["is_error"] is True
    assert "Must call /pytest-acceptance:verify before /pytest-acceptance:escalate" in (
        json.dumps(denial)
    )
    assert carries_block(api.requests[2])  # and the stop after it is blocked too


def test_honest_implement_verify_done_may_stop(
    project: Path, claude_home: Path, claude_bin: Path, messages_api: StandInFactory
) -> None:
    log = claude_home / "implement-log.md"
    api = messages_api(
        [
            tool_use("Bash", {"command": f"echo '# log' > {log}"}),
            tool_use(
                "Bash",
                {"command": "echo 2 > value.txt && git commit -qam 'AC-1: value is two'"},
            ),
            tool_use("Skill", {"skill": "pytest-acceptance:verify", "args": f"spec.md {log}"}),
            tool_use("Bash", {"command": f"{PYTEST} --acceptance-log={log}; echo exit=$?"}),
            tool_use("Skill", {"skill": "pytest-acceptance:done", "args": f"spec.md {log}"}),
            text("## Implementation Complete\n- AC-1: value file says two ✓"),
        ]
    )
    result = implement(project, claude_home, claude_bin, api)
    assert api.remaining == 0
    assert not any(carries_block(request) for request in api.requests)
    assert "exit=0" in json.dumps(tool_results(api.requests[4]))
    verdict = json.loads((project / ".acceptance" / "verdict.json").read_text())
    assert verdict["status"] == "pass"
    assert result["subtype"] == "success"
    assert result["result"].startswith("## Implementation Complete")
    assert not (project / ".acceptance" / "forced-stops.jsonl").exists()
    entries = read_transcript(transcript_path(claude_home, result["session_id"]))
    assert not any("Stop hook feedback" in json.dumps(entry) for entry in entries)
    # The CLI substituted the skill arguments and the plugin root into the skill texts.
    texts = json.dumps([entry for entry in entries if entry.get("isMeta")])
    assert "Spec argument: `spec.md`" in texts
    assert f'pip install \\"{REPO_ROOT}\\"' in texts  # JSON-escaped quotes


def test_done_while_verification_fails_is_blocked_with_the_failing_criterion(
    project: Path, claude_home: Path, claude_bin: Path, messages_api: StandInFactory
) -> None:
    api = messages_api(
        [
            tool_use("Skill", {"skill": "pytest-acceptance:verify", "args": "spec.md"}),
            tool_use("Bash", {"command": f"{PYTEST}; echo exit=$?"}),
            tool_use("Skill", {"skill": "pytest-acceptance:done"}),
            text("Done."),
            text("Done, really."),
        ]
    )
    implement(project, claude_home, claude_bin, api, env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "1"})
    assert "exit=1" in json.dumps(tool_results(api.requests[2]))
    blocked = json.dumps(api.requests[4])
    assert BLOCK_TAG in blocked
    assert "AC-1 value file says two (failed" in blocked
