"""The OpenAI Codex CLI as a host of the gate: its contract, its payloads, its state, its trust.

Codex (pinned and tested: 0.171.0) runs Claude-style command hooks, with three differences
the gate has to make up for itself. The decisions are host-neutral (prompt_flow.py, caps.py);
what they need to know of Codex is here, on its adapter:

- No Skill tool. The flow is pinned from the user's own prompt (UserPromptSubmit, which the
  model cannot send): a prompt that starts with ``$acceptance-implement SPEC``
  (hosts.implement_args). Every stop of the flow is a claim of done, or an escalation
  (prompt_flow.py); the gate's reasons are said in the steps Codex's agent can take
  (:func:`in_codex_words`).
- No cap on Stop blocks (its contract's ``block_cap`` is None): the gate counts its own
  blocks (caps.StopCount).
- Hooks run only when trusted: Codex skips an untrusted or edited hook silently. The
  installer (codex_install.py) trusts the hooks it writes and records what it trusted;
  every hook of ours that runs checks that record against the hooks file and Codex's
  config.toml (:func:`skipped_hooks`), and the decisions say so loudly when one of the
  others would be skipped.

The flow's state lives in ``$CODEX_HOME/pytest-acceptance`` (outside the project: with
``--sandbox workspace-write`` the agent's commands cannot write there).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pytest_acceptance.gate import host_claude, hosts, prompt_flow, protect
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.hosts import StopEvent, claude_style_stop

TRUST_RECORD = "trust.json"  # under the state folder: what the installer trusted
HOOKS_FILE = Path(".codex") / "hooks.json"
HOOK_SET = "codex"  # the hook set's folder under the plugin's hooks/
IMPLEMENT_SKILL = hosts.IMPLEMENT_SKILL

# Claude-style command hooks: Claude Code's contract, but for the cap and the files.
CONTRACT = dataclasses.replace(
    host_claude.CONTRACT,
    name="codex",
    title="OpenAI Codex CLI",
    block_cap=None,
    settings_files=(
        "$CODEX_HOME/config.toml",
        "$CODEX_HOME/hooks.json",
        ".codex/hooks.json",
        ".codex/config.toml",
        "/etc/codex/requirements.toml",
    ),
)


def recognises(payload: Mapping[str, Any]) -> bool:
    """A Codex Stop payload names the turn it ends (``turn_id``); Claude Code's does not."""
    return payload.get("hook_event_name") == CONTRACT.stop_event and "turn_id" in payload


def read(payload: Mapping[str, Any]) -> StopEvent:
    return claude_style_stop(CONTRACT.name, payload, "last_assistant_message")


def codex_home() -> Path:
    configured = os.environ.get("CODEX_HOME", "").strip()
    return Path(configured) if configured else Path("~/.codex").expanduser()


def state_dir() -> Path:
    return codex_home() / hosts.STATE_FOLDER


in_codex_words = prompt_flow.in_flow_words  # the same steps: a command, a stop, a message


# --- hook trust -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrustRecord:
    """What the installer trusted: the hooks file's bytes and each handler's trust hash."""

    hooks_file: str
    file_sha256: str
    hashes: tuple[tuple[str, str], ...]  # (Codex's key of a handler, its trusted_hash)

    def to_json(self) -> dict[str, Any]:
        return {
            "hooks_file": self.hooks_file,
            "file_sha256": self.file_sha256,
            "hashes": dict(self.hashes),
        }

    @classmethod
    def from_json(cls, data: object) -> TrustRecord | None:
        if not isinstance(data, dict) or set(data) != {"hooks_file", "file_sha256", "hashes"}:
            return None
        hooks_file, file_sha256, hashes = data["hooks_file"], data["file_sha256"], data["hashes"]
        if not (isinstance(hooks_file, str) and isinstance(file_sha256, str)):
            return None
        if not isinstance(hashes, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()
        ):
            return None
        return cls(hooks_file, file_sha256, tuple(sorted(hashes.items())))


