"""A scripted stand-in for the Anthropic Messages API, to drive the real Claude Code CLI offline.

The CLI is pointed at it with ANTHROPIC_BASE_URL (see `claude_env`); it then runs its tools
for real and sends their results back, so scripting the model's turns is enough to drive any
flow. The wire format is the one the pinned CLI (tests/support/claude_cli.py) speaks;
tests/test_claude_harness.py drives the real CLI against this stand-in, so a drift fails there.

    with MessagesStandIn([tool_use("Bash", {"command": "echo hi"}), text("done")]) as api:
        result = run_claude(["-p", "go", "--output-format", "json"], cwd, claude_env(home, api.url))

A script is a list of replies consumed in order by the main requests (those offering tools),
or a callable `(request) -> reply` when several CLI processes share one stand-in.
Requests without tools (titles and other side requests) get a plain text answer.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SIDE_REPLY_TEXT = "Stand-in reply"
EXHAUSTED_TEXT = "The stand-in script is exhausted: the CLI asked for more turns than scripted."
DEFAULT_IDLE_TIMEOUT = 300.0
_ids = itertools.count(1)


@dataclass(frozen=True)
class Block:
    """One content block of a scripted assistant message: `text` or `tool_use`."""

    type: str
    text: str = ""
    name: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def to_api(self) -> dict[str, Any]:
        if self.type == "text":
            return {"type": "text", "text": self.text}
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True)
class Reply:
    """One assistant message; `delay` seconds pass before it is sent (for timeout tests)."""

    blocks: tuple[Block, ...]
    delay: float = 0.0

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b.type == "tool_use" for b in self.blocks) else "end_turn"


Scripted = Reply | Block
Script = Sequence[Scripted] | Callable[[dict[str, Any]], Scripted]


def text(content: str) -> Block:
    return Block(type="text", text=content)


def tool_use(name: str, input: Mapping[str, Any]) -> Block:
    return Block(type="tool_use", name=name, input=input, id=f"toolu_standin_{next(_ids):04d}")


def structured(obj: Mapping[str, Any]) -> Block:
    """A call of the `StructuredOutput` tool that `--json-schema` adds to the CLI's tools."""
    return tool_use("StructuredOutput", obj)


def reply(*blocks: Block, delay: float = 0.0) -> Reply:
    return Reply(blocks=tuple(blocks), delay=delay)


def as_reply(scripted: Scripted) -> Reply:
    if isinstance(scripted, Block):
        return reply(scripted)
    if isinstance(scripted, Reply):
        return scripted
    raise TypeError(f"a script step must be a Reply or a Block, got {scripted!r}")


# --- reading what the CLI sent -------------------------------------------------------------


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in content or []:
        if block.get("type") == "text":
            yield block.get("text", "")
        elif block.get("type") == "tool_result":
            yield from _texts(block.get("content"))


def user_text(request: Mapping[str, Any]) -> str:
    """All text the user side of the conversation carried (prompt, tool results, reminders)."""
    messages = request.get("messages", [])
    return "\n".join(t for m in messages if m.get("role") == "user" for t in _texts(m["content"]))


def tool_names(request: Mapping[str, Any]) -> list[str]:
    return [tool.get("name", "") for tool in request.get("tools", [])]


