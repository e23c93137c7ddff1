"""The guard with the REAL Claude Code CLI (pinned) and a scripted model: protected paths,
a hook-disabling settings change refused, forced stops visible in the CLI's JSON result,
interrupted flows released (a real interrupt, sent as the SDK does), the marketplace install,
the README's overnight command, and honest flows never blocked under CPU load.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import (
    BLOCK_TAG,
    REPO_ROOT,
    git,
    hidden_settings_write,
    make_repo,
    settings_refusals,
)
from support import gate_python
from support.claude_harness import (
    MessagesStandIn,
    StandInFactory,
    claude_env,
    reply,
    run_claude,
    text,
    tool_results,
    tool_use,
)

pytestmark = pytest.mark.e2e

GUARD_TAG = "[pytest-acceptance guard]"
SPEC_PATH = "specs/feature.md"
SPEC = """# Spec: the value

## Acceptance Criteria

#### AC-1: value file says two
**Verification:**
```yaml
method: bash
command: "grep -qx 2 value.txt"
```
"""
# /verify's exact command, as the skill runs it ("python" is the project's interpreter).
VERIFY_COMMAND = "python -m pytest --acceptance specs/feature.md --acceptance-log={log}"
HONEST_RUNS = int(os.environ.get("ACCEPTANCE_CLI_HONEST_RUNS", "2"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "project", SPEC)
    (repo / "value.txt").write_text("1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "value")
    return repo


def environment(home: Path, api: MessagesStandIn, **extra: str) -> dict[str, str]:
    """The CLI's environment with the project's virtualenv activated (`python` on PATH is
    the tests' gate interpreter, which has pytest-acceptance)."""
    env = claude_env(home, api.url)
    env["PATH"] = f"{gate_python.BIN}{os.pathsep}{env['PATH']}"
    env["ACCEPTANCE_GATE_PYTHON"] = gate_python.EXECUTABLE
    env.update(extra)
    return env


def implement(
    project: Path, home: Path, api: MessagesStandIn, *flags: str, **env: str
) -> dict[str, Any]:
    args = ["-p", f"/pytest-acceptance:implement {SPEC_PATH}", "--output-format", "json"]
    args += ["--max-turns", "20", *flags]
    if "--plugin-dir" not in flags:
        args += ["--plugin-dir", str(REPO_ROOT)]
    return run_claude(args, project, environment(home, api, **env), timeout=300)


def carries(request: dict[str, Any], tag: str) -> bool:
    return tag in json.dumps(request)


def plugin_data_records(home: Path) -> list[dict[str, Any]]:
    lines = [
        line
        for path in (home / ".claude" / "plugins" / "data").glob("*/forced-stops.jsonl")
        for line in path.read_text().splitlines()
    ]
    return [json.loads(line) for line in lines]


# --- protected paths, and a forced stop that machines see ------------------------------------


def test_protected_paths_are_denied_and_a_forced_stop_is_visible(
    project: Path, claude_home: Path, messages_api: StandInFactory
) -> None:
    spec = project / SPEC_PATH
    before = spec.read_bytes()
    api = messages_api(
        [
            tool_use("Read", {"file_path": str(spec)}),
            tool_use("Write", {"file_path": str(spec), "content": "# Spec\n"}),
            tool_use("Bash", {"command": 'echo \'{"status": "pass"}\' > .acceptance/verdict.json'}),
            tool_use("Bash", {"command": "git update-index --assume-unchanged value.txt"}),
            tool_use(
                "Write",
                {
                    "file_path": str(project / ".claude" / "settings.local.json"),
                    "content": '{"disableAllHooks": true}',
                },
            ),
            text("All criteria verified."),
            text("Stopping anyway."),
        ]
    )
    result = implement(
        project,
        claude_home,
        api,
        "--allowedTools",
        "Read Write Bash",
        ACCEPTANCE_HOOK_MAX_BLOCKS="1",
    )
    assert api.remaining == 0
    for request in api.requests[2:6]:  # the results of the four protected writes
        denial = tool_results(request)[0]
        assert denial.get("is_error") is True
        assert GUARD_TAG in json.dumps(denial), denial
    assert spec.read_bytes() == before
    assert not (project / ".acceptance" / "verdict.json").exists()
    assert not (project / ".claude" / "settings.local.json").exists()
    assert "h value.txt" not in git(project, "ls-files", "-v")
    # The premature stop was blocked, the retry hit the (lowered) cap: forced, and visible.
    assert carries(api.requests[6], BLOCK_TAG)
    assert result["terminal_reason"] == "stop_hook_prevented"
    assert result["result"] == "Stopping anyway."
    records = plugin_data_records(claude_home)
    assert len(records) == 1 and "ACCEPTANCE_HOOK_MAX_BLOCKS=1" in records[0]["forced_because"]
    project_records = (project / ".acceptance" / "forced-stops.jsonl").read_text().splitlines()
    assert json.loads(project_records[0])["session_id"] == result["session_id"]


def test_a_hook_disabling_settings_change_does_not_take_effect(
    project: Path, claude_home: Path, messages_api: StandInFactory
) -> None:
    """The write itself is hidden from the Bash heuristic (base64 | python3): it lands. The
    ConfigChange hook keeps the CLI from loading it, so the Stop hook still blocks."""
    api = messages_api(
        [
            tool_use(
                "Bash",
                {
                    "command": hidden_settings_write(
                        ".claude/settings.local.json", {"disableAllHooks": True}
                    )
                },
            ),
            text("All criteria verified."),
            text("Stopping."),
        ]
    )
    result = implement(
        project, claude_home, api, "--allowedTools", "Bash", ACCEPTANCE_HOOK_MAX_BLOCKS="1"
    )
    assert tool_results(api.requests[1])[0].get("is_error") is not True  # it ran
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings == {"disableAllHooks": True}
    assert settings_refusals(claude_home) == {
        f"{project / '.claude' / 'settings.local.json'} sets disableAllHooks"
    }
    assert carries(api.requests[2], BLOCK_TAG)  # the hooks still run
    assert result["terminal_reason"] == "stop_hook_prevented"


# --- interrupted flows (a real interrupt, as the Agent SDK sends it) -------------------------


class StreamSession:
    """`claude -p --input-format stream-json`: prompts and an interrupt on stdin, messages
    read from stdout on a thread."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        args = ["claude", "-p", "--input-format", "stream-json", "--output-format"]
        args += ["stream-json", "--verbose", "--plugin-dir", str(REPO_ROOT)]
        args += ["--allowedTools", "Bash"]
        self.process = subprocess.Popen(
            args,
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                continue

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def prompt(self, content: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": content}})

    def interrupt(self) -> None:
        self.send(
            {
                "type": "control_request",
                "request_id": "interrupt-1",
                "request": {"subtype": "interrupt"},
            }
        )

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if predicate(self.messages.get(timeout=1)):
                    return
            except queue.Empty:
                continue
        raise AssertionError("the CLI did not send the expected message in time")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("next_prompt", "holds"),
    [("What is the capital of France?", False), ("continue", True)],
)
def test_an_implement_interrupted_before_any_work_is_released(
    project: Path,
    claude_home: Path,
    messages_api: StandInFactory,
    next_prompt: str,
    holds: bool,
) -> None:
    api = messages_api(
        [
            reply(text("Starting on AC-1."), delay=60),  # never arrives: interrupted
            text("Here you go."),
            text("Still here."),
        ]
    )
    session = StreamSession(project, environment(claude_home, api, ACCEPTANCE_HOOK_MAX_BLOCKS="1"))
    try:
        session.prompt(f"/pytest-acceptance:implement {SPEC_PATH}")
        wait_until(lambda: len(api.requests) >= 1)  # the model is "thinking"
        session.interrupt()
        session.wait_for(lambda m: m.get("type") == "control_response")
        session.prompt(next_prompt)
        session.wait_for(lambda m: m.get("type") == "result" and m.get("num_turns", 0) > 0)
    finally:
        session.close()
    blocked = any(carries(request, BLOCK_TAG) for request in api.requests)
    assert blocked is holds
    if not holds:
        assert api.remaining == 1  # one answer, no block, no retry


# --- the marketplace ---------------------------------------------------------------------------


def plugin_copy(destination: Path) -> Path:
    """This repository's files (tracked and new, not ignored): what a clone holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        source = REPO_ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return destination


def test_install_from_the_marketplace_and_the_hooks_run(
    project: Path, claude_home: Path, messages_api: StandInFactory, tmp_path: Path
) -> None:
    clone = plugin_copy(tmp_path / "pytest-acceptance")
    api = messages_api([text("Done."), text("Stopping.")])
    env = environment(claude_home, api)

    def plugin(*args: str) -> str:
        done = subprocess.run(
            ["claude", "plugin", *args], cwd=project, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "Validation passed" in plugin("validate", str(clone))
    plugin("marketplace", "add", str(clone))
    plugin("install", "pytest-acceptance@pytest-acceptance")
    listed = plugin("list")
    assert "pytest-acceptance@pytest-acceptance" in listed and "enabled" in listed
    # The installed copy (no --plugin-dir) runs its skills and hooks.
    result = run_claude(
        ["-p", f"/pytest-acceptance:implement {SPEC_PATH}", "--output-format", "json"],
        project,
        {**env, "ACCEPTANCE_HOOK_MAX_BLOCKS": "1"},
        timeout=300,
    )
    assert carries(api.requests[1], BLOCK_TAG)
    assert result["terminal_reason"] == "stop_hook_prevented"


# --- the README's overnight command ------------------------------------------------------------


def readme_overnight() -> tuple[dict[str, Any], list[str]]:
    """The settings block and the command line of the README's "Run it overnight"."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("### Run it overnight", 1)[1].split("\n### ", 1)[0]
    settings = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    command = re.search(r"```sh\n(claude -p .*?)\n```", section, re.S).group(1)
    return settings, shlex.split(command.split(">")[0])


def test_the_overnight_command_runs_the_honest_flow_without_prompts(
    project: Path, claude_home: Path, messages_api: StandInFactory
) -> None:
    settings, command = readme_overnight()
    assert command[:2] == ["claude", "-p"] and "--allowedTools" not in command
    (project / ".claude").mkdir()
    # Untracked, as Claude Code keeps it: a committed settings.local.json is not read by -p.
    (project / ".claude" / "settings.local.json").write_text(json.dumps(settings))
    log = f"/tmp/implement-log-{uuid.uuid4().hex}.md"
    verify = VERIFY_COMMAND.format(log=log)
    api = messages_api(
        [
            tool_use("Bash", {"command": "date +%Y%m%d-%H%M%S"}),
            tool_use("Write", {"file_path": log, "content": "# Implementation log\n"}),
            tool_use("Read", {"file_path": str(project / "value.txt")}),
            tool_use("Write", {"file_path": str(project / "value.txt"), "content": "2\n"}),
            tool_use("Bash", {"command": "git commit -qam 'AC-1: value is two'"}),
            tool_use("Skill", {"skill": "pytest-acceptance:verify", "args": f"{SPEC_PATH} {log}"}),
            tool_use("Bash", {"command": verify}),
            tool_use("Skill", {"skill": "pytest-acceptance:done", "args": f"{SPEC_PATH} {log}"}),
            text("## Implementation Complete\n- AC-1: value file says two ✓"),
        ]
    )
    prompt = command[2].replace("specs/feature.md", SPEC_PATH)
    try:
        result = run_claude(
            ["-p", prompt, *command[3:], "--plugin-dir", str(REPO_ROOT), "--max-turns", "20"],
            project,
            environment(claude_home, api),
            timeout=300,
        )
    finally:
        Path(log).unlink(missing_ok=True)
    assert result["permission_denials"] == [], json.dumps(result["permission_denials"], indent=1)
    assert "verdict: PASS (exit code 0)" in json.dumps(tool_results(api.requests[7]))
    assert not any(carries(request, BLOCK_TAG) for request in api.requests)
    assert result["terminal_reason"] == "completed"


# --- honest flows are never blocked, under CPU load --------------------------------------------


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """A busy loop on every core while the test runs."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def honest_script(project: Path, log: str, passing: bool) -> list[Any]:
    verify = VERIFY_COMMAND.format(log=log)
    steps: list[Any] = [
        tool_use("Skill", {"skill": "pytest-acceptance:verify", "args": f"{SPEC_PATH} {log}"}),
        tool_use("Bash", {"command": verify}),
    ]
    if passing:
        steps.append(
            tool_use("Skill", {"skill": "pytest-acceptance:done", "args": f"{SPEC_PATH} {log}"})
        )
        steps.append(text("## Implementation Complete\n- AC-1: value file says two ✓"))
    else:
        steps.append(
            tool_use("Skill", {"skill": "pytest-acceptance:escalate", "args": f"AC-1 {log}"})
        )
        steps.append(text("## Escalation: Criterion AC-1\nThe value cannot be two here."))
    return steps


@pytest.mark.parametrize("passing", [True, False], ids=["verify-done", "verify-escalate"])
def test_honest_flows_are_never_blocked_under_load(
    project: Path,
    claude_home: Path,
    messages_api: StandInFactory,
    cpu_load: None,
    passing: bool,
) -> None:
    """ACCEPTANCE_CLI_HONEST_RUNS (default 2; 20 by hand) runs of each honest flow, busy
    loops on every core: the Stop hook waits for the transcript instead of judging a stale
    one."""
    if passing:
        (project / "value.txt").write_text("2\n")
        git(project, "commit", "-qam", "AC-1: value is two")
    blocked = []
    for run in range(HONEST_RUNS):
        log = str(claude_home / f"implement-log-{run}.md")
        api = messages_api(honest_script(project, log, passing))
        result = implement(project, claude_home, api, "--allowedTools", "Skill Bash Read Write")
        if any(carries(request, BLOCK_TAG) for request in api.requests) or (
            result["terminal_reason"] != "completed"
        ):
            blocked.append((run, result["terminal_reason"], result["result"][:300]))
    assert blocked == []