def trust_record_path(hooks_file: Path) -> Path:
    digest = hashlib.sha256(str(hooks_file).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return state_dir() / "trust" / f"{digest}.json"


def hooks_file_of(cwd: str | None) -> Path:
    return Path(cwd or os.getcwd()).resolve() / HOOKS_FILE


def trust_problems(hooks_file: Path) -> list[str]:
    """Why Codex would skip a hook of ours in this project (empty when none is skipped):
    the hooks file changed since the installer trusted it, or config.toml no longer holds
    the trusted hash of each of its handlers."""
    project = hooks_file.parent.parent
    fix = f"run the installer again (`{hosts.installer_command(HOOK_SET, project)}`)"
    try:
        record = TrustRecord.from_json(json.loads(trust_record_path(hooks_file).read_bytes()))
    except FileNotFoundError:
        return [f"the installer never trusted {hooks_file}: {fix}"]
    except (OSError, ValueError) as error:
        return [f"the installer's trust record for {hooks_file} is unreadable ({error}): {fix}"]
    if record is None:
        return [f"the installer's trust record for {hooks_file} is damaged: {fix}"]
    try:
        current = hashlib.sha256(hooks_file.read_bytes()).hexdigest()
    except OSError as error:
        return [f"cannot read {hooks_file} ({error}): {fix}"]
    problems = []
    if current != record.file_sha256:
        problems.append(
            f"{hooks_file} changed since it was trusted, so Codex skips its hooks: {fix}"
        )
    trusted = configured_trust(codex_home() / "config.toml")
    for key, expected in record.hashes:
        if trusted.get(key) != expected:
            problems.append(f"Codex's config.toml no longer trusts the hook {key}: {fix}")
    return problems


_STATE_HEADER = re.compile(r'^\s*\[\s*hooks\s*\.\s*state\s*\.\s*("(?:[^"\\]|\\.)*")\s*\]\s*$')
_TRUSTED_HASH = re.compile(r'^\s*trusted_hash\s*=\s*("(?:[^"\\]|\\.)*")\s*$')


def configured_trust(config: Path) -> dict[str, str]:
    """`[hooks.state."<key>"] trusted_hash` of Codex's config.toml, by key. Read as TOML
    where the standard library has a reader (3.11+), else the tables as the installer
    writes them; a file that cannot be read trusts nothing."""
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return _trust_tables(text.split("\n"))
    try:
        parsed = tomllib.loads(text)
    except ValueError:
        return {}
    hooks = parsed.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return {}
    return {
        key: value["trusted_hash"]
        for key, value in state.items()
        if isinstance(value, dict) and isinstance(value.get("trusted_hash"), str)
    }


def _trust_tables(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    key: str | None = None
    for line in lines:
        header = _STATE_HEADER.match(line)
        if header is not None:
            key = _toml_string(header.group(1))
            continue
        if line.lstrip().startswith("["):
            key = None
            continue
        value = _TRUSTED_HASH.match(line)
        if key is not None and value is not None:
            found[key] = _toml_string(value.group(1)) or ""
    return {k: v for k, v in found.items() if k}


def _toml_string(quoted: str) -> str | None:
    try:
        value = json.loads(quoted)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def trust_warning(problems: list[str]) -> str:
    return (
        "pytest-acceptance: THIS CODEX SESSION IS NOT FULLY GATED. Codex skips untrusted or "
        "edited hooks silently: " + " ".join(problems)
    )


def skipped_hooks(cwd: str | None) -> str | None:
    """The warning to give when Codex would skip a hook of ours in the project at `cwd`."""
    problems = trust_problems(hooks_file_of(cwd))
    return trust_warning(problems) if problems else None


# --- the guard: what a Bash or apply_patch call writes --------------------------------------


def protected_paths(flow: Flow) -> protect.Protected:
    """The pinned spec, the project's `.codex/`, Codex's home (config, sessions, the gate's
    state), its managed configuration and the plugin; plus what protect.py protects by
    name (.git, .acceptance, ...)."""
    trees = [
        (Path(flow.repo) / ".codex", "`.codex/` holds the hooks that gate this flow"),
        (codex_home(), "Codex's home holds its configuration, hook trust and the gate's state"),
        (PLUGIN_ROOT, protect.PLUGIN_WHY),
        (
            Path("/etc/codex"),
            "Codex's managed configuration (requirements.toml) is the administrator's",
        ),
    ]
    return protect.protecting(flow.spec_path, trees)


def protected_target(flow: Flow, payload: Mapping[str, Any]) -> str | None:
    """What a `Bash` or `apply_patch` call would write among the protected paths, described;
    None when it writes none of them."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return None
    cwd = Path(str(payload.get("cwd") or flow.repo))
    protected = protected_paths(flow)
    if payload.get("tool_name") == "apply_patch":
        found = protect.patch_violations(command, cwd, protected)
    else:
        found = protect.bash_violations(command, cwd, protected)
    return protect.describe(found) if found else None


ADAPTER = prompt_flow.adapter(CONTRACT, recognises, read, codex_home, skipped_hooks)
