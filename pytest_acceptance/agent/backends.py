"""The agents that judge criteria: the Claude Code CLI, or any command speaking the contract.

A backend turns one prompt into one validated ``Verdict`` or raises ``DispatchError``
naming what went wrong (could not start, crashed, timed out, answered off-contract).
Either way the agent runs as its own process group in the project root, so a timeout
kills the agent and everything it started.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from pytest_acceptance.agent.prompt import (
    VERDICT_SCHEMA,
    MalformedVerdict,
    Verdict,
    load_answer,
    parse_verdict,
    parse_verdict_text,
)
from pytest_acceptance.run.containment import (
    capture_file,
    contained,
    fill,
    read_range,
    wait_for_exit,
)

# What a verifier may use: reading and searching. Everything that writes, runs code or
# reaches the network is removed from the session and denied on top of that.
READ_ONLY_TOOLS = "Read,Grep,Glob"
DENIED_TOOLS = "Bash,Edit,MultiEdit,Write,NotebookEdit,WebFetch,WebSearch,Task"
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
AGENT_PROMPT_LIMIT = 16_000
OUTPUT_TAIL = 2_000
KILL_GRACE_SECONDS = 5.0
# Bytes of an agent's stdout read: a verdict is small. Not run_bash.CHECK_LIMIT, though equal:
# that is the documented reach of output conditions; this only caps memory for an answer.
AGENT_OUTPUT_LIMIT = 16 * 1024 * 1024


class DispatchError(Exception):
    """One dispatch produced no valid verdict; ``str()`` says what went wrong."""

    def __init__(self, reason: str, output: str = "") -> None:
        super().__init__(reason)
        self.output = output  # bounded stdout/stderr excerpt, for the report


class AgentDefinitionError(ValueError):
    """A project agent file exists but cannot be used; the message names file and fix."""


@dataclass(frozen=True)
class AgentDefinition:
    """A Claude Code agent of the project: ``.claude/agents/<name>.md``."""

    name: str
    path: Path
    description: str
    prompt: str
    model: str | None
    digest: str  # of the file, so a changed agent invalidates cached verdicts


@dataclass(frozen=True)
class Dispatch:
    """One request to an agent."""

    prompt: str
    cwd: Path
    timeout: float
    model: str | None = None
    agent: AgentDefinition | None = None


class Backend(Protocol):
    name: str

    def identity(self) -> dict[str, Any]:
        """What makes two verdicts of this backend comparable (for the cache)."""

    def dispatch(self, request: Dispatch) -> Verdict:
        """Ask once; a valid verdict or DispatchError."""


def load_project_agent(rootdir: Path, name: str) -> AgentDefinition | None:
    """The project's agent of that name, or None when the project defines none."""
    if not AGENT_NAME.match(name):
        return None
    path = rootdir / ".claude" / "agents" / f"{name}.md"
    if not path.is_file():
        return None
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    meta, body = _split_frontmatter(text, path)
    model = meta.get("model")
    return AgentDefinition(
        name=name,
        path=path,
        description=str(meta.get("description") or f"Verifier {name}"),
        prompt=body.strip()[:AGENT_PROMPT_LIMIT],
        model=str(model) if model and model != "inherit" else None,
        digest=hashlib.sha256(raw).hexdigest(),
    )


def _split_frontmatter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        raise AgentDefinitionError(
            f"{path}:1: the frontmatter opened by '---' is never closed: add a '---' line"
        )
    # The agent can write .claude/agents/*.md: read it with the spec's bounded YAML loader
    # (depth, aliases, sizes), never a plain safe_load that recursion can crash.
    from pytest_acceptance.spec.yamlload import YamlProblem, load_block

    try:
        meta = load_block(text[3:end]) or {}
    except YamlProblem as error:
        raise AgentDefinitionError(
            f"{path}:{error.line + 2}: the frontmatter is not valid YAML ({error.problem}); fix it"
        ) from None
    if not isinstance(meta, dict):
        raise AgentDefinitionError(f"{path}:2: the frontmatter must be a mapping of keys")
    rest = text[end + 4 :]  # the closing '---' line, then the body
    return meta, rest.split("\n", 1)[1] if "\n" in rest else ""