def tool_results(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last user message (this turn's results)."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else []
    if isinstance(content, str):
        return []
    return [block for block in content if block.get("type") == "tool_result"]


# --- the wire format -------------------------------------------------------------------------


def _message(model: str, content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
    return {
        "id": f"msg_standin_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def sse_events(model: str, answer: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of one streamed message, in the order the API sends them."""
    yield "message_start", {"type": "message_start", "message": _message(model, [], None)}
    for index, block in enumerate(answer.blocks):
        start: dict[str, Any]
        if block.type == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(block.input))}
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": start,
            },
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the CLI's requests are recorded on the stand-in, not printed

    def do_POST(self) -> None:
        stand_in = self.server.stand_in
        stand_in.touch()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as error:
            stand_in.record_error(f"{self.path}: request body is not JSON ({error})")
            self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error"}})
            return
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
        elif path == "/v1/messages":
            self._answer_message(body)
        else:
            stand_in.record_error(f"unexpected request POST {self.path}")
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error"}})
        stand_in.touch()

    def _answer_message(self, body: dict[str, Any]) -> None:
        answer = self.server.stand_in.answer(body)
        if answer.delay and self.server.stand_in.wait_for_stop(answer.delay):
            return  # stopped while holding the answer back: the client is gone or going
        model = str(body.get("model", "stand-in"))
        if body.get("stream"):
            self._send_stream(model, answer)
        else:
            content = [block.to_api() for block in answer.blocks]
            self._send_json(200, _message(model, content, answer.stop_reason))

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, model: str, answer: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        for event, data in sse_events(model, answer):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stand_in: MessagesStandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return  # the CLI hung up (killed on timeout, or done): nothing to answer
        self.stand_in.record_error(f"the stand-in failed on a request: {error!r}")


class MessagesStandIn:
    """The Messages API stand-in on 127.0.0.1 (ephemeral port), served by a daemon thread.

    Stops when its context exits, or by itself after `idle_timeout` seconds without a request
    so it never outlives a test run. `requests` holds every main request (with tools),
    `side_requests` the others, `errors` every way the script did not fit the conversation.
    """

    def __init__(self, script: Script, idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
        self._script = script
        self._queue = [] if callable(script) else list(script)
        self._lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._stopped = threading.Event()
        self.idle_timeout = idle_timeout
        self.requests: list[dict[str, Any]] = []
        self.side_requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stand_in = self
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def remaining(self) -> int:
        """Replies of a list script not consumed yet."""
        with self._lock:
            return len(self._queue)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def start(self) -> MessagesStandIn:
        self.touch()
        serve = threading.Thread(target=self._serve, name="messages-stand-in", daemon=True)
        watch = threading.Thread(target=self._watch_idle, name="stand-in-idle", daemon=True)
        self._threads = [serve, watch]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._server.shutdown()

    def wait_for_stop(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds; True when the stand-in was stopped meanwhile."""
        return self._stopped.wait(timeout)

    def wait_stopped(self, timeout: float) -> bool:
        """True once the server thread has ended (after stop() or the idle timeout)."""
        self._threads[0].join(timeout)
        return not self._threads[0].is_alive()

    def __enter__(self) -> MessagesStandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        self.wait_stopped(10)

    def _serve(self) -> None:
        try:
            self._server.serve_forever(poll_interval=0.05)
        finally:
            self._server.server_close()

    def _watch_idle(self) -> None:
        while not self._stopped.wait(min(1.0, self.idle_timeout / 4)):
            with self._lock:
                idle = time.monotonic() - self._last_activity
            if idle >= self.idle_timeout:
                self.stop()

    def touch(self) -> None:
        with self._lock:
            self._last_activity = time.monotonic()

    def record_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def answer(self, request: dict[str, Any]) -> Reply:
        """The reply to one /v1/messages request, recording it."""
        if not request.get("tools"):
            with self._lock:
                self.side_requests.append(request)
            return reply(text(SIDE_REPLY_TEXT))
        with self._lock:
            self.requests.append(request)
            if not callable(self._script):
                if self._queue:
                    return as_reply(self._queue.pop(0))
                self.errors.append(f"{EXHAUSTED_TEXT} Last prompt:\n{user_text(request)[-500:]}")
                return reply(text(EXHAUSTED_TEXT))
        try:
            return as_reply(self._script(request))
        except Exception as error:  # a broken script must fail the test, not hang the CLI
            message = f"the script callable raised {error!r}"
            self.record_error(message)
            return reply(text(f"Stand-in error: {message}"))


# --- running the CLI -------------------------------------------------------------------------

_INHERITED_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "XDG_")


def claude_path_dir(directory: Path, claude_binary: Path) -> Path:
    """`directory` holding a `claude` symlink to the real binary, to put first on PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / "claude"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(claude_binary)
    return directory


def claude_env(home: Path, url: str, claude_binary: Path | None = None) -> dict[str, str]:
    """Environment for a CLI run against the stand-in at `url`, isolated in a fresh `home`.

    No inherited ANTHROPIC_*/CLAUDE_*/XDG_* variables (user settings, keys and config dirs
    must not leak in); PATH starts with a directory whose `claude` is the real pinned binary.
    """
    if claude_binary is None:
        from support.claude_cli import installed_claude

        claude_binary = installed_claude()
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    bin_dir = claude_path_dir(home / ".claude-standin-bin", claude_binary)
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="sk-ant-stand-in",
        # Offline: no telemetry, error reports, update checks or other calls to the internet.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    return env


class ClaudeRunError(AssertionError):
    """`claude` did not end with one JSON result on stdout; the message holds its output."""


def run_claude(
    args: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 120
) -> dict[str, Any]:
    """Run the `claude` found on env's PATH; return its parsed `--output-format json` object."""
    claude = shutil.which("claude", path=env.get("PATH"))
    if claude is None:
        raise ClaudeRunError("no `claude` on the PATH of the given env: build it with claude_env")
    process = subprocess.Popen(
        [claude, *args],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so a timeout kills the CLI and every tool it started
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise ClaudeRunError(
            f"claude {' '.join(args)} still ran after {timeout} s; killed.\n"
            f"stdout:\n{stdout[-2000:]}\nstderr:\n{stderr[-2000:]}"
        ) from None
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        raise ClaudeRunError(
            f"claude {' '.join(args)} exited {process.returncode} without a JSON object.\n"
            f"stdout:\n{stdout[-2000:]}\nstderr:\n{stderr[-2000:]}"
        )
    return result


# --- the session transcript ------------------------------------------------------------------


def transcript_path(home: Path, session_id: str) -> Path:
    """`$HOME/.claude/projects/<mangled cwd>/<session>.jsonl` of one session.

    Found by session id rather than by re-deriving the CLI's folder name for the cwd.
    """
    found = sorted((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    if len(found) != 1:
        raise FileNotFoundError(
            f"expected one transcript {session_id}.jsonl under {home}/.claude/projects, "
            f"found {[str(p) for p in found]}"
        )
    return found[0]


def read_transcript(path: Path) -> list[dict[str, Any]]:
    """The transcript's JSON lines, in order (blank lines skipped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def transcript_tool_uses(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every tool_use block of the assistant lines of a transcript."""
    uses: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("type") != "assistant":
            continue
        content = entry.get("message", {}).get("content", [])
        uses.extend(b for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return uses


# What the `messages_api` fixture hands a test: it starts a stand-in with the given turns.
StandInFactory = Callable[..., MessagesStandIn]
