"""GitHub Copilot CLI's stop contract through the REAL Copilot CLI (pinned,
tests/support/copilot_cli.py), offline (``COPILOT_OFFLINE``, a model provider of our own)
against a scripted stand-in of the OpenAI Chat Completions API on 127.0.0.1.

The agentStop hook here is the Copilot adapter (host_copilot.py) itself
(support/adapter_hook.py): it reads the real payload into the gate's StopEvent and writes
the gate's neutral answers rendered in Copilot's shape. What is proved is the contract the
adapter is built from: the payload's fields, a block as another turn whose prompt is the
reason, exit code 2 as a warning only, a timeout that fails open, Copilot's own cap of 8
blocks, and the other payload shape Copilot sends to the Stop hooks of
``.claude/settings.json``, which the registry tells from Claude Code's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.copilot_harness import ChatCompletions, copilot_env, serving

from pytest_acceptance.gate import host_claude, host_copilot, host_registry

ADAPTER_HOOK = Path(__file__).resolve().parents[1] / "support" / "adapter_hook.py"
MODEL = "gpt-4o"
CLI_TIMEOUT = 240
pytestmark = pytest.mark.e2e
REASON = "[pytest-acceptance gate] AC-1 still fails: keep working"
BLOCK = {"answer": {"decision": "block", "reason": REASON}}
ALLOW: dict[str, Any] = {"answer": {}}


@dataclass
class Run:
    returncode: int
    output: str
    requests: list[dict[str, Any]]
    stops: list[dict[str, Any]]  # per stop: the raw payload, the read event, its sender


@pytest.fixture
def api() -> Iterator[tuple[ChatCompletions, str]]:
    """The stand-in with no script: every request is answered with a final "Done."."""
    with serving(ChatCompletions(model=MODEL)) as stand_in:
        yield stand_in, stand_in.base_url


def adapter_command(tmp_path: Path, host: str, plan: list[dict[str, Any]]) -> tuple[str, Path]:
    log, plan_file = tmp_path / f"stops-{host}.jsonl", tmp_path / f"plan-{host}.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    return f"{sys.executable} -E -S {ADAPTER_HOOK} {host} {log} {plan_file}", log


def run_copilot(
    copilot_bin: Path,
    api: tuple[ChatCompletions, str],
    tmp_path: Path,
    agent_stop: str | None = None,
    timeout_sec: int = host_copilot.CONTRACT.default_timeout,
    claude_settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """One `copilot -p` turn in a fresh, trusted project and home: `agent_stop` as the
    command of an agentStop hook in .github/hooks/, `claude_settings` as .claude/settings.json."""
    stand_in, _ = api
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    (project / ".github" / "hooks").mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if agent_stop is not None:
        hook = {"type": "command", "bash": agent_stop, "timeoutSec": timeout_sec}
        hooks = {"version": 1, "hooks": {host_copilot.CONTRACT.stop_event: [hook]}}
        (project / ".github" / "hooks" / "gate.json").write_text(json.dumps(hooks))
    if claude_settings is not None:
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_text(json.dumps(claude_settings))
    environment = copilot_env(home, stand_in, **(env or {}))
    done = subprocess.run(
        [str(copilot_bin), "-p", "Make AC-1 pass.", "--allow-all-tools", "--trust-folder"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    logs = sorted(tmp_path.glob("stops-*.jsonl"))
    stops = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    return Run(done.returncode, done.stdout + done.stderr, list(stand_in.requests), stops)


def last_user_text(request: dict[str, Any]) -> str:
    last = request["messages"][-1]
    assert last["role"] == "user"
    content = last["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_a_block_is_another_turn_whose_prompt_is_the_reason(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    command, _ = adapter_command(tmp_path, host_copilot.CONTRACT.name, [BLOCK, ALLOW])
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command)
    assert run.returncode == 0, run.output
    assert len(run.requests) == 2, run.output
    assert REASON in last_user_text(run.requests[1])
    first, second = (stop["event"] for stop in run.stops)
    assert {stop["sender"] for stop in run.stops} == {host_copilot.CONTRACT.name}
    assert first["session_id"] and first["session_id"] == second["session_id"]
    assert first["cwd"] == str(tmp_path / "project")
    assert first["transcript_path"].endswith("events.jsonl")
    assert (first["loop"], second["loop"]) == (False, True)
    raw = run.stops[0]["raw"]
    assert not {"last_assistant_message", "lastAssistantMessage", "prompt_response"} & set(raw)
    assert first["last_message"] == "Done."  # not in the payload: read from the transcript


def test_a_stop_let_through_makes_no_other_turn(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    """The control: the same turn with no block ends after the one request."""
    command, _ = adapter_command(tmp_path, host_copilot.CONTRACT.name, [ALLOW])
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command)
    assert run.returncode == 0, run.output
    assert len(run.requests) == 1 and len(run.stops) == 1


def test_exit_code_2_is_only_a_warning(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    """Claude Code's other way to block (exit 2, reason on stderr) lets the stop through
    here: the adapter's answer is JSON with exit 0."""
    assert host_copilot.CONTRACT.answer_exit_code == 0
    command, _ = adapter_command(
        tmp_path, host_copilot.CONTRACT.name, [{"exit": 2, "stderr": REASON}, ALLOW]
    )
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command)
    assert len(run.requests) == 1 and len(run.stops) == 1, run.output


