"""The real Copilot CLI (pinned, copilot_cli.py) against a scripted stand-in of the OpenAI
Chat Completions API on 127.0.0.1: the stand-in, a fresh HOME, and one `copilot -p` run.

The stand-in answers each streamed ``POST /v1/chat/completions`` with the script's next turn
(a text, a function call such as ``bash`` or ``create``, or a call of the free-form
``apply_patch`` tool); past the script's end it answers ``Done.``. Every request body is
kept, so a test reads what the CLI sent (a hook's denial as a tool result, a block's reason
as the next user message).
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

from support.copilot_cli import unpacked_once
from support.pinned_session import CliRun, run_cli

# A model name the CLI knows and offers its `create` and `edit` file tools to; with gpt-4o
# it offers `apply_patch` instead.
MODEL = "claude-sonnet-4.5"
PATCH_MODEL = "gpt-4o"
Turn = dict[str, Any]  # the assistant's delta: content, or one tool call


def say(text: str) -> Turn:
    return {"content": text}


def call(name: str, **args: Any) -> Turn:
    """A turn that calls one of Copilot's function tools (bash, create, edit)."""
    function = {"name": name, "arguments": json.dumps(args)}
    return {"content": None, "tool_calls": [{"type": "function", "function": function}]}


def bash(command: str) -> Turn:
    return call("bash", command=command, description="run a command")


def patch(text: str) -> Turn:
    """A turn that calls the free-form apply_patch tool (offered to PATCH_MODEL)."""
    custom = {"name": "apply_patch", "input": text}
    return {"content": None, "tool_calls": [{"type": "custom", "custom": custom}]}


@dataclass
class ChatCompletions:
    """The stand-in: each request answered with the script's next turn, every body kept."""

    script: list[Turn] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    model: str = MODEL

    @property
    def remaining(self) -> int:
        return len(self.script)

    def next_turn(self) -> Turn:
        return self.script.pop(0) if self.script else say("Done.")

    def chunks(self) -> bytes:
        turn = dict(self.next_turn())
        calls = turn.pop("tool_calls", None)
        delta: dict[str, Any] = {"role": "assistant", **turn}
        if calls:
            n = len(self.requests)
            delta["tool_calls"] = [
                {"index": i, "id": f"call_{n}_{i}", **c} for i, c in enumerate(calls)
            ]
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": self.model}
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        parts = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {
                **base,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        ]
        return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in parts) + b"data: [DONE]\n\n"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                api.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                data = api.chunks()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@contextmanager
def serving(api: ChatCompletions) -> Iterator[ChatCompletions]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def copilot_env(home: Path, api: ChatCompletions, **extra: str) -> dict[str, str]:
    """Offline, no GitHub account: the model provider is the stand-in."""
    return {
        **os.environ,
        "HOME": str(home),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": api.base_url,
        "COPILOT_PROVIDER_API_KEY": "stand-in",
        "COPILOT_MODEL": api.model,
        **unpacked_once(),
        **extra,
    }


def run_copilot(copilot: Path, cwd: Path, env: dict[str, str], prompt: str) -> CliRun:
    """One `copilot -p PROMPT` turn in a trusted folder, every tool allowed (the hooks are
    the only check), stdin closed; a timeout kills all it started."""
    argv = [str(copilot), "-p", prompt, "--allow-all-tools", "--trust-folder"]
    return run_cli(argv, cwd, env)


def user_texts(request: dict[str, Any]) -> list[str]:
    """The texts of every user message of a request (prompts, hook context, a block's reason)."""
    texts = []
    for message in request.get("messages", []):
        content = message.get("content")
        if message.get("role") == "user":
            texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


def tool_results(request: dict[str, Any]) -> list[str]:
    return [
        str(message.get("content"))
        for message in request.get("messages", [])
        if message.get("role") == "tool"
    ]
