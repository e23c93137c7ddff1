"""The agents that judge criteria: the Claude Code CLI, or any command speaking the contract.

A backend turns one prompt into one validated ``Answer`` (the verdict and what it cost) or
raises ``DispatchError`` naming what went wrong (could not start, crashed, timed out,
answered off-contract, ran out of budget). Either way the agent runs contained in the
project root, so a timeout kills the agent and everything it started.

The Claude Code CLI is found without Node: an explicit path, else the CLI bundled in an
installed ``claude-agent-sdk`` (``pip install 'pytest-acceptance[claude]'``), else
``claude`` on PATH. The SDK is located, never imported: its ``query()`` would start the
CLI outside the run's containment and costs most of a second to import, while the CLI
itself takes the same flags either way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_acceptance.agent.isolated import (
    Finished,
    StartError,
    run_contained,
    run_in_helper,
)
from pytest_acceptance.agent.prompt import (
    VERDICT_SCHEMA,
    JudgeVerdict,
    MalformedVerdict,
    load_answer,
    parse_verdict,
)
from pytest_acceptance.model import one_line

# What a verifier may use: reading and searching. Everything that writes, runs code or
# reaches the network is removed from the session and denied on top of that.
READ_ONLY_TOOLS = "Read,Grep,Glob"
DENIED_TOOLS = "Bash,Edit,MultiEdit,Write,NotebookEdit,WebFetch,WebSearch,Task"
# The tree under verification is the agent's to write: its .claude/settings*.json (hooks
# that run commands, permission rules, MCP servers) and .mcp.json must not reach the
# judge. Only the user's own settings load, and no MCP server at all.
UNTRUSTED_CONFIGURATION = ["--setting-sources", "user", "--strict-mcp-config"]
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
AGENT_PROMPT_LIMIT = 16_000
OUTPUT_TAIL = 2_000
# The CLI inside claude-agent-sdk's wheel (no console script: never on PATH).
SDK_PACKAGE = "claude_agent_sdk"
SDK_BUNDLED = ("_bundled", "claude")
BUDGET_SUBTYPE = "error_max_budget_usd"
# What the CLI's result says when it has no usable key or login (2.1.x: "Not logged in ·
# Please run /login", "Invalid API key · Please run /login", an expired OAuth token).
_NO_LOGIN = re.compile(
    r"not logged in|please run /login|invalid api key|authentication_error|oauth token has expired",
    re.IGNORECASE,
)
AUTH_STATUS_SECONDS = 30.0


@dataclass(frozen=True)
class Usage:
    """What agent calls cost, as the agent reported it (a command judge may not)."""

    cost_usd: float = 0.0
    input_tokens: int = 0  # cache reads and writes included
    output_tokens: int = 0
    turns: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.cost_usd + other.cost_usd,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.turns + other.turns,
        )


@dataclass(frozen=True)
class Answer:
    """One valid verdict, and what asking for it cost."""

    verdict: JudgeVerdict
    usage: Usage = Usage()


class DispatchError(Exception):
    """One dispatch produced no valid verdict; ``str()`` says what went wrong."""

    def __init__(
        self,
        reason: str,
        output: str = "",
        usage: Usage = Usage(),
        budget: bool = False,
        no_login: bool = False,
    ) -> None:
        super().__init__(reason)
        self.output = output  # bounded stdout/stderr excerpt, for the report
        self.usage = usage  # an unusable answer may still have cost money
        self.budget = budget  # the agent stopped at its share of the budget
        self.no_login = no_login  # the CLI has no key or login: no dispatch can succeed


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
    max_cost: float | None = None  # USD this call may spend (the budget's share)
    env: Mapping[str, str] = field(default_factory=dict)  # what a command judge is told
    isolated: bool = False  # other agent calls of this process may run at the same time
    keep_helper: bool = False  # isolated: the calling thread keeps its helper process
    run_cgroup: Path | None = None  # the run's cgroup, for an isolated call's own


class Backend(Protocol):
    name: str

    def identity(self) -> dict[str, Any]:
        """What makes two verdicts of this backend comparable (for the cache)."""

    def dispatch(self, request: Dispatch) -> Answer:
        """Ask once; a valid answer or DispatchError."""


class ClaudeNotFound(Exception):
    """No Claude Code CLI where one was looked for; ``str()`` names each place tried."""


def find_claude(explicit: str | None) -> Path:
    """The Claude Code CLI to run: ``explicit`` (a path given by option or ini), else the
    CLI bundled in an installed claude-agent-sdk, else ``claude`` on PATH."""
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
        raise ClaudeNotFound(f"{explicit} (given) is not an executable file")
    tried = []
    bundled = bundled_claude()
    if bundled is not None and os.access(bundled, os.X_OK):
        return bundled
    tried.append(
        f"{bundled} (of the installed claude-agent-sdk) is missing or not executable"
        if bundled is not None
        else "no claude-agent-sdk is installed"
    )
    on_path = shutil.which("claude")
    if on_path is not None:
        return Path(on_path)
    tried.append("`claude` is not on PATH")
    raise ClaudeNotFound("; ".join(tried))


def bundled_claude() -> Path | None:
    """Where an installed claude-agent-sdk keeps its CLI, found without importing it."""
    try:
        spec = importlib.util.find_spec(SDK_PACKAGE)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec else []
    name = SDK_BUNDLED[1] + (".exe" if os.name == "nt" else "")
    for location in locations:
        candidate = Path(location, SDK_BUNDLED[0], name)
        if candidate.is_file():
            return candidate
    return Path(locations[0], SDK_BUNDLED[0], name) if locations else None


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

    def __init__(self, executable: str | Path) -> None:
        self.executable = str(executable)

    def identity(self) -> dict[str, Any]:
        path = Path(self.executable)
        try:
            stat = path.stat()
            installed = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        except OSError:
            installed = self.executable
        return {"backend": self.name, "executable": installed}

    def login_problem(self) -> str | None:
        """The one sentence that says the CLI has no key or login, from its own offline
        ``auth status``; None when it has one, or when the answer is not that (another
        CLI version, a crash): the first dispatch then says what went wrong."""
        try:
            done = subprocess.run(
                [self.executable, "auth", "status"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=AUTH_STATUS_SECONDS,
                check=False,
            )
            status = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        if not isinstance(status, dict) or status.get("loggedIn") is not False:
            return None
        # Bedrock, Vertex and other providers authenticate their own way: only the
        # first-party API's missing key is known to fail every call.
        if status.get("apiProvider", "firstParty") != "firstParty":
            return None
        return self.no_login()

    def no_login(self) -> str:
        return no_login_sentence(self.executable)

    def command(self, request: Dispatch) -> list[str]:
        argv = [self.executable, "-p", request.prompt]
        argv += ["--output-format", "json", "--json-schema", json.dumps(VERDICT_SCHEMA)]
        argv += ["--tools", READ_ONLY_TOOLS, "--allowedTools", READ_ONLY_TOOLS]
        argv += ["--disallowedTools", DENIED_TOOLS, "--permission-mode", "dontAsk"]
        argv += [*UNTRUSTED_CONFIGURATION, "--no-session-persistence"]
        if request.model:
            argv += ["--model", request.model]
        if request.max_cost is not None:
            argv += ["--max-budget-usd", f"{request.max_cost:.6f}"]
        if request.agent:
            argv += _agent_arguments(request.agent)
        return argv

    def dispatch(self, request: Dispatch) -> Answer:
        finished = run_agent(self.command(request), None, request, "claude")
        try:
            result = load_answer(finished.stdout)  # strict, bounded: nesting, size, repeats
        except MalformedVerdict as error:
            _raise_if_ended_badly(finished, request.timeout, "claude", Usage())
            raise DispatchError(
                f"claude printed no JSON result ({error})",
                _tail(finished.stdout or "(no output)"),
            ) from None
        usage = claude_usage(result)
        _raise_if_ended_badly(finished, request.timeout, "claude", usage, result)
        structured = _structured_output(result, finished.stdout, usage, self.executable)
        try:
            return Answer(parse_verdict(structured), usage)
        except MalformedVerdict as error:
            raise DispatchError(
                f"malformed verdict: {error}", _tail(finished.stdout), usage
            ) from None


def no_login_sentence(executable: str) -> str:
    """How the judge gets a key or a login, in one sentence (the README's Agents section
    says the same at length)."""
    return (
        f"the judge (the Claude Code CLI {executable}) has no key or login: export "
        "ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN, from `claude setup-token`) where "
        f"pytest runs, or run `{executable}` once and type /login"
    )


def claude_usage(result: Any) -> Usage:
    """Cost, tokens and turns from the CLI's ``--output-format json`` result."""
    if not isinstance(result, dict):
        return Usage()
    raw = result.get("usage")
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    tokens = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(
        cost_usd=_amount(result.get("total_cost_usd")),
        input_tokens=sum((_count(usage.get(name)) for name in tokens), 0),
        output_tokens=_count(usage.get("output_tokens")),
        turns=_count(result.get("num_turns")),
    )


