"""The real-CLI test harness: the Messages API stand-in on real sockets, and the real pinned
Claude Code CLI driven through it (tool runs, structured output, transcripts)."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.claude_cli import (
    CLAUDE_CODE_VERSION,
    ClaudeInstallError,
    ensure_claude,
    installed_version,
    shadow_sdk,
)
from support.claude_harness import (
    EXHAUSTED_TEXT,
    SIDE_REPLY_TEXT,
    ClaudeRunError,
    MessagesStandIn,
    StandInFactory,
    claude_env,
    read_transcript,
    reply,
    run_claude,
    structured,
    text,
    tool_results,
    tool_use,
    transcript_path,
    transcript_tool_uses,
    user_text,
)

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().strip().split("\n\n"):
        event_line, data_line = chunk.split("\n")
        events.append((event_line.removeprefix("event: "), json.loads(data_line[6:])))
    return events


# --- the stand-in on its own (real sockets, no CLI) ---------------------------------------


def test_stream_answer_is_the_documented_event_sequence(messages_api: StandInFactory) -> None:
    api = messages_api([reply(text("thinking aloud"), tool_use("Bash", {"command": "ls"}))])
    body = {"model": "m", "stream": True, "tools": TOOLS, "messages": []}
    content_type, raw = post(f"{api.url}/v1/messages?beta=true", body)
    events = sse_events(raw)
    assert content_type == "text/event-stream"
    assert [name for name, _ in events] == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_stop"] * 2,
        "message_delta",
        "message_stop",
    ]
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "thinking aloud"}
    assert events[4][1]["content_block"]["name"] == "Bash"
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"command": "ls"}
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"


def test_non_stream_request_gets_a_plain_json_message(messages_api: StandInFactory) -> None:
    api = messages_api([text("plain")])
    _, raw = post(f"{api.url}/v1/messages", {"model": "m", "tools": TOOLS, "messages": []})
    message = json.loads(raw)
    assert message["content"] == [{"type": "text", "text": "plain"}]
    assert message["stop_reason"] == "end_turn"


def test_side_requests_and_count_tokens_do_not_consume_the_script(
    messages_api: StandInFactory,
) -> None:
    api = messages_api([text("main")])
    _, raw = post(f"{api.url}/v1/messages", {"model": "m", "messages": []})
    _, counted = post(f"{api.url}/v1/messages/count_tokens?beta=true", {"messages": []})
    assert json.loads(raw)["content"][0]["text"] == SIDE_REPLY_TEXT
    assert json.loads(counted)["input_tokens"] > 0
    assert api.remaining == 1
    assert len(api.side_requests) == 1
    assert api.requests == []


def test_exhausted_script_answers_and_records_an_error() -> None:
    with MessagesStandIn([]) as api:
        _, raw = post(f"{api.url}/v1/messages", {"model": "m", "tools": TOOLS, "messages": []})
    assert json.loads(raw)["content"][0]["text"] == EXHAUSTED_TEXT
    assert len(api.errors) == 1
    assert "exhausted" in api.errors[0]


def test_messages_api_fixture_fails_the_test_when_the_script_runs_out(
    pytester: pytest.Pytester,
) -> None:
    tests_dir = Path(__file__).resolve().parents[1]
    pytester.makepyfile(conftest=(tests_dir / "conftest.py").read_text())
    support = pytester.mkpydir("support")
    for module in ("claude_harness", "claude_cli"):
        (support / f"{module}.py").write_text((tests_dir / "support" / f"{module}.py").read_text())
    pytester.makepyfile(
        test_inner="""
        import json, urllib.request

        def test_asks_for_one_turn_too_many(messages_api):
            api = messages_api([])
            body = json.dumps({"model": "m", "tools": [{"name": "Bash"}], "messages": []})
            urllib.request.urlopen(api.url + "/v1/messages", data=body.encode()).read()
        """
    )
    result = pytester.runpytest("-p", "no:acceptance")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*Messages API stand-in: The stand-in script is exhausted*"])


def test_callable_script_routes_on_the_prompt(messages_api: StandInFactory) -> None:
    def route(request: dict[str, Any]) -> Any:
        return text("answer A") if "AC-1" in user_text(request) else text("answer B")

    api = messages_api(route)
    for prompt, expected in [("check AC-2", "answer B"), ("check AC-1", "answer A")]:
        body = {"model": "m", "tools": TOOLS, "messages": [{"role": "user", "content": prompt}]}
        _, raw = post(f"{api.url}/v1/messages", body)
        assert json.loads(raw)["content"][0]["text"] == expected
    assert len(api.requests) == 2


def test_stand_in_stops_by_itself_after_its_idle_timeout() -> None:
    api = MessagesStandIn([], idle_timeout=0.3).start()
    post(f"{api.url}/v1/messages/count_tokens", {})
    assert api.wait_stopped(timeout=30)
    assert api.stopped
    with pytest.raises(OSError):
        post(f"{api.url}/v1/messages/count_tokens", {})


def test_claude_env_isolates_home_and_puts_the_real_claude_first_on_path(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "leak")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/leak")
    env = claude_env(tmp_path / "home", "http://127.0.0.1:9", claude_bin)
    assert env["HOME"] == str(tmp_path / "home")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert "CLAUDE_CONFIG_DIR" not in env
    first_on_path = Path(env["PATH"].split(os.pathsep)[0]) / "claude"
    assert first_on_path.resolve() == claude_bin.resolve()


def test_ensure_claude_fails_clearly_when_pip_cannot_install_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(shadow_sdk(tmp_path / "shadow")))  # no bundled CLI
    missing_wheel = str(tmp_path / "claude_agent_sdk-0.0.0-py3-none-any.whl")
    with pytest.raises(ClaudeInstallError, match=r"pip install --quiet --no-deps .* failed"):
        ensure_claude(missing_wheel)


# --- the real CLI against the stand-in -----------------------------------------------------


@pytest.mark.e2e
def test_installed_cli_reports_the_pinned_version(claude_bin: Path) -> None:
    assert installed_version(claude_bin) == CLAUDE_CODE_VERSION


@pytest.mark.e2e
def test_print_mode_returns_the_scripted_text(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    api = messages_api([text("Hello from the stand-in")])
    env = claude_env(claude_home, api.url, claude_bin)
    result = run_claude(["-p", "hi", "--output-format", "json"], tmp_path, env)
    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert result["result"] == "Hello from the stand-in"
    assert "hi" in user_text(api.requests[0])
    assert "Bash" in [tool["name"] for tool in api.requests[0]["tools"]]


def run_bash_flow(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, workdir: Path
) -> tuple[MessagesStandIn, str, dict[str, Any]]:
    """Turn 1 calls Bash, turn 2 ends: returns the stand-in, the Bash call's id, the result."""
    bash_call = tool_use("Bash", {"command": "echo hi > f.txt"})
    api = messages_api([bash_call, text("Wrote f.txt")])
    env = claude_env(claude_home, api.url, claude_bin)
    args = ["-p", "write f.txt", "--output-format", "json", "--allowedTools", "Bash"]
    return api, bash_call.id, run_claude(args, workdir, env)


