"""A synthetic stop for Claude Code: an /implement flow whose one criterion fails, in a
temporary project with its own HOME and plugin state, pinned by the installed prompt hook;
then the agent's /verify and /done, and the installed Stop hook, run with the command line
hooks.json declares, exactly as the CLI runs it (``/bin/sh -c``, payload on stdin). The
Stop hook must block: its gate runs the failing criterion itself.

The transcript lines have the shapes the pinned CLI writes (docs/claude-code-plugin.md says
which lines count as a skill that really ran)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import installation
from pytest_acceptance.gate.hook_io import PLUGIN_NAME

SPEC = "specs/doctor.md"
SPEC_TEXT = """# Doctor's synthetic flow

#### AC-1: a file nobody writes exists
**Verification:**
```yaml
method: bash
command: "test -f written-by-nobody.txt"
```
"""
LAST_MESSAGE = "All criteria pass. Done."
_TIMEOUT = 600.0  # seconds: the Stop hook's own deadline is 840


@dataclasses.dataclass(frozen=True)
class StopOutcome:
    blocked: bool
    reason: str


def synthetic_stop(root: Path, commands: dict[tuple[str, str], str]) -> StopOutcome:
    """Pin a failing flow through the installed hooks and return the Stop hook's decision."""
    prompt = commands.get(("UserPromptExpansion", "prompt_hook.py"))
    stop = commands.get(("Stop", "stop_implement_hook.py"))
    if prompt is None or stop is None:
        return StopOutcome(False, "hooks.json declares no prompt or no Stop hook to feed")
    scratch = Path(tempfile.mkdtemp(prefix="pytest-acceptance-doctor-"))
    try:
        return _run(root, prompt, stop, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(root: Path, prompt: str, stop: str, scratch: Path) -> StopOutcome:
    project = project_with(scratch / "project")
    env = _environment(root, scratch, project)
    lines = _Transcript(project)
    transcript = scratch / "session.jsonl"
    prompt_id = str(uuid.uuid4())
    pinned = _hook(prompt, root, env, _expansion(lines, transcript, prompt_id))
    if pinned.get("decision") == "block":
        return StopOutcome(False, f"the prompt hook refused /implement: {pinned.get('reason')}")
    lines.implement(root, prompt_id)
    lines.skill(root, "verify", f"{SPEC} /tmp/implement-log-doctor.md")
    lines.skill(root, "done", "")
    lines.text(LAST_MESSAGE)
    lines.write(transcript)
    answer = _hook(stop, root, env, _stop_payload(lines, transcript))
    reason = str(answer.get("reason") or answer.get("stopReason") or answer or "no answer")
    blocked = answer.get("decision") == "block" and "AC-1" in reason
    return StopOutcome(blocked, " ".join(reason.split())[:160])


def project_with(path: Path) -> Path:
    """A git repository whose spec's one criterion fails."""
    (path / "specs").mkdir(parents=True)
    (path / SPEC).write_text(SPEC_TEXT, encoding="utf-8")
    identity = ["-c", "user.name=doctor", "-c", "user.email=doctor@localhost"]
    for words in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-q", "-m", "spec"]):
        subprocess.run(["git", *words], cwd=path, capture_output=True, check=True, timeout=60)
    return path


def _environment(root: Path, scratch: Path, project: Path) -> dict[str, str]:
    """This environment, as Claude Code would pass it, with HOME and the plugin's state in
    the scratch folder; the gate runs the interpreter doctor runs (it has the package)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_", "CLAUDE"))}
    (scratch / "home").mkdir()
    env.update(
        HOME=str(scratch / "home"),
        CLAUDE_PLUGIN_ROOT=str(root),
        CLAUDE_PLUGIN_DATA=str(scratch / "data"),
        CLAUDE_PROJECT_DIR=str(project),
        ACCEPTANCE_GATE_PYTHON=sys.executable,
    )
    return env


def run_hook(argv: list[str], cwd: str | Path, env: dict[str, str], payload: dict[str, Any]) -> Any:
    """Run an installed hook's command as its host does (the payload on stdin); its JSON
    answer ({} for none). A hook that exits non-zero raises with its last word."""
    done = subprocess.run(
        argv,
        input=json.dumps(payload),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"the hook exited {done.returncode}: {said[0]}")
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _hook(command: str, root: Path, env: dict[str, str], payload: dict[str, Any]) -> Any:
    argv = ["/bin/sh", "-c", installation.expand(command, root)]
    return run_hook(argv, env["CLAUDE_PROJECT_DIR"], env, payload)


def _expansion(lines: _Transcript, transcript: Path, prompt_id: str) -> dict[str, Any]:
    lines.write(transcript)
    return {
        **_common(lines, transcript),
        "prompt_id": prompt_id,
        "hook_event_name": "UserPromptExpansion",
        "expansion_type": "slash_command",
        "command_name": f"{PLUGIN_NAME}:implement",
        "command_args": SPEC,
        "command_source": "plugin",
        "prompt": f"/{PLUGIN_NAME}:implement {SPEC}",
    }


def _stop_payload(lines: _Transcript, transcript: Path) -> dict[str, Any]:
    return {
        **_common(lines, transcript),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "background_tasks": [],
        "last_assistant_message": LAST_MESSAGE,
    }


def _common(lines: _Transcript, transcript: Path) -> dict[str, Any]:
    return {
        "session_id": lines.session_id,
        "transcript_path": str(transcript),
        "cwd": lines.cwd,
        "permission_mode": "default",
    }


class _Transcript:
    """The session's lines, in the compact JSON the CLI writes."""

    def __init__(self, project: Path) -> None:
        self.cwd = str(project)
        self.session_id = f"doctor-{uuid.uuid4()}"
        self.lines: list[dict[str, Any]] = []
        self._parent: str | None = None
        self._tools = 0

    def _add(self, kind: str, **fields: Any) -> dict[str, Any]:
        line_id = str(uuid.uuid4())
        moment = datetime.now(timezone.utc)
        line = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "type": kind,
            **fields,
            "uuid": line_id,
            "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "cwd": self.cwd,
            "sessionId": self.session_id,
        }
        self._parent = line_id
        self.lines.append(line)
        return line

    def _skill_text(self, root: Path, short: str, args: str) -> dict[str, str]:
        text = f"Base directory for this skill: {root / 'skills' / short}\n\n(args: {args})\n"
        return {"type": "text", "text": text}

    def implement(self, root: Path, prompt_id: str) -> None:
        name = f"{PLUGIN_NAME}:implement"
        content = (
            f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
            f"<command-args>{SPEC}</command-args>"
        )
        self._add("user", message={"role": "user", "content": content}, promptId=prompt_id)
        meta = [self._skill_text(root, "implement", SPEC)]
        self._add("user", message={"role": "user", "content": meta}, isMeta=True)

    def skill(self, root: Path, short: str, args: str) -> None:
        """A Skill tool call of ours that ran: the call, its result, the skill's text."""
        self._tools += 1
        tool_id = f"toolu_doctor{self._tools:04d}"
        name = f"{PLUGIN_NAME}:{short}"
        call = {
            "type": "tool_use",
            "id": tool_id,
            "name": "Skill",
            "input": {"skill": name, "args": args},
        }
        self._assistant(call)
        result = {
            "type": "tool_result",
            "tool_use_id": tool_id,
            "content": f"Launching skill: {name}",
        }
        self._add(
            "user",
            message={"role": "user", "content": [result]},
            toolUseResult={"success": True, "commandName": name},
        )
        meta = [self._skill_text(root, short, args)]
        self._add(
            "user", message={"role": "user", "content": meta}, isMeta=True, sourceToolUseID=tool_id
        )

    def text(self, text: str) -> None:
        self._assistant({"type": "text", "text": text})

    def _assistant(self, block: dict[str, Any]) -> None:
        message = {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
        }
        self._add("assistant", message=message)
        time.sleep(0.002)  # distinct timestamps: the hooks order events by them too

    def write(self, path: Path) -> None:
        text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines)
        path.write_text(text, encoding="utf-8")
