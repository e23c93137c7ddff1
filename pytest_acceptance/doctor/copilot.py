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
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Check, Options, probes
from pytest_acceptance.doctor.claude_stop import LAST_MESSAGE, SPEC, StopOutcome, project_with
from pytest_acceptance.gate import host_copilot, hosts

HOST = host_copilot.CONTRACT.name
_TIMEOUT = 600.0  # seconds: the stop hook's own deadline is 840


def installer(project: Path) -> str:
    return f"python3 <plugin>/hooks/copilot/install.py {project}"


def checks(options: Options) -> list[Check]:
    project = options.project
    hooks_file = project / host_copilot.HOOKS_FILE
    try:
        config = json.loads(hooks_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        found = f"no {host_copilot.HOOKS_FILE} in {project}"
        return [Check(HOST, "installed", NOT_INSTALLED, found, installer(project))]
    except (OSError, ValueError) as error:
        found = f"{hooks_file} cannot be read ({error})"
        return [Check(HOST, "hooks installed", FAIL, found, installer(project))]
    hooks = host_copilot.our_hooks(config) if isinstance(config, dict) else {}
    if not hooks:
        return [Check(HOST, "installed", NOT_INSTALLED, f"no hook of ours in {hooks_file}")]
    rows = [_installed(hooks, project)]
    root = options.plugin_root or next(filter(None, map(_plugin_root, hooks.values())), None)
    if root is None:
        found = "no hook of ours names the plugin's launcher"
        rows.append(Check(HOST, "hooks' python3", FAIL, found, installer(project)))
    else:
        rows.append(probes.launcher_python(HOST, root, project, {}))
    state = host_copilot.copilot_home() / hosts.STATE_FOLDER
    rows += [probes.writable_folder(HOST, state), probes.isolation_level(HOST)]
    if options.synthetic_stop:
        rows.append(_synthetic(project, hooks))
    return rows


def _plugin_root(hook: dict[str, Any]) -> Path | None:
    """The plugin's folder, from the launcher our hook's command starts."""
    try:
        words = shlex.split(str(hook.get("bash", "")))
    except ValueError:
        return None
    launcher = Path(words[1]) if len(words) > 1 else None
    if launcher is None or launcher.parts[-2:] != ("hooks", "python3"):
        return None
    return launcher.parent.parent


def _installed(hooks: dict[str, dict[str, Any]], project: Path) -> Check:
    problems = host_copilot.hooks_problems(project)
    if problems:
        return Check(HOST, "hooks installed", FAIL, "; ".join(problems), installer(project))
    return Check(HOST, "hooks installed", OK, ", ".join(sorted(hooks)))


def _synthetic(project: Path, hooks: dict[str, dict[str, Any]]) -> Check:
    name = "synthetic stop"
    fix = f"the stop hook must block a claim of done on a failing criterion: {installer(project)}"
    commands = {event: str(hook.get("bash")) for event, hook in hooks.items()}
    if "userPromptSubmitted" not in commands or host_copilot.CONTRACT.stop_event not in commands:
        return Check(HOST, name, FAIL, "not blocked: no prompt or no stop hook to feed", fix)
    try:
        outcome = synthetic_stop(commands)
    except Exception as error:  # whatever went wrong, the check failed and says why
        return Check(HOST, name, FAIL, f"could not run: {error}", fix)
    if outcome.blocked:
        return Check(HOST, name, OK, f"blocked: {outcome.reason}")
    return Check(HOST, name, FAIL, f"not blocked: {outcome.reason}", fix)


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
    transcript = scratch / "events.jsonl"
    lines = [
        {"type": "assistant.message", "data": {"content": LAST_MESSAGE}},
        {"type": "hook.start", "data": {"hookType": host_copilot.CONTRACT.stop_event}},
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    common = {"sessionId": session, "timestamp": int(time.time() * 1000), "cwd": str(project)}
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
    done = subprocess.run(
        ["bash", "-c", command],
        input=json.dumps(payload),
        cwd=project,
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