@pytest.mark.e2e
def test_scripted_bash_call_really_runs_and_its_result_goes_back(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    api, bash_call_id, result = run_bash_flow(messages_api, claude_home, claude_bin, workdir)
    assert result["result"] == "Wrote f.txt"
    assert result["num_turns"] == 2
    assert (workdir / "f.txt").read_text() == "hi\n"
    assert len(api.requests) == 2
    [bash_result] = tool_results(api.requests[1])
    assert bash_result["tool_use_id"] == bash_call_id
    assert bash_result.get("is_error") is not True


@pytest.mark.e2e
def test_json_schema_answer_arrives_as_structured_output(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    verdict = {"status": "fail", "issues": [{"location": "src/x.py:3"}]}
    api = messages_api([structured(verdict), text("Reported.")])
    schema = {
        "type": "object",
        "properties": {"status": {"enum": ["pass", "fail"]}, "issues": {"type": "array"}},
        "required": ["status", "issues"],
    }
    env = claude_env(claude_home, api.url, claude_bin)
    args = ["-p", "judge", "--output-format", "json", "--json-schema", json.dumps(schema)]
    result = run_claude(args, tmp_path, env)
    assert result["structured_output"] == verdict
    assert "StructuredOutput" in [tool["name"] for tool in api.requests[0]["tools"]]


@pytest.mark.e2e
def test_transcript_is_found_and_holds_the_tool_use(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    _, _, result = run_bash_flow(messages_api, claude_home, claude_bin, workdir)
    path = transcript_path(claude_home, result["session_id"])
    mangled_cwd = re.sub(r"[^A-Za-z0-9]", "-", str(workdir.resolve()))
    assert path.parent.name == mangled_cwd
    [bash_call] = transcript_tool_uses(read_transcript(path))
    assert bash_call["name"] == "Bash"
    assert bash_call["input"]["command"] == "echo hi > f.txt"


@pytest.mark.e2e
def test_concurrent_cli_runs_share_one_stand_in_routed_by_prompt(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    def route(request: dict[str, Any]) -> Any:
        criterion = "AC-1" if "check AC-1" in user_text(request) else "AC-2"
        return text(f"verdict for {criterion}")

    api = messages_api(route)
    env = claude_env(claude_home, api.url, claude_bin)
    prompts = ["check AC-1", "check AC-2", "check AC-1"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = [
            pool.submit(run_claude, ["-p", prompt, "--output-format", "json"], tmp_path, env)
            for prompt in prompts
        ]
        answers = [run.result()["result"] for run in runs]
    assert answers == ["verdict for AC-1", "verdict for AC-2", "verdict for AC-1"]
    assert len(api.requests) == 3


@pytest.mark.e2e
def test_run_claude_kills_a_cli_that_outlives_its_timeout(
    messages_api: StandInFactory, claude_home: Path, claude_bin: Path, tmp_path: Path
) -> None:
    api = messages_api([reply(text("too late"), delay=120)])
    env = claude_env(claude_home, api.url, claude_bin)
    with pytest.raises(ClaudeRunError, match="still ran after 3 s; killed"):
        run_claude(["-p", "hi", "--output-format", "json"], tmp_path, env, timeout=3)
    assert len(api.requests) == 1
