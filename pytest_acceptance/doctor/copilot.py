"""Doctor's checks for GitHub Copilot CLI, in the project named: our hooks file with every
hook of ours and the timeouts the installer writes, nothing that makes Copilot skip them
(host_copilot.hooks_problems, which the hooks check too), the interpreter the hooks'
launcher picks, the state folder writable, the gate run's isolation level, and a synthetic
stop: the hooks file's own commands, run as Copilot runs them (``bash -c``, the payload on
stdin) in a temporary project whose one criterion fails, with a temporary HOME; the flow's
prompt pins it and the claim of done must be blocked by the gate's own run.

What Copilot itself would load is not asked (it has no command that lists the hooks it
runs): these checks read the files it reads, as its documentation says it reads them. A
folder Copilot does not trust runs no repository hook at all: that is Copilot's prompt,
which no file here records."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor import FAIL, Check, Options, probes
from pytest_acceptance.doctor.claude_stop import (
    LAST_MESSAGE,
    SPEC,
    StopOutcome,
    project_with,
    run_hook,
)
from pytest_acceptance.gate import host_copilot

HOST = host_copilot.CONTRACT.name


def installer(project: Path) -> str:
    return probes.installer(host_copilot, project)


def checks(options: Options) -> list[Check]:
    commands, rows = probes.hook_file(host_copilot, options)
    if commands and options.synthetic_stop:
        rows.append(_synthetic(options.project, commands))
    return rows


def _synthetic(project: Path, commands: dict[str, str]) -> Check:
    fix = f"the stop hook must block a claim of done on a failing criterion: {installer(project)}"
    if "userPromptSubmitted" not in commands or host_copilot.CONTRACT.stop_event not in commands:
        return Check(
            HOST, "synthetic stop", FAIL, "not blocked: no prompt or no stop hook to feed", fix
        )
    return probes.synthetic(HOST, fix, lambda: synthetic_stop(commands))


def synthetic_stop(commands: dict[str, str]) -> StopOutcome:
    """Pin a failing flow through the installed commands; the stop hook's decision."""
    scratch = Path(tempfile.mkdtemp(prefix="pytest-acceptance-doctor-"))
    try:
        return _run(commands, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(commands: dict[str, str], scratch: Path) -> StopOutcome:
    project = project_with(scratch / "project")
    hooks_file = project / host_copilot.HOOKS_FILE
    hooks_file.parent.mkdir(parents=True)
    content = {
        event: [{"type": "command", "bash": c, "timeoutSec": t}] for event, c, t in _ours(commands)
    }
    hooks_file.write_text(json.dumps({"version": host_copilot.HOOKS_VERSION, "hooks": content}))
    env = _environment(scratch)
    session = str(uuid.uuid4())
    common = {"sessionId": session, "timestamp": int(time.time() * 1000), "cwd": str(project)}
    transcript = stop_transcript(scratch / "events.jsonl", common)
    prompt = {**common, "prompt": f"{host_copilot.IMPLEMENT_PROMPT} {SPEC}"}
    pinned = _hook(commands["userPromptSubmitted"], project, env, prompt)
    if pinned.get("decision") == "block":
        return StopOutcome(False, f"the prompt hook refused the flow: {pinned.get('reason')}")
    stop = {
        **common,
        "transcriptPath": str(transcript),
        "stopReason": "end_turn",
        "stop_hook_active": False,
    }
    answer = _hook(commands[host_copilot.CONTRACT.stop_event], project, env, stop)
    reason = str(answer.get("reason") or answer or "no answer")
    blocked = answer.get("decision") == "block" and "AC-1" in reason
    return StopOutcome(blocked, " ".join(reason.split())[:160])


def stop_transcript(path: Path, stop: dict[str, Any]) -> Path:
    """Copilot's events.jsonl at the synthetic `stop`: the agent's last text, then that
    stop's own hook.start with the stop's payload as its input, as Copilot writes it, so
    the hook finds the stop's text at once instead of waiting for more to be written."""
    lines = [
        {"type": "assistant.message", "data": {"content": LAST_MESSAGE}},
        {
            "type": "hook.start",
            "data": {"hookType": host_copilot.CONTRACT.stop_event, "input": stop},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _ours(commands: dict[str, str]) -> list[tuple[str, str, int]]:
    """The installed commands, with the installer's timeouts (the hooks check them)."""
    return [(event, commands[event], t) for event, _, t in host_copilot.HOOKS if event in commands]


def _environment(scratch: Path) -> dict[str, str]:
    """This environment, as Copilot would pass it to its hooks, with HOME in the scratch
    folder (the gate's state goes under its ~/.copilot); the gate runs the interpreter
    doctor runs (it has the package)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_", "CLAUDE"))}
    (scratch / "home").mkdir()
    env.update(HOME=str(scratch / "home"), ACCEPTANCE_GATE_PYTHON=sys.executable)
    return env


def _hook(command: str, project: Path, env: dict[str, str], payload: dict[str, Any]) -> Any:
    return run_hook(["bash", "-c", command], project, env, payload)
