"""Gemini CLI's stop contract through the REAL Gemini CLI (pinned, tests/support/gemini_cli.py),
offline against a scripted stand-in of the Gemini API on 127.0.0.1.

The AfterAgent hook here is the Gemini adapter (host_gemini.py) itself
(support/adapter_hook.py): it reads the real payload into the gate's StopEvent and writes
the gate's neutral answers (a block, a forced stop) rendered in Gemini's shape, through
hook_io like every hook of ours. What is proved is
the contract the adapter is built from: the payload's fields, a block as a retry whose
prompt is the reason, a forced stop as the end of the session without a retry, a timeout
in milliseconds that fails open, and no cap of Gemini's own on retries.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.gemini_harness import GeminiAPI, gemini_env, gemini_home, run_gemini, serving

from pytest_acceptance.gate import caps, host_gemini

ADAPTER_HOOK = Path(__file__).resolve().parents[1] / "support" / "adapter_hook.py"
pytestmark = pytest.mark.e2e
REASON = "[pytest-acceptance gate] AC-1 still fails: keep working"


@dataclass
class Run:
    returncode: int
    output: str
    requests: list[dict[str, Any]]
    stops: list[dict[str, Any]]  # what the hook received: raw payload and the read event


@pytest.fixture
def api() -> Iterator[GeminiAPI]:
    with serving(GeminiAPI()) as stand_in:
        yield stand_in


def run_with_adapter(
    gemini_bin: Path,
    api: GeminiAPI,
    tmp_path: Path,
    plan: list[dict[str, Any]],
    timeout: int = host_gemini.CONTRACT.default_timeout,
) -> Run:
    """One `gemini -p` turn in a fresh project and home, with the adapter as AfterAgent hook."""
    home, project = gemini_home(tmp_path / "home"), tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    log, plan_file = tmp_path / "stops.jsonl", tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    command = f"{sys.executable} -E -S {ADAPTER_HOOK} {host_gemini.CONTRACT.name} {log} {plan_file}"
    hooks = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    project_settings = {"hooksConfig": {"enabled": True}, "hooks": {"AfterAgent": [hooks]}}
    (project / ".gemini" / "settings.json").write_text(json.dumps(project_settings))
    env = gemini_env(home, api, GEMINI_CLI_TRUST_WORKSPACE="true")
    done = run_gemini(gemini_bin, project, env, "Make AC-1 pass.")
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    stops = [json.loads(line) for line in lines]
    return Run(done.returncode, done.output, list(api.requests), stops)


def last_user_text(request: dict[str, Any]) -> str:
    last = request["contents"][-1]
    assert last["role"] == "user"
    return "".join(part.get("text", "") for part in last["parts"])


BLOCK = {"answer": {"decision": "block", "reason": REASON}}
ALLOW: dict[str, Any] = {"answer": {}}


def test_a_block_is_a_retry_whose_prompt_is_the_reason(
    gemini_bin: Path, api: GeminiAPI, tmp_path: Path
) -> None:
    run = run_with_adapter(gemini_bin, api, tmp_path, [BLOCK, ALLOW])
    assert run.returncode == 0, run.output
    assert len(run.requests) == 2, run.output
    assert last_user_text(run.requests[1]) == REASON
    first, second = (stop["event"] for stop in run.stops)
    assert first["host"] == second["host"] == host_gemini.CONTRACT.name
    assert first["session_id"] and first["session_id"] == second["session_id"]
    assert first["cwd"] == str(tmp_path / "project")
    assert first["transcript_path"] and first["transcript_path"].endswith(".jsonl")
    assert (first["loop"], second["loop"]) == (False, True)
    assert first["last_message"] == "Done."
    assert all(
        stop["raw"]["hook_event_name"] == host_gemini.CONTRACT.stop_event for stop in run.stops
    )


def test_a_stop_let_through_makes_no_retry(
    gemini_bin: Path, api: GeminiAPI, tmp_path: Path
) -> None:
    """The control: the same turn with no block ends after the one request."""
    run = run_with_adapter(gemini_bin, api, tmp_path, [ALLOW])
    assert run.returncode == 0, run.output
    assert len(run.requests) == 1 and len(run.stops) == 1


def test_a_forced_stop_ends_the_session_without_a_retry(
    gemini_bin: Path, api: GeminiAPI, tmp_path: Path
) -> None:
    message = f"{caps.FORCED_PREFIX}: 8 stops of this flow were already blocked"
    forced = {"answer": {"continue": False, "stopReason": message, "systemMessage": message}}
    run = run_with_adapter(gemini_bin, api, tmp_path, [forced, BLOCK])
    assert len(run.requests) == 1 and len(run.stops) == 1, run.output
    assert caps.FORCED_PREFIX in run.output


def test_the_timeout_is_in_milliseconds_and_fails_open(
    gemini_bin: Path, api: GeminiAPI, tmp_path: Path
) -> None:
    """A hook past a 3000 timeout is dropped and the stop goes through: 3000 is 3 s (in
    seconds the block would have come in time and caused a retry). The gate's own deadline
    must therefore stay under the configured timeout."""
    assert host_gemini.CONTRACT.timeout_unit == "ms"
    slow_block = {**BLOCK, "sleep": 8}
    run = run_with_adapter(gemini_bin, api, tmp_path, [slow_block, ALLOW], timeout=3000)
    assert host_gemini.CONTRACT.timeout_fails_open
    assert len(run.requests) == 1, run.output


def test_gemini_has_no_cap_of_its_own_on_retries(
    gemini_bin: Path, api: GeminiAPI, tmp_path: Path
) -> None:
    """Ten blocks in a row are ten retries (Claude Code would have let the ninth stop
    through): the contract says no cap, so the gate counts its own blocks there."""
    assert host_gemini.CONTRACT.block_cap is None
    run = run_with_adapter(gemini_bin, api, tmp_path, [BLOCK] * 10 + [ALLOW])
    assert run.returncode == 0, run.output
    assert len(run.requests) == 11 and len(run.stops) == 11
