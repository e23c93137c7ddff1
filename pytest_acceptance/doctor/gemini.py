"""Doctor's checks for Gemini CLI, in the project named: nothing in the settings that makes
Gemini skip a hook of ours (host_gemini.settings_problems, which the hooks check too), the
project trusted in `~/.gemini/trustedFolders.json` (Gemini ignores an
untrusted folder's settings, hooks included), the interpreter the hooks' launcher picks, the
state folder writable, and the gate run's isolation level.

What Gemini itself would load is not asked (it has no command that lists the hooks it
runs): these checks read the files it reads, as its documentation says it reads them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Check, Options, probes
from pytest_acceptance.gate import gemini_install, host_gemini, hosts

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
    hooks = host_gemini.our_hooks(settings) if isinstance(settings, dict) else {}
    if not hooks:
        return [Check(HOST, "installed", NOT_INSTALLED, f"no hook of ours in {settings_file}")]
    rows = [_installed(hooks, project), _trusted(project)]
    root = options.plugin_root or next(filter(None, map(_plugin_root, hooks.values())), None)
    if root is None:
        found = "no hook of ours names the plugin's launcher"
        rows.append(Check(HOST, "hooks' python3", FAIL, found, installer(project)))
    else:
        rows.append(probes.launcher_python(HOST, root, project, {}))
    state = host_gemini.gemini_home() / hosts.STATE_FOLDER
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


def _installed(hooks: dict[str, dict[str, Any]], project: Path) -> Check:
    problems = host_gemini.settings_problems(project)
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
