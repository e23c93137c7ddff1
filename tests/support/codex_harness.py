"""A scripted stand-in for the OpenAI Responses API, to drive the real Codex CLI offline.

The pinned CLI (tests/support/codex_cli.py) is pointed at it by a custom model provider in a
fresh `$CODEX_HOME/config.toml` (`codex_home`); it then runs its tools for real and sends
their outputs back, so scripting the model's turns is enough to drive any flow.

    with ResponsesStandIn([shell("echo hi"), say("done")]) as api:
        run = run_codex(["exec", "go"], project, codex_env(home, api))

A script is a list of turns consumed in order, or a callable `(request) -> turn`. A turn is
one item or a tuple of items; a turn with a tool call makes the CLI run it and ask again.
The stream is the smallest the CLI accepts: one `response.output_item.done` per item, then
`response.completed`. The server binds 127.0.0.1 only and stops by itself when idle.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "gpt-5.5"  # in the binary's catalogue: an unknown name offers no apply_patch tool
PROVIDER = "standin"
KEY_VARIABLE = "STANDIN_API_KEY"
EXHAUSTED_TEXT = "The stand-in script is exhausted: the CLI asked for more turns than scripted."
DEFAULT_IDLE_TIMEOUT = 300.0
_ids = itertools.count(1)

Item = dict[str, Any]
Turn = Item | tuple[Item, ...]
Script = Sequence[Turn] | Callable[[dict[str, Any]], Turn]


def shell(command: str) -> Item:
    """A shell call, as the model asks for it (the hooks see it as `Bash`)."""
    return {
        "type": "function_call",
        "id": f"fc_{next(_ids):04d}",
        "call_id": f"call_{next(_ids):04d}",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": command}),
    }


def shell_write(path: str, content: str) -> Item:
    """A shell call that overwrites `path` with `content` (a here-document)."""
    return shell(f"cat > {path} <<'PYTEST_ACCEPTANCE_EOF'\n{content}PYTEST_ACCEPTANCE_EOF")


def patch(text: str) -> Item:
    """An `apply_patch` call; `text` is the whole `*** Begin Patch` ... `*** End Patch`."""
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{next(_ids):04d}",
        "call_id": f"call_{next(_ids):04d}",
        "name": "apply_patch",
        "input": text,
    }


def write_file_patch(path: str, content: str) -> Item:
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return patch(f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n")


def replace_file_patch(path: str, old: str, new: str) -> Item:
    removed = "".join(f"-{line}\n" for line in old.splitlines())
    added = "".join(f"+{line}\n" for line in new.splitlines())
    return patch(f"*** Begin Patch\n*** Update File: {path}\n@@\n{removed}{added}*** End Patch\n")


def say(text: str) -> Item:
    """An assistant message; a turn of messages only ends the turn (the Stop hooks run)."""
    return {
        "type": "message",
        "id": f"msg_{next(_ids):04d}",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def as_items(turn: Turn) -> tuple[Item, ...]:
    return turn if isinstance(turn, tuple) else (turn,)


# --- reading what the CLI sent -------------------------------------------------------------


def input_texts(request: Mapping[str, Any], role: str | None = None) -> list[str]:
    """Every text of the request's input items (messages, of `role` when given)."""
    found: list[str] = []
    for item in request.get("input", []):
        if item.get("type") == "message" and (role is None or item.get("role") == role):
            for part in item.get("content", []):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    found.append(part["text"])
    return found