def test_a_hook_past_its_timeout_fails_open(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    """A block that comes after `timeoutSec` (seconds) is dropped and the stop goes through:
    the gate's own deadline must stay under the configured timeout."""
    assert host_copilot.CONTRACT.timeout_unit == "s"
    assert host_copilot.CONTRACT.timeout_fails_open
    command, _ = adapter_command(tmp_path, host_copilot.CONTRACT.name, [{**BLOCK, "sleep": 8}])
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command, timeout_sec=3)
    assert len(run.requests) == 1, run.output


def test_a_timeout_above_the_default_is_honoured(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    """The control of the timeout: a block that comes after the default 30 s, under the
    `timeoutSec` the installer writes for the stop hook, is obeyed: Copilot does not cap the
    setting at its default."""
    installed = {event: timeout for event, _, timeout in host_copilot.HOOKS}
    timeout_sec = installed[host_copilot.CONTRACT.stop_event]
    late = host_copilot.CONTRACT.default_timeout + 3
    command, _ = adapter_command(
        tmp_path, host_copilot.CONTRACT.name, [{**BLOCK, "sleep": late}, ALLOW]
    )
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command, timeout_sec=timeout_sec)
    assert len(run.requests) == 2, run.output
    assert REASON in last_user_text(run.requests[1])


def test_copilot_ends_the_turn_after_its_cap_of_blocks(
    copilot_bin: Path, api: tuple[ChatCompletions, str], tmp_path: Path
) -> None:
    """A hook that always blocks: the first request and one more per block up to the cap."""
    cap = host_copilot.CONTRACT.block_cap
    assert cap == 8
    command, _ = adapter_command(tmp_path, host_copilot.CONTRACT.name, [BLOCK])
    run = run_copilot(copilot_bin, api, tmp_path, agent_stop=command)
    assert run.returncode == 0, run.output
    assert len(run.requests) == cap + 1, run.output


def test_a_claude_settings_stop_hook_gets_copilots_payload_and_knows_it(
    copilot_bin: Path,
    api: tuple[ChatCompletions, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Copilot runs the Stop hooks of .claude/settings.json with its VS Code compatible
    payload: the registry says it is Copilot's, and Claude Code's adapter leaves it to
    Copilot's (no flow of ours is open in that session), so the gate is not run twice and no
    Copilot transcript is read as Claude Code's."""
    command, _ = adapter_command(tmp_path, host_claude.CONTRACT.name, [ALLOW])
    group = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    plugin_data = tmp_path / "plugin-data"
    run = run_copilot(
        copilot_bin,
        api,
        tmp_path,
        claude_settings={"hooks": {host_claude.CONTRACT.stop_event: [group]}},
        env={"CLAUDE_PLUGIN_DATA": str(plugin_data)},
    )
    assert run.returncode == 0, run.output
    (stop,) = run.stops
    assert stop["raw"]["hook_event_name"] == "Stop" and "stop_reason" in stop["raw"]
    assert stop["sender"] == host_copilot.CONTRACT.name
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(plugin_data))
    assert host_registry.answering_for(host_claude.ADAPTER, stop["raw"]) is host_copilot.ADAPTER
    assert host_registry.left_to_its_host(host_claude.ADAPTER, stop["raw"])