class ClaudeBackend:
    """Headless Claude Code: ``claude -p`` with a JSON schema and read-only tools."""

    name = "claude"

    def __init__(self, executable: str) -> None:
        self.executable = executable

    def identity(self) -> dict[str, Any]:
        path = Path(self.executable)
        try:
            stat = path.stat()
            installed = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        except OSError:
            installed = self.executable
        return {"backend": self.name, "executable": installed}

    def command(self, request: Dispatch) -> list[str]:
        argv = [self.executable, "-p", request.prompt]
        argv += ["--output-format", "json", "--json-schema", json.dumps(VERDICT_SCHEMA)]
        argv += ["--tools", READ_ONLY_TOOLS, "--allowedTools", READ_ONLY_TOOLS]
        argv += ["--disallowedTools", DENIED_TOOLS, "--permission-mode", "dontAsk"]
        argv += ["--no-session-persistence"]
        if request.model:
            argv += ["--model", request.model]
        if request.agent:
            argv += _agent_arguments(request.agent)
        return argv

    def dispatch(self, request: Dispatch) -> Verdict:
        stdout, _stderr = run_agent_process(
            self.command(request), None, request.cwd, request.timeout, "claude"
        )
        try:
            result = load_answer(stdout)  # strict and bounded: nesting, size, repeated keys
        except MalformedVerdict as error:
            raise DispatchError(
                f"claude printed no JSON result ({error})", _tail(stdout or "(no output)")
            ) from None
        structured = _structured_output(result, stdout)
        try:
            return parse_verdict(structured)
        except MalformedVerdict as error:
            raise DispatchError(f"malformed verdict: {error}", _tail(stdout)) from None


def _agent_arguments(agent: AgentDefinition) -> list[str]:
    # `--agent NAME` alone would apply the file's `tools:` list, which drops the
    # StructuredOutput tool that --json-schema adds (verified with 2.1.328). So the
    # project's agent is passed again through --agents under its own name, keeping its
    # prompt and description; the tools stay the read-only set above.
    definition = {agent.name: {"description": agent.description, "prompt": agent.prompt}}
    return ["--agents", json.dumps(definition), "--agent", agent.name]


def _structured_output(result: Any, stdout: str) -> Any:
    if not isinstance(result, dict) or result.get("type") != "result":
        raise DispatchError("claude printed JSON that is not a result object", _tail(stdout))
    subtype = result.get("subtype")
    if result.get("is_error") or subtype != "success":
        text = str(result.get("result") or "")[:300]
        raise DispatchError(f"claude ended with an error ({subtype}): {text}", _tail(stdout))
    if result.get("structured_output") is None:
        text = str(result.get("result") or "")[:300]
        raise DispatchError(
            f"claude ended without a structured verdict; its last text: {text!r}", _tail(stdout)
        )
    return result["structured_output"]


class CommandBackend:
    """Any command: the prompt on stdin, the verdict JSON (and nothing else) on stdout."""

    name = "command"

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "argv": list(self.argv)}

    def dispatch(self, request: Dispatch) -> Verdict:
        stdout, _stderr = run_agent_process(
            self.argv, request.prompt.encode(), request.cwd, request.timeout, self.argv[0]
        )
        try:
            return parse_verdict_text(stdout)
        except MalformedVerdict as error:
            raise DispatchError(f"malformed verdict: {error}", _tail(stdout)) from None


def run_agent_process(
    argv: list[str], stdin: bytes | None, cwd: Path, timeout: float, label: str
) -> tuple[str, str]:
    """Run to completion within ``timeout``; stdout and stderr, or DispatchError.

    The agent runs contained (containment.py): when it ends, times out or is interrupted,
    everything it started is killed, including a child it detached with ``setsid``. Its
    output goes to files, not pipes, so such a child cannot hold the run open either."""
    with (
        capture_file("agent-stdin") as given,
        capture_file("agent-stdout") as out,
        capture_file("agent-stderr") as err,
    ):
        fill(given, stdin or b"")
        with contained(KILL_GRACE_SECONDS) as scope:  # ends killing what is left
            try:
                process = scope.popen(argv, cwd=cwd, stdin=given, stdout=out, stderr=err)
            except OSError as error:
                raise DispatchError(f"could not start {label}: {error}") from None
            code = wait_for_exit(process, timeout)
        stdout, stderr = _read_all(out), _read_all(err)
    if code is None:
        raise DispatchError(
            f"{label} timed out after {timeout:g} s and was killed", _tail(_text(stdout, stderr))
        )
    if code != 0:
        raise DispatchError(f"{label} exited with status {code}", _tail(_text(stdout, stderr)))
    return stdout, stderr


def _read_all(stream: IO[bytes]) -> str:
    end = min(os.fstat(stream.fileno()).st_size, AGENT_OUTPUT_LIMIT)
    return read_range(stream, 0, end).decode(errors="replace")


def _text(out: str, err: str) -> str:
    stdout, stderr = out.strip(), err.strip()
    return "\n".join(part for part in (stdout, f"stderr:\n{stderr}" if stderr else "") if part)


def _tail(text: str) -> str:
    return text if len(text) <= OUTPUT_TAIL else "…" + text[-OUTPUT_TAIL:]