def tool_outputs(request: Mapping[str, Any]) -> list[str]:
    """The outputs of every tool call in the request's history, in order."""
    outputs: list[str] = []
    for item in request.get("input", []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            outputs.append(output if isinstance(output, str) else json.dumps(output))
    return outputs


def hook_prompts(request: Mapping[str, Any]) -> list[str]:
    """The Stop hooks' block reasons the CLI fed back as user messages."""
    return [text for text in input_texts(request, "user") if "<hook_prompt" in text]


# --- the wire format -------------------------------------------------------------------------


def sse_events(items: Sequence[Item]) -> Iterator[dict[str, Any]]:
    for index, item in enumerate(items):
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {
        "type": "response.completed",
        "response": {
            "id": f"resp_{next(_ids):04d}",
            "status": "completed",
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 10,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 20,
            },
        },
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # recorded on the stand-in, not printed

    def do_GET(self) -> None:
        self.server.stand_in.record_error(f"unexpected request GET {self.path}")
        self._send(404, b"{}", "application/json")

    def do_POST(self) -> None:
        stand_in = self.server.stand_in
        stand_in.touch()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as error:
            stand_in.record_error(f"{self.path}: request body is not JSON ({error})")
            self._send(400, b"{}", "application/json")
            return
        if self.path.split("?", 1)[0] != "/v1/responses":
            stand_in.record_error(f"unexpected request POST {self.path}")
            self._send(404, b"{}", "application/json")
            return
        items = stand_in.answer(body)
        stream = "".join(
            f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in sse_events(items)
        )
        self._send(200, stream.encode(), "text/event-stream")
        stand_in.touch()

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stand_in: ResponsesStandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        self.stand_in.record_error(f"the stand-in failed on a request: {error!r}")


class ResponsesStandIn:
    """The Responses API stand-in on 127.0.0.1 (ephemeral port), served by a daemon thread;
    stops when its context exits or after `idle_timeout` seconds without a request.
    `requests` holds every request body, `errors` every way the script did not fit."""

    def __init__(self, script: Script, idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
        self._script = script
        self._queue = [] if callable(script) else list(script)
        self._lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._stopped = threading.Event()
        self.idle_timeout = idle_timeout
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stand_in = self
        self._threads: list[threading.Thread] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    def start(self) -> ResponsesStandIn:
        self.touch()
        serve = threading.Thread(target=self._serve, name="responses-stand-in", daemon=True)
        watch = threading.Thread(target=self._watch_idle, name="stand-in-idle", daemon=True)
        self._threads = [serve, watch]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._server.shutdown()

    def wait_stopped(self, timeout: float) -> bool:
        """True once the server thread has ended (after stop() or the idle timeout)."""
        self._threads[0].join(timeout)
        return not self._threads[0].is_alive()

    def __enter__(self) -> ResponsesStandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        self._threads[0].join(10)

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

    def answer(self, request: dict[str, Any]) -> tuple[Item, ...]:
        with self._lock:
            self.requests.append(request)
            if not callable(self._script):
                if self._queue:
                    return as_items(self._queue.pop(0))
                self.errors.append(EXHAUSTED_TEXT)
                return (say(EXHAUSTED_TEXT),)
        try:
            return as_items(self._script(request))
        except Exception as error:  # a broken script must fail the test, not hang the CLI
            self.record_error(f"the script callable raised {error!r}")
            return (say(f"Stand-in error: {error!r}"),)


# --- a fresh Codex home and a run of the CLI -----------------------------------------------


def provider_config(base_url: str) -> str:
    """The `config.toml` lines that point the CLI at the stand-in."""
    return (
        f'model = "{MODEL}"\n'
        f'model_provider = "{PROVIDER}"\n'
        'approval_policy = "never"\n'
        "\n"
        f"[model_providers.{PROVIDER}]\n"
        'name = "stand-in"\n'
        f'base_url = "{base_url}"\n'
        'wire_api = "responses"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )


def codex_home(root: Path, api: ResponsesStandIn) -> Path:
    """A fresh CODEX_HOME whose config.toml points at the stand-in."""
    home = root / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(provider_config(api.base_url), encoding="utf-8")
    return home


_INHERITED_PREFIXES = ("OPENAI_", "CODEX_", "XDG_", "CLAUDE_", "ANTHROPIC_")


def codex_env(home: Path, codex_home_dir: Path) -> dict[str, str]:
    """Environment for a CLI run: a fresh HOME and CODEX_HOME, nothing of the user's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        CODEX_HOME=str(codex_home_dir),
        **{KEY_VARIABLE: "sk-stand-in"},
    )
    return env


@dataclass(frozen=True)
class CodexRun:
    returncode: int
    events: tuple[dict[str, Any], ...]
    stdout: str
    stderr: str

    @property
    def thread_id(self) -> str | None:
        for event in self.events:
            if event.get("type") == "thread.started":
                value = event.get("thread_id")
                return value if isinstance(value, str) else None
        return None

    def describe(self) -> str:
        return (
            f"exit {self.returncode}\nstdout:\n{self.stdout[-3000:]}\n"
            f"stderr:\n{self.stderr[-3000:]}"
        )


class CodexRunError(AssertionError):
    """`codex` did not finish in time; the message holds its output."""


def run_codex(
    args: Sequence[str], cwd: Path, env: Mapping[str, str], codex: Path, timeout: float = 240
) -> CodexRun:
    """`codex exec --json` with `args`, stdin closed (else stdin is appended to the prompt)."""
    process = subprocess.Popen(
        [str(codex), *args],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a timeout kills the CLI and everything it started
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise CodexRunError(
            f"codex {' '.join(args)} still ran after {timeout} s; killed.\n"
            f"stdout:\n{stdout[-2000:]}\nstderr:\n{stderr[-2000:]}"
        ) from None
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return CodexRun(process.returncode, tuple(events), stdout, stderr)


def exec_args(prompt: str, *extra: str) -> list[str]:
    """`codex exec` as the tests run it: JSON events, the workspace sandbox, no plugins."""
    return [
        "exec",
        "--json",
        "--sandbox",
        "workspace-write",
        "--disable",
        "plugins",
        "--skip-git-repo-check",
        *extra,
        prompt,
    ]


def rollouts(codex_home_dir: Path) -> list[Path]:
    """Every session transcript (`rollout-*.jsonl`) under the home, oldest first."""
    return sorted((codex_home_dir / "sessions").glob("*/*/*/rollout-*.jsonl"))


# --- a project with the gate installed, and an /implement session in it --------------------

# The agent's commands may write the project only: not /tmp or $TMPDIR (where the tests'
# CODEX_HOME and the gate's state live), as they may not write ~/.codex for a user.
SANDBOX_CONFIG = (
    "\n[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"
)


@dataclass(frozen=True)
class CodexSetup:
    """One test's Codex: its binary, HOME, CODEX_HOME and environment."""

    codex: Path
    root: Path
    home: Path
    codex_home: Path
    env: dict[str, str]

    @property
    def state(self) -> Path:
        return self.codex_home / "pytest-acceptance"


def codex_setup(root: Path, codex: Path, api: ResponsesStandIn) -> CodexSetup:
    """A fresh HOME and CODEX_HOME pointed at `api`, the workspace sandbox kept to the
    project, and a TMPDIR of its own (Codex refuses to put its helper binaries under the
    temporary folder a CODEX_HOME is in)."""
    home_dir = codex_home(root, api)
    with (home_dir / "config.toml").open("a", encoding="utf-8") as config:
        config.write(SANDBOX_CONFIG)
    env = codex_env(root / "home", home_dir)
    tmp = root / "session-tmp"
    tmp.mkdir(exist_ok=True)
    env.update(TMPDIR=str(tmp), ACCEPTANCE_CODEX=str(codex))
    return CodexSetup(codex, root, root / "home", home_dir, env)


def install_gate(
    setup: CodexSetup, project: Path, plugin_root: Path
) -> subprocess.CompletedProcess[str]:
    """The installer as the docs say to run it, with the system's python3."""
    return subprocess.run(
        ["python3", str(plugin_root / "hooks" / "codex" / "install.py"), str(project)],
        env=setup.env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
