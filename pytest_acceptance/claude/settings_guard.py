"""Settings changes during an /implement flow: refuse the ones that switch hooks off or add some.

Claude Code hot-reloads its settings files and sends a ConfigChange event (payload: `source`
= user_settings | project_settings | local_settings | policy_settings | skills, `file_path`)
before the change takes effect; a hook answering `{"decision": "block"}` keeps the old
settings. While a flow is open, a change of a user, project or local settings file is refused
when it sets `disableAllHooks`, disables this plugin in `enabledPlugins`, changes an
`ACCEPTANCE_*`/`CLAUDE_*` variable of its `env` section (the hooks' switches), makes its
`hooks` section differ from the one in force when the flow started, or changes anything
else of `env`, `sandbox`, a credential helper or a permission rule other than a new
"allow" (RUNTIME_KEYS). "In force when the flow started" is a snapshot the PreToolUse guard
takes at the flow's first guarded tool call (before the agent can have written anything),
kept in the plugin's own state ($CLAUDE_PLUGIN_DATA).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pytest_acceptance.claude.flow_state import data_dir
from pytest_acceptance.claude.hook_io import PLUGIN_NAME
from pytest_acceptance.tree.hostile import write_atomic

GUARDED_SOURCES = {"user_settings", "project_settings", "local_settings"}
# Settings that change how hooks and tools run: `env` reaches every hook command (a PATH
# with a fake python3, a PYTHONPATH with a json.py that exits 0), the others run commands
# or loosen the sandbox and the permission rules. Any change to them waits for the flow's end.
RUNTIME_KEYS = (
    "env",
    "sandbox",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "forceLoginMethod",
)
# Permission fields whose change loosens the rules (a new "allow" entry is the user's own
# "don't ask again" and is let through).
PERMISSION_KEYS = ("deny", "ask", "defaultMode", "additionalDirectories")
SNAPSHOTS = "settings-snapshots"
REFUSALS = "settings-refusals.jsonl"
# Settings' "env" reaches the hooks: the plugin's switches and Claude Code's own are frozen.
SWITCH_PREFIXES = ("ACCEPTANCE_", "CLAUDE_")  # under the plugin's data folder: what was refused


def settings_files(project_dir: Path, home: Path) -> list[Path]:
    """The settings files an agent could change (managed settings are the admin's)."""
    return [
        home / ".claude" / "settings.json",
        home / ".claude" / "settings.local.json",
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    ]


def hook_view(path: Path) -> dict[str, Any]:
    """What in one settings file decides which hooks run. Unreadable or absent: nothing."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    plugins = data.get("enabledPlugins")
    ours = (
        {key: value for key, value in plugins.items() if key.split("@")[0] == PLUGIN_NAME}
        if isinstance(plugins, dict)
        else {}
    )
    env = data.get("env")
    switches = (
        {key: value for key, value in env.items() if str(key).startswith(SWITCH_PREFIXES)}
        if isinstance(env, dict)
        else {}
    )
    return {
        "disableAllHooks": data.get("disableAllHooks") is True,
        "hooks": data.get("hooks"),
        "ourPlugin": ours,
        "switches": switches,
        "runtime": runtime_view(data),
    }


def runtime_view(data: dict[str, Any]) -> dict[str, Any]:
    """The RUNTIME_KEYS and PERMISSION_KEYS a settings file sets (absent keys left out)."""
    view = {key: data[key] for key in RUNTIME_KEYS if key in data}
    permissions = data.get("permissions")
    if isinstance(permissions, dict):
        kept = {key: permissions[key] for key in PERMISSION_KEYS if key in permissions}
        if kept:
            view["permissions"] = kept
    elif permissions is not None:
        view["permissions"] = permissions
    return view


def snapshot_path(flow_key: str) -> Path:
    return data_dir() / SNAPSHOTS / f"{flow_key}.json"


def ensure_snapshot(path: Path, files: list[Path]) -> None:
    """Record the hook view of every settings file, once per flow (first call wins)."""
    if path.exists():
        return
    views = {os.path.realpath(file): hook_view(file) for file in files}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(views), mode=0o600)


def load_snapshot(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def refusal(source: object, file_path: object, snapshot: dict[str, Any]) -> str | None:
    """Why this settings change must not take effect during the flow; None to let it."""
    if source not in GUARDED_SOURCES or not isinstance(file_path, str) or not file_path:
        return None
    before = snapshot.get(os.path.realpath(file_path))
    before = before if isinstance(before, dict) else {}
    after = hook_view(Path(file_path))
    if after.get("disableAllHooks") and not before.get("disableAllHooks"):
        return f"{file_path} sets disableAllHooks"
    for key, enabled in (after.get("ourPlugin") or {}).items():
        if enabled is False and (before.get("ourPlugin") or {}).get(key) is not False:
            return f"{file_path} disables the plugin {key}"
    if (after.get("switches") or {}) != (before.get("switches") or {}):
        return f"{file_path} changes ACCEPTANCE_*/CLAUDE_* variables in its env section"
    if (after.get("hooks") or None) != (before.get("hooks") or None):
        return f"{file_path} changes its hooks section (hooks added, removed or altered)"
    changed = sorted(
        key
        for key in set(after.get("runtime") or {}) | set(before.get("runtime") or {})
        if (after.get("runtime") or {}).get(key) != (before.get("runtime") or {}).get(key)
    )
    if changed:
        return f"{file_path} changes {', '.join(changed)} (how hooks and tools run)"
    return None


def record_refusal(payload: dict[str, Any], why: str) -> None:
    """One JSON line per refused change, for the human reading the plugin's state later."""
    record = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session_id": payload.get("session_id"),
        "source": payload.get("source"),
        "file_path": payload.get("file_path"),
        "refused_because": why,
    }
    try:
        data_dir().mkdir(parents=True, exist_ok=True)
        with (data_dir() / REFUSALS).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    except OSError:
        pass  # the refusal itself stands; the record is for reading later
