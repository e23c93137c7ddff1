"""The real Gemini CLI (pinned, gemini_cli.py) against a scripted stand-in of the Gemini API
on 127.0.0.1: the stand-in, a fresh HOME, and one `gemini -p` run.

The stand-in answers each `streamGenerateContent` request with the script's next turn (text
or function calls, in Gemini's parts); past the script's end it answers ``Done.``. Every
request body is kept, so a test reads what the CLI sent (a hook's denial, a tool's output).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.pinned_session import CliRun, run_cli

MODEL = "gemini-2.5-pro"
Part = dict[str, Any]
Turn = list[Part]


def say(text: str) -> Turn:
    return [{"text": text}]


def call(name: str, **args: Any) -> Turn:
    """A turn that calls one of Gemini's tools (run_shell_command, write_file, replace)."""
    return [{"functionCall": {"name": name, "args": args}}]


def shell(command: str) -> Turn:
    return call("run_shell_command", command=command)


@dataclass
class GeminiAPI:
    """The stand-in: each request answered with the script's next turn, every body kept."""

    script: list[Turn] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    @property
    def remaining(self) -> int:
        return len(self.script)

    def next_turn(self) -> Turn:
        return self.script.pop(0) if self.script else say("Done.")

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                api.requests.append(json.loads(self.rfile.read(length)))
                chunk = {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": api.next_turn()},
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


@contextmanager
def serving(api: GeminiAPI) -> Iterator[GeminiAPI]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def gemini_home(home: Path) -> Path:
    """A fresh HOME whose user settings use the API key (the stand-in), nothing else."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
        "tools": {"sandbox": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return home


def gemini_env(home: Path, api: GeminiAPI, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "stand-in",
        "GOOGLE_GEMINI_BASE_URL": api.base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_SANDBOX": "false",
        **extra,
    }


def run_gemini(gemini: Path, cwd: Path, env: dict[str, str], prompt: str, *extra: str) -> CliRun:
    """One `gemini -p PROMPT -o json` turn, stdin closed; a timeout kills all it started."""
    return run_cli([str(gemini), "-m", MODEL, "-p", prompt, "-o", "json", *extra], cwd, env)


def user_texts(request: dict[str, Any]) -> list[str]:
    """The texts of every user turn of a request (prompts, hook context, a retry's reason)."""
    return [
        part["text"]
        for content in request.get("contents", [])
        if content.get("role") == "user"
        for part in content.get("parts", [])
        if isinstance(part.get("text"), str)
    ]


def tool_responses(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part["functionResponse"]
        for content in request.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