def _amount(value: Any) -> float:
    return float(value) if _number(value) else 0.0


def _number(value: Any) -> bool:
    """A JSON number of at least 0 that a float holds (not a bool, NaN or 10**400)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value)) and value >= 0
    except OverflowError:
        return False


def _count(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return value if ok and value >= 0 else 0


def run_agent(argv: list[str], stdin: bytes | None, request: Dispatch, label: str) -> Finished:
    """Run the agent contained (in a helper process of its own when other agent calls of
    this process may run beside it); DispatchError when it cannot start."""
    try:
        if request.isolated:
            return run_in_helper(
                argv,
                stdin,
                request.cwd,
                request.timeout,
                request.env,
                request.run_cgroup,
                keep=request.keep_helper,
            )
        return run_contained(argv, stdin, request.cwd, request.timeout, request.env)
    except StartError as error:
        raise DispatchError(f"could not start {label}: {error}") from None


def _raise_if_ended_badly(
    finished: Finished, timeout: float, label: str, usage: Usage, result: Any = None
) -> None:
    """A timeout; the budget reached; or a non-zero exit without an error result to read."""
    output = _tail(_text(finished.stdout, finished.stderr))
    if finished.code is None:
        raise DispatchError(f"{label} timed out after {timeout:g} s and was killed", output, usage)
    if isinstance(result, dict) and result.get("subtype") == BUDGET_SUBTYPE:
        raise DispatchError(  # the CLI's JSON adds nothing a person can act on
            f"{label} stopped at its share of the budget (${usage.cost_usd:.4f} spent)",
            "",
            usage,
            budget=True,
        )
    if finished.code != 0 and not (isinstance(result, dict) and result.get("is_error")):
        raise DispatchError(f"{label} exited with status {finished.code}", output, usage)


def _agent_arguments(agent: AgentDefinition) -> list[str]:
    # `--agent NAME` alone would apply the file's `tools:` list, which drops the
    # StructuredOutput tool that --json-schema adds (verified with 2.1.328). So the
    # project's agent is passed again through --agents under its own name, keeping its
    # prompt and description; the tools stay the read-only set above.
    definition = {agent.name: {"description": agent.description, "prompt": agent.prompt}}
    return ["--agents", json.dumps(definition), "--agent", agent.name]


def _structured_output(result: Any, stdout: str, usage: Usage, executable: str) -> Any:
    if not isinstance(result, dict) or result.get("type") != "result":
        raise DispatchError("claude printed JSON that is not a result object", _tail(stdout), usage)
    subtype = result.get("subtype")
    if result.get("is_error") or subtype != "success":
        text = str(result.get("result") or result.get("errors") or "")[:300]
        if _NO_LOGIN.search(text):  # one sentence, never the CLI's JSON
            raise DispatchError(no_login_sentence(executable), "", usage, no_login=True)
        raise DispatchError(
            f"claude ended with an error ({subtype}): {one_line(text, 300)}", "", usage
        )
    if result.get("structured_output") is None:
        text = str(result.get("result") or "")[:300]
        raise DispatchError(
            f"claude ended without a structured verdict; its last text: {text!r}",
            _tail(stdout),
            usage,
        )
    return result["structured_output"]


class CommandBackend:
    """Any command: the prompt on stdin, the verdict JSON (and nothing else) on stdout.

    The verdict may carry what the call cost, for the run's totals and budget:
    ``"usage": {"cost_usd": 0.01, "input_tokens": 900, "output_tokens": 80, "turns": 2}``
    (each key optional)."""

    name = "command"

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "argv": list(self.argv)}

    def dispatch(self, request: Dispatch) -> Answer:
        finished = run_agent(self.argv, request.prompt.encode(), request, self.argv[0])
        _raise_if_ended_badly(finished, request.timeout, self.argv[0], Usage())
        try:
            stripped = finished.stdout.strip()
            if not stripped:
                raise MalformedVerdict("the agent printed nothing")
            answer = load_answer(stripped)
            return Answer(parse_verdict(answer), reported_usage(answer))
        except MalformedVerdict as error:
            raise DispatchError(f"malformed verdict: {error}", _tail(finished.stdout)) from None


USAGE_KEYS = {"cost_usd": float, "input_tokens": int, "output_tokens": int, "turns": int}


def reported_usage(answer: Any) -> Usage:
    """The optional ``usage`` object of a command judge's verdict; MalformedVerdict when it
    is there but not numbers of at least 0 under known keys."""
    if not isinstance(answer, dict) or "usage" not in answer:
        return Usage()
    usage = answer["usage"]
    if not isinstance(usage, dict):
        raise MalformedVerdict('"usage" is not an object')
    values: dict[str, Any] = {}
    for key, value in usage.items():
        kind = USAGE_KEYS.get(key)
        if kind is None:
            known = sorted(USAGE_KEYS)
            raise MalformedVerdict(
                f'"usage" has the unknown key {one_line(repr(key), 40)}: use {known}'
            )
        if not _number(value) or (kind is int and value != int(value)):
            shown = one_line(repr(value), 40)
            raise MalformedVerdict(f'"usage"."{key}" is {shown}: give a number of at least 0')
        values[key] = kind(value)
    return Usage(**values)


def run_agent_process(
    argv: list[str], stdin: bytes | None, cwd: Path, timeout: float, label: str
) -> tuple[str, str]:
    """Run to completion within ``timeout``, contained in this process; stdout and stderr,
    or DispatchError (could not start, timed out, non-zero exit)."""
    finished = run_agent(argv, stdin, Dispatch("", cwd, timeout), label)
    if finished.code is None:
        raise DispatchError(
            f"{label} timed out after {timeout:g} s and was killed",
            _tail(_text(finished.stdout, finished.stderr)),
        )
    if finished.code != 0:
        raise DispatchError(
            f"{label} exited with status {finished.code}",
            _tail(_text(finished.stdout, finished.stderr)),
        )
    return finished.stdout, finished.stderr


def _text(out: str, err: str) -> str:
    stdout, stderr = out.strip(), err.strip()
    return "\n".join(part for part in (stdout, f"stderr:\n{stderr}" if stderr else "") if part)


def _tail(text: str) -> str:
    return text if len(text) <= OUTPUT_TAIL else "…" + text[-OUTPUT_TAIL:]
