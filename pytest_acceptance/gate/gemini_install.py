"""Install the gate into a project for Gemini CLI.

What it writes:
- in ``<project>/.gemini/settings.json`` (the rest of the file kept): ``hooksConfig.enabled``
  and our ``BeforeAgent``, ``BeforeTool`` and ``AfterAgent`` hooks, whose commands start the
  plugin's scripts (``hooks/gemini/``) by absolute path, each with a timeout in milliseconds
  well above the script's own deadline (Gemini drops a hook past its timeout and lets the
  event through: a timeout that is too short is a silent ungated stop);
- in ``~/.gemini/trustedFolders.json``: the project as trusted (``TRUST_FOLDER``): Gemini
  ignores an untrusted folder's ``.gemini/settings.json``, hooks included.

Standard library only, Python 3.8: hooks/gemini/install.py imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import host_gemini, hosts
from pytest_acceptance.gate.flow_state import write_json
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.hosts import InstallError

TRUSTED_FOLDERS = "trustedFolders.json"  # under ~/.gemini


def hooks_definition(plugin_root: Path = PLUGIN_ROOT) -> dict[str, list[dict[str, Any]]]:
    hooks: dict[str, list[dict[str, Any]]] = {}
    launcher = plugin_root / "hooks" / "python3"
    for event, matcher, script, timeout in host_gemini.HOOKS:
        command = f'/bin/sh "{launcher}" "{plugin_root / "hooks" / "gemini" / script}"'
        hook = {
            "type": "command",
            "name": f"{host_gemini.HOOK_NAME_PREFIX}{script[:-3]}",
            "command": command,
            "timeout": timeout,
        }
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    return hooks


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise InstallError(f"{path}: cannot read it as JSON ({error}); fix or remove it") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path}: not a JSON object; fix or remove it")
    return data


def merged_settings(settings: dict[str, Any], plugin_root: Path) -> dict[str, Any]:
    """`settings` with hooks enabled and our hook groups in place of any earlier ones of
    ours; the user's own hooks and settings kept."""
    hooks = settings.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    for event, groups in hooks_definition(plugin_root).items():
        kept = [g for g in hooks.get(event) or [] if not host_gemini.ours(g)]
        hooks[event] = [*kept, *groups]
    config = settings.get("hooksConfig")
    config = dict(config) if isinstance(config, dict) else {}
    config["enabled"] = True
    return {**settings, "hooksConfig": config, "hooks": hooks}


def install(project: Path, plugin_root: Path = PLUGIN_ROOT) -> Path:
    """Write our hooks into `project`'s .gemini/settings.json and trust the project."""
    project = project.resolve()
    if not project.is_dir():
        raise InstallError(f"{project}: no such folder")
    settings_file = project / host_gemini.HOOKS_FILE
    settings = merged_settings(_read_object(settings_file), plugin_root)
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    trusted_file = host_gemini.gemini_home() / TRUSTED_FOLDERS
    trusted = _read_object(trusted_file)
    trusted[str(project)] = "TRUST_FOLDER"
    write_json(trusted_file, trusted)
    return settings_file


def main(argv: list[str]) -> int:
    return hosts.install_main(argv, install, "the gate's hooks are in {file}; {project} is trusted")
