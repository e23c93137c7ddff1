"""A synthetic stop for Codex: the project's own `.codex/hooks.json`, byte for byte, in a
temporary project whose spec's one criterion fails, trusted in a temporary CODEX_HOME with
the hashes Codex itself reports (as the installer does); then the flow's prompt and a claim
of done fed to the commands that file declares, as Codex runs them (``/bin/sh -c``, the
payload on stdin). The Stop hook must block: its gate runs the failing criterion itself."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor.claude_stop import (
    LAST_MESSAGE,
    SPEC,
    StopOutcome,
    project_with,
    run_hook,
)
from pytest_acceptance.gate import codex_install, host_codex, hosts
from pytest_acceptance.gate.flow_state import write_json


def synthetic_stop(codex: str, hooks_file: Path, commands: dict[str, str]) -> StopOutcome:
    """Pin a failing flow through the installed hooks and return the Stop hook's decision."""
    scratch = Path(tempfile.mkdtemp(prefix="pytest-acceptance-doctor-"))
    try:
        return _run(codex, hooks_file, commands, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(codex: str, hooks_file: Path, commands: dict[str, str], scratch: Path) -> StopOutcome:
    project = project_with(scratch / "project")
    copy = project / host_codex.HOOKS_FILE
    copy.parent.mkdir()
    shutil.copyfile(hooks_file, copy)
    env = _environment(scratch)
    with codex_environment({name: env[name] for name in ("CODEX_HOME", "TMPDIR", "HOME")}):
        _trust(project, copy, codex)
    session = str(uuid.uuid4())
    transcript = scratch / "rollout.jsonl"
    transcript.write_text("", encoding="utf-8")
    common = {
        "session_id": session,
        "turn_id": str(uuid.uuid4()),
        "transcript_path": str(transcript),
        "cwd": str(project),
        "model": "doctor",
        "permission_mode": "default",
    }
    prompt = {
        **common,
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"{hosts.IMPLEMENT_PROMPT} {SPEC}",
    }
    pinned = _hook(commands["userPromptSubmit"], project, env, prompt)
    if pinned.get("decision") == "block":
        return StopOutcome(False, f"the prompt hook refused the flow: {pinned.get('reason')}")
    stop = {
        **common,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": LAST_MESSAGE,
    }
    answer = _hook(commands["stop"], project, env, stop)
    reason = str(answer.get("reason") or answer.get("systemMessage") or answer or "no answer")
    blocked = answer.get("decision") == "block" and "AC-1" in reason
    return StopOutcome(blocked, " ".join(reason.split())[:160])


def _environment(scratch: Path) -> dict[str, str]:
    """This environment, as Codex would pass it to its hooks, with HOME, CODEX_HOME and
    TMPDIR in the scratch folder (Codex wants its home outside its TMPDIR); the gate runs
    the interpreter doctor runs (it has the package)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_", "CLAUDE", "CODEX_"))
    }
    for folder in ("home", "codex-home", "tmp"):
        (scratch / folder).mkdir()
    env.update(
        HOME=str(scratch / "home"),
        CODEX_HOME=str(scratch / "codex-home"),
        TMPDIR=str(scratch / "tmp"),
        ACCEPTANCE_GATE_PYTHON=sys.executable,
    )
    return env


@contextmanager
def codex_environment(env: dict[str, str]) -> Iterator[None]:
    """`env`'s variables for this process while Codex is asked (the installer's functions
    read CODEX_HOME from it, Codex its TMPDIR), given back after."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _trust(project: Path, hooks_file: Path, codex: str) -> None:
    """Trust the project and each of its hooks as the installer does, with Codex's hashes."""
    config = host_codex.codex_home() / "config.toml"
    header = f"[projects.{codex_install.toml_string(str(project))}]"
    codex_install.set_config_tables(config, {header: {"trust_level": "trusted"}})
    listed = codex_install.list_hooks(project, codex)
    ours = [h for h in listed if h.get("sourcePath") == str(hooks_file)]
    hashes = {str(h["key"]): str(h["currentHash"]) for h in ours}
    tables = {
        f"[hooks.state.{codex_install.toml_string(key)}]": {"trusted_hash": value}
        for key, value in hashes.items()
    }
    codex_install.set_config_tables(config, tables)
    record = host_codex.TrustRecord(
        str(hooks_file),
        hashlib.sha256(hooks_file.read_bytes()).hexdigest(),
        tuple(sorted(hashes.items())),
    )
    write_json(host_codex.trust_record_path(hooks_file), record.to_json())


def _hook(command: str, project: Path, env: dict[str, str], payload: dict[str, Any]) -> Any:
    return run_hook(["/bin/sh", "-c", command], project, env, payload)
