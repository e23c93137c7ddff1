"""Doctor's checks for Gemini CLI, in the project named: our hooks in the project's
`.gemini/settings.json` with hooks enabled and each timeout (milliseconds) at least the
installer's, the project trusted in `~/.gemini/trustedFolders.json` (Gemini ignores an
untrusted folder's settings, hooks included), the interpreter the hooks' launcher picks, the
state folder writable, and the gate run's isolation level.

What Gemini itself would load is not asked (it has no command that lists the hooks it
runs): these checks read the files it reads, as its documentation says it reads them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pytest_acceptance.claude import gemini_install, host_gemini
from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Check, Options, probes

HOST = host_gemini.CONTRACT.name


def installer(project: Path) -> str:
    return f"python3 <plugin>/hooks/gemini/install.py {project}"


def checks(options: Options) -> list[Check]:
    project = options.project
    settings_file = project / host_gemini.SETTINGS_FILE
    try:
        settings = json.loads(settings_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        found = f"no {host_gemini.SETTINGS_FILE} in {project}"
        return [Check(HOST, "installed", NOT_INSTALLED, found, installer(project))]
    except (OSError, ValueError) as error:
        found = f"{settings_file} cannot be read ({error})"
        return [Check(HOST, "hooks installed", FAIL, found, installer(project))]
    hooks = _our_hooks(settings)
    if hooks is None:
        return [Check(HOST, "installed", NOT_INSTALLED, f"no hook of ours in {settings_file}")]
    rows = [_installed(settings, hooks, project), _trusted(project)]
    root = options.plugin_root or next(filter(None, map(_plugin_root, hooks.values())), None)
    if root is None:
        found = "no hook of ours names the plugin's launcher"
        rows.append(Check(HOST, "hooks' python3", FAIL, found, installer(project)))
    else:
        rows.append(probes.launcher_python(HOST, root, project, {}))
    state = host_gemini.gemini_home() / host_gemini.STATE_FOLDER
    return [*rows, probes.writable_folder(HOST, state), probes.isolation_level(HOST)]


def _plugin_root(hook: dict[str, Any]) -> Path | None:
    """The plugin's folder, from the launcher our hook's command starts."""
    try:
        words = shlex.split(str(hook.get("command", "")))
    except ValueError:
        return None
    launcher = Path(words[1]) if len(words) > 1 else None
    if launcher is None or launcher.parts[-2:] != ("hooks", "python3"):
        return None
    return launcher.parent.parent


def _our_hooks(settings: object) -> dict[str, dict[str, Any]] | None:
    """Our hook of each event, by event; None when none of ours is there."""
    events = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(events, dict):
        return None
    ours: dict[str, dict[str, Any]] = {}
    for event, groups in events.items():
        for group in groups if isinstance(groups, list) else []:
            if gemini_install.ours(group):
                ours[event] = next(h for h in group["hooks"] if gemini_install.ours_hook(h))
    return ours or None


def _installed(settings: dict[str, Any], hooks: dict[str, dict[str, Any]], project: Path) -> Check:
    problems = []
    config = settings.get("hooksConfig")
    if not (isinstance(config, dict) and config.get("enabled") is True):
        problems.append("hooksConfig.enabled is not true")
    for event, _, _, timeout in gemini_install.HANDLERS:
        hook = hooks.get(event)
        if hook is None:
            problems.append(f"no {event} hook of ours")
        elif not isinstance(hook.get("timeout"), int) or hook["timeout"] < timeout:
            problems.append(f"the {event} hook's timeout is under {timeout} ms")
    if problems:
        return Check(HOST, "hooks installed", FAIL, "; ".join(problems), installer(project))
    return Check(HOST, "hooks installed", OK, ", ".join(sorted(hooks)))


def _trusted(project: Path) -> Check:
    path = host_gemini.gemini_home() / gemini_install.TRUSTED_FOLDERS
    try:
        trusted = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        trusted = {}
    level = trusted.get(str(project.resolve())) if isinstance(trusted, dict) else None
    if level == "TRUST_FOLDER":
        return Check(HOST, "project trusted", OK, f"{project} in {path}")
    found = f"{project} is not trusted in {path} (Gemini would ignore its settings)"
    return Check(HOST, "project trusted", FAIL, found, installer(project))
