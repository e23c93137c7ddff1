"""Install the gate into a project for the OpenAI Codex CLI, trusted as Codex requires.

What it writes:
- ``<project>/.codex/hooks.json``: our UserPromptSubmit, PreToolUse and Stop hooks, whose
  commands start the plugin's scripts (``hooks/codex/``) by absolute path;
- ``<project>/.agents/skills/acceptance-implement/SKILL.md``: the flow's instructions, as an
  Agent Skill (``$acceptance-implement SPEC`` in a prompt makes Codex inject it);
- in ``$CODEX_HOME/config.toml``: the project as trusted (project hooks load only then) and,
  per handler, ``[hooks.state."<key>"] trusted_hash`` -- the hash Codex itself reports for
  it (``codex app-server``, ``hooks/list``), never one computed here, so that a future Codex
  hashing differently fails the installation loudly instead of skipping the hooks silently;
- the trust record (host_codex.TrustRecord) the hooks check at every prompt and stop.

It then asks Codex again and fails unless every handler of ours is reported trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import host_codex
from pytest_acceptance.gate.flow_state import write_json
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.hosts import InstallError

APP_SERVER_TIMEOUT = 60.0
TRUSTED = "trusted"
# Event, matcher, script, timeout in seconds (the scripts' own deadlines are shorter).
HANDLERS = (
    ("UserPromptSubmit", None, "prompt.py", 120),
    ("PreToolUse", "^(Bash|apply_patch)$", "pretool.py", 30),
    ("Stop", None, "stop.py", 900),
)


def hooks_definition(plugin_root: Path = PLUGIN_ROOT) -> dict[str, Any]:
    hooks: dict[str, list[dict[str, Any]]] = {}
    launcher = plugin_root / "hooks" / "python3"
    for event, matcher, script, timeout in HANDLERS:
        command = f'/bin/sh "{launcher}" "{plugin_root / "hooks" / "codex" / script}"'
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": command, "timeout": timeout}]
        }
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    return {"hooks": hooks}


def install(project: Path, codex: str, plugin_root: Path = PLUGIN_ROOT) -> list[str]:
    """Install and trust the hooks in `project`; the keys Codex now reports trusted."""
    project = project.resolve()
    hooks_file = project / host_codex.HOOKS_FILE
    hooks_file.parent.mkdir(parents=True, exist_ok=True)
    hooks_file.write_text(json.dumps(hooks_definition(plugin_root), indent=2) + "\n", "utf-8")
    _install_skill(project, plugin_root)
    config = host_codex.codex_home() / "config.toml"
    set_config_tables(config, {_project_header(project): {"trust_level": "trusted"}})
    ours = _our_handlers(list_hooks(project, codex), hooks_file)
    tables = {_state_header(h["key"]): {"trusted_hash": h["currentHash"]} for h in ours}
    set_config_tables(config, tables)
    record = host_codex.TrustRecord(
        str(hooks_file),
        hashlib.sha256(hooks_file.read_bytes()).hexdigest(),
        tuple(sorted((h["key"], h["currentHash"]) for h in ours)),
    )
    write_json(host_codex.trust_record_path(hooks_file), record.to_json())
    return check(project, codex)


def check(project: Path, codex: str) -> list[str]:
    """The keys of our handlers, when Codex reports each of them trusted; else InstallError."""
    hooks_file = project.resolve() / host_codex.HOOKS_FILE
    ours = _our_handlers(list_hooks(project, codex), hooks_file)
    untrusted = [
        f"{h['key']} ({h.get('trustStatus')})" for h in ours if h.get("trustStatus") != TRUSTED
    ]
    if untrusted:
        raise InstallError(f"Codex does not trust these hooks: {', '.join(untrusted)}")
    problems = host_codex.trust_problems(hooks_file)
    if problems:
        raise InstallError(" ".join(problems))
    return [str(h["key"]) for h in ours]


def _our_handlers(listed: list[dict[str, Any]], hooks_file: Path) -> list[dict[str, Any]]:
    ours = [h for h in listed if h.get("sourcePath") == str(hooks_file)]
    if len(ours) != len(HANDLERS):
        raise InstallError(
            f"Codex lists {len(ours)} of our {len(HANDLERS)} hooks in {hooks_file} (is the "
            "project trusted, and is this the pinned Codex?)"
        )
    for handler in ours:
        if not (
            isinstance(handler.get("key"), str) and isinstance(handler.get("currentHash"), str)
        ):
            raise InstallError(f"Codex lists a hook without key or hash: {handler}")
    return ours


def _install_skill(project: Path, plugin_root: Path) -> None:
    source = plugin_root / "hooks" / "codex" / "skills" / host_codex.IMPLEMENT_SKILL
    target = project / ".agents" / "skills" / host_codex.IMPLEMENT_SKILL
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "SKILL.md", target / "SKILL.md")


# --- codex app-server -----------------------------------------------------------------------


def list_hooks(project: Path, codex: str) -> list[dict[str, Any]]:
    """Every hook handler Codex sees for `project`, as `hooks/list` reports it."""
    requests: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "pytest-acceptance", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(project)]}},
    ]
    answer = _ask_app_server(project, codex, requests, answer_id=2)
    data = answer.get("result", {}).get("data") if isinstance(answer.get("result"), dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise InstallError(f"`codex app-server` answered hooks/list with {answer}")
    hooks = data[0].get("hooks")
    if not isinstance(hooks, list):
        raise InstallError(f"`codex app-server` answered hooks/list with {answer}")
    return [h for h in hooks if isinstance(h, dict)]


def _ask_app_server(
    project: Path, codex: str, requests: list[dict[str, Any]], answer_id: int
) -> dict[str, Any]:
    try:
        process = subprocess.Popen(
            [codex, "app-server"],
            cwd=project,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError as error:
        raise InstallError(f"cannot start `{codex} app-server`: {error}") from None
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        assert process.stdin is not None
        for request in requests:
            process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        while True:
            line = lines.get(timeout=APP_SERVER_TIMEOUT)
            if line is None:
                raise InstallError(f"`{codex} app-server` ended without answering")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == answer_id:
                return message
    except queue.Empty:
        raise InstallError(
            f"`{codex} app-server` did not answer in {APP_SERVER_TIMEOUT} s"
        ) from None
    finally:
        process.kill()
        process.wait()


# --- config.toml ----------------------------------------------------------------------------


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, as long as every character outside
    the basic plane is written as itself (JSON would split it into surrogates, which TOML
    refuses) and DEL is escaped (JSON leaves it bare, TOML does not allow it)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _project_header(project: Path) -> str:
    return f"[projects.{toml_string(str(project))}]"


def _state_header(key: str) -> str:
    return f"[hooks.state.{toml_string(key)}]"


def set_config_tables(config: Path, tables: dict[str, dict[str, str]]) -> None:
    """Replace (or add) whole tables of config.toml, by their header line; other lines stay."""
    try:
        lines = config.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        lines = []
    kept: list[str] = []
    dropping = False
    for line in lines:
        if line.lstrip().startswith("["):
            dropping = line.strip() in tables
        if not dropping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    for header, values in tables.items():
        kept += ["", header, *(f"{key} = {toml_string(value)}" for key, value in values.items())]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("\n".join(kept) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    """`install.py [--check] [PROJECT]`: install into PROJECT (default: the current folder)
    and trust; `--check` only asks Codex whether our hooks there are trusted."""
    only_check = "--check" in argv
    folders = [a for a in argv if a != "--check"]
    project = Path(folders[0] if folders else os.getcwd())
    codex = os.environ.get("ACCEPTANCE_CODEX", "").strip() or shutil.which("codex") or "codex"
    try:
        keys = check(project, codex) if only_check else install(project, codex)
    except InstallError as error:
        print(f"pytest-acceptance: {error}", file=sys.stderr)
        return 1
    print(f"pytest-acceptance: {len(keys)} hooks installed and trusted in {project}")
    return 0
