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
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.gemini_cli import GeminiInstallError, installed_gemini

from pytest_acceptance.claude import caps, host_gemini

ADAPTER_HOOK = Path(__file__).resolve().parents[1] / "support" / "adapter_hook.py"
MODEL = "gemini-2.5-pro"
CLI_TIMEOUT = 240
pytestmark = pytest.mark.e2e
REASON = "[pytest-acceptance gate] AC-1 still fails: keep working"


@dataclass
class GeminiAPI:
    """The stand-in: every request is answered with a final text, every body kept."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                api.requests.append(json.loads(self.rfile.read(length)))
                chunk = {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": "Done."}]},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1},
                    "modelVersion": MODEL,
                }
                data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@dataclass
class Run:
    returncode: int
    output: str
    requests: list[dict[str, Any]]
    stops: list[dict[str, Any]]  # what the hook received: raw payload and the read event


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    try:
        return installed_gemini()
    except GeminiInstallError as error:
        pytest.fail(f"the real Gemini CLI is needed and missing: {error}", pytrace=False)


@pytest.fixture
def api() -> Iterator[tuple[GeminiAPI, str]]:
    stand_in = GeminiAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), stand_in.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def run_gemini(
    gemini_bin: Path,
    api: tuple[GeminiAPI, str],
    tmp_path: Path,
    plan: list[dict[str, Any]],
    timeout: int = host_gemini.CONTRACT.default_timeout,
) -> Run:
    """One `gemini -p` turn in a fresh project and home, with the adapter as AfterAgent hook."""
    stand_in, base_url = api
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".gemini").mkdir(parents=True)
    (project / ".gemini").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    log, plan_file = tmp_path / "stops.jsonl", tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    command = f"{sys.executable} -E -S {ADAPTER_HOOK} {host_gemini.CONTRACT.name} {log} {plan_file}"
    hooks = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    project_settings = {"hooksConfig": {"enabled": True}, "hooks": {"AfterAgent": [hooks]}}
    (project / ".gemini" / "settings.json").write_text(json.dumps(project_settings))
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "stand-in",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    done = subprocess.run(
        [str(gemini_bin), "-m", MODEL, "-p", "Make AC-1 pass.", "-o", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    stops = [json.loads(line) for line in lines]
    return Run(done.returncode, done.stdout + done.stderr, list(stand_in.requests), stops)


def last_user_text(request: dict[str, Any]) -> str:
    last = request["contents"][-1]
    assert last["role"] == "user"
    return "".join(part.get("text", "") for part in last["parts"])


BLOCK = {"answer": {"decision": "block", "reason": REASON}}
ALLOW: dict[str, Any] = {"answer": {}}


def test_a_block_is_a_retry_whose_prompt_is_the_reason(
    gemini_bin: Path, api: tuple[GeminiAPI, str], tmp_path: Path
) -> None:
    run = run_gemini(gemini_bin, api, tmp_path, [BLOCK, ALLOW])
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
    gemini_bin: Path, api: tuple[GeminiAPI, str], tmp_path: Path
) -> None:
    """The control: the same turn with no block ends after the one request."""
    run = run_gemini(gemini_bin, api, tmp_path, [ALLOW])
    assert run.returncode == 0, run.output
    assert len(run.requests) == 1 and len(run.stops) == 1


def test_a_forced_stop_ends_the_session_without_a_retry(
    gemini_bin: Path, api: tuple[GeminiAPI, str], tmp_path: Path
) -> None:
    message = f"{caps.FORCED_PREFIX}: 8 stops of this flow were already blocked"
    forced = {"answer": {"continue": False, "stopReason": message, "systemMessage": message}}
    run = run_gemini(gemini_bin, api, tmp_path, [forced, BLOCK])
    assert len(run.requests) == 1 and len(run.stops) == 1, run.output
    assert caps.FORCED_PREFIX in run.output


def test_the_timeout_is_in_milliseconds_and_fails_open(
    gemini_bin: Path, api: tuple[GeminiAPI, str], tmp_path: Path
) -> None:
    """A hook past a 3000 timeout is dropped and the stop goes through: 3000 is 3 s (in
    seconds the block would have come in time and caused a retry). The gate's own deadline
    must therefore stay under the configured timeout."""
    assert host_gemini.CONTRACT.timeout_unit == "ms"
    slow_block = {**BLOCK, "sleep": 8}
    run = run_gemini(gemini_bin, api, tmp_path, [slow_block, ALLOW], timeout=3000)
    assert host_gemini.CONTRACT.timeout_fails_open
    assert len(run.requests) == 1, run.output


def test_gemini_has_no_cap_of_its_own_on_retries(
    gemini_bin: Path, api: tuple[GeminiAPI, str], tmp_path: Path
) -> None:
    """Ten blocks in a row are ten retries (Claude Code would have let the ninth stop
    through): the contract says no cap, so the gate counts its own blocks there."""
    assert host_gemini.CONTRACT.block_cap is None
    run = run_gemini(gemini_bin, api, tmp_path, [BLOCK] * 10 + [ALLOW])
    assert run.returncode == 0, run.output
    assert len(run.requests) == 11 and len(run.stops) == 11
