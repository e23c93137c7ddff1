"""Doctor's checks for Claude Code: the plugin installed, enabled and its hooks declared; the
interpreter the hooks' launcher picks; the state folder writable; the gate run's isolation
level; Claude Code's sandbox; and a synthetic stop that the installed Stop hook must block."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor import FAIL, OK, WARN, Check, Options, probes
from pytest_acceptance.doctor.claude_stop import synthetic_stop
from pytest_acceptance.gate import apart, installation
from pytest_acceptance.gate.hook_io import PLUGIN_NAME

HOST = "claude-code"
INSTALL = (
    "claude plugin marketplace add pytest-acceptance/pytest-acceptance && "
    "claude plugin install pytest-acceptance@pytest-acceptance"
)
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")


def config_dir() -> Path:
    """Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured) if configured else Path.home() / ".claude"


def settings_files(project: Path) -> list[Path]:
    """Claude Code's settings files, the one that wins first."""
    return [
        MANAGED_SETTINGS,
        project / ".claude" / "settings.local.json",
        project / ".claude" / "settings.json",
        config_dir() / "settings.json",
    ]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _setting(project: Path, *keys: str) -> tuple[Any, Path | None]:
    """The value of a (nested) setting and the file it comes from, by precedence."""
    for path in settings_files(project):
        value: Any = _read_json(path)
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return value, path
    return None, None


def installed_plugin() -> tuple[str, Path] | None:
    """(plugin id, install path) of this plugin in installed_plugins.json, if installed."""
    data = _read_json(config_dir() / "plugins" / "installed_plugins.json")
    plugins = data.get("plugins") if isinstance(data, dict) else None
    for plugin_id, installs in (plugins or {}).items():
        if plugin_id.split("@")[0] != PLUGIN_NAME or not isinstance(installs, list):
            continue
        for install in installs:
            path = install.get("installPath") if isinstance(install, dict) else None
            if isinstance(path, str):
                return plugin_id, Path(path)
    return None


def checks(options: Options) -> list[Check]:
    found = installed_plugin()
    plugin_id = found[0] if found and options.plugin_root is None else None
    root = options.plugin_root or (found[1] if found else None)
    if root is None or not root.is_dir():
        where = f"{root} is not a folder" if root else "not in installed_plugins.json"
        return [Check(HOST, "plugin installed", FAIL, where, INSTALL)]
    rows = [Check(HOST, "plugin installed", OK, f"{plugin_id or 'given'} at {root}")]
    rows += [_hooks_enabled(options.project), _plugin_enabled(options.project, plugin_id)]
    commands, problems = installation.hook_commands(root)
    fix = f"restore the plugin's hooks/hooks.json: {INSTALL}"
    declared = f"{len(commands)} hooks declared in {root / installation.HOOKS_FILE}"
    rows.append(
        Check(HOST, "hooks.json", FAIL, "; ".join(problems), fix)
        if problems
        else Check(HOST, "hooks.json", OK, declared)
    )
    rows += [_interpreter(root, options.project), _state_folder(plugin_id)]
    rows += [probes.isolation_level(HOST), _sandbox(options.project)]
    if options.synthetic_stop:
        rows.append(_synthetic(root, commands))
    return rows


def _hooks_enabled(project: Path) -> Check:
    for path in settings_files(project):
        data = _read_json(path)
        if isinstance(data, dict) and data.get("disableAllHooks") is True:
            fix = f'remove "disableAllHooks": true from {path}'
            return Check(HOST, "hooks enabled", FAIL, f"{path} sets disableAllHooks", fix)
    return Check(HOST, "hooks enabled", OK, "no settings file sets disableAllHooks")


def _plugin_enabled(project: Path, plugin_id: str | None) -> Check:
    if plugin_id is None:
        return Check(HOST, "plugin enabled", OK, "loaded from --plugin-root (--plugin-dir)")
    value, path = _setting(project, "enabledPlugins", plugin_id)
    if value is True:
        return Check(HOST, "plugin enabled", OK, f"{plugin_id} enabled in {path}")
    fix = f"claude plugin enable {plugin_id}"
    where = f"disabled in {path}" if path else "in no settings file's enabledPlugins"
    return Check(HOST, "plugin enabled", FAIL, f"{plugin_id} {where}", fix)


def _interpreter(root: Path, project: Path) -> Check:
    env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_PLUGIN_ROOT": str(root)}
    return probes.launcher_python(HOST, root, project, env)


def data_folder(plugin_id: str | None) -> Path:
    """The state folder Claude Code gives this plugin's hooks ($CLAUDE_PLUGIN_DATA)."""
    if plugin_id is None:
        return Path.home() / ".claude" / "plugins" / "data" / PLUGIN_NAME
    return config_dir() / "plugins" / "data" / re.sub(r"[^a-zA-Z0-9\-_]", "-", plugin_id)


def _state_folder(plugin_id: str | None) -> Check:
    return probes.writable_folder(HOST, data_folder(plugin_id))


def _sandbox(project: Path) -> Check:
    """Claude Code's sandbox as the settings set it; on, it needs bubblewrap and socat."""
    enabled, path = _setting(project, "sandbox", "enabled")
    fix = 'set "sandbox": {"enabled": true} in your settings (docs/threat-model.md)'
    if enabled is not True:
        return Check(HOST, "agent sandbox", WARN, "off: Bash runs outside it", fix)
    missing = [tool for tool in ("bwrap", "socat") if not _runs(tool)]
    if missing:
        fix = f"install {' and '.join(missing)} (apt-get install bubblewrap socat)"
        return Check(HOST, "agent sandbox", FAIL, f"on in {path}, but no {missing}", fix)
    return Check(HOST, "agent sandbox", OK, f"on in {path}")


def _runs(tool: str) -> bool:
    path = apart.installed(tool) if tool in apart.SYSTEM_PATHS else None
    words = [path or tool, "--version" if tool == "bwrap" else "-V"]
    try:
        done = subprocess.run(words, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _synthetic(root: Path, commands: dict[tuple[str, str], str]) -> Check:
    fix = "the Stop hook must block a /done on a failing criterion: reinstall the plugin"
    return probes.synthetic(HOST, fix, lambda: synthetic_stop(root, commands))
