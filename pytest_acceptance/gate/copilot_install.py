"""Install the gate into a project for GitHub Copilot CLI.

What it writes: ``<project>/.github/hooks/pytest-acceptance.json`` (Copilot runs every
``*.json`` of ``.github/hooks/``), version 1, with our ``userPromptSubmitted``,
``preToolUse`` and ``agentStop`` hooks, whose commands start the plugin's scripts
(``hooks/copilot/``) by absolute path through its launcher, each with a ``timeoutSec`` well
above the script's own deadline (Copilot drops a hook past its timeout and lets the event
through: a timeout that is too short is a silent ungated stop).

The file is the gate's own: written again on every install (the same bytes for the same
plugin), and never written over when it holds anything of someone else's (a hook whose
command is not one of our scripts, or a file that is not JSON): that file is the user's,
and the installer stops with the reason instead.

Standard library only, Python 3.8: hooks/copilot/install.py imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import host_copilot, hosts
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.hosts import InstallError


def hooks_file_content(plugin_root: Path = PLUGIN_ROOT) -> dict[str, Any]:
    launcher = plugin_root / "hooks" / "python3"
    scripts = plugin_root.joinpath(*host_copilot.SCRIPTS_FOLDER)
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, script, timeout in host_copilot.HOOKS:
        command = f'/bin/sh "{launcher}" "{scripts / script}"'
        hooks[event] = [{"type": "command", "bash": command, "timeoutSec": timeout}]
    return {"version": host_copilot.HOOKS_VERSION, "hooks": hooks}


def _ours_alone(path: Path) -> bool:
    """Whether the file at `path` holds nothing but hooks of ours (absent: nothing at all)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or set(data) - {"version", "hooks"}:
        return False
    events = data.get("hooks")
    if not isinstance(events, dict):
        return False
    return all(
        isinstance(hooks, list) and all(host_copilot.ours_hook(hook) for hook in hooks)
        for hooks in events.values()
    )


def install(project: Path, plugin_root: Path = PLUGIN_ROOT) -> Path:
    """Write our hooks file into `project`; refuses to replace a file that is not ours."""
    project = project.resolve()
    if not project.is_dir():
        raise InstallError(f"{project}: no such folder")
    hooks_file = project / host_copilot.HOOKS_FILE
    if hooks_file.is_symlink() or not _ours_alone(hooks_file):
        raise InstallError(
            f"{hooks_file} holds hooks that are not pytest-acceptance's (or is not JSON): it "
            "is left as it is. Move your hooks to another file of .github/hooks/, remove it, "
            "and install again"
        )
    hooks_file.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(hooks_file_content(plugin_root), indent=2) + "\n"
    hooks_file.write_text(text, encoding="utf-8")
    return hooks_file


def main(argv: list[str]) -> int:
    return hosts.install_main(
        argv,
        install,
        "the gate's hooks are in {file}. Copilot runs a project's hooks only in a folder you "
        "trust: start it there with --trust-folder or trust the folder when it asks.",
    )
