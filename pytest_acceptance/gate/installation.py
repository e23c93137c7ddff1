"""What a working install of the plugin holds: each hook hooks.json must declare, and the
line /implement's first answer carries when something is off.

The prompt hook runs this at every /implement (cheap: one small file read, and the
isolation probe apart.py makes anyway); ``doctor`` runs it, and much more, on demand.
Nothing here is cached: a result kept in a file could be written by the agent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import isolation

# (event, matcher or "", entry script): the hooks the gate needs, as hooks.json declares them.
HOOKS = (
    ("UserPromptSubmit", "", "prompt_hook.py"),
    ("UserPromptExpansion", "", "prompt_hook.py"),
    ("Stop", "", "stop_implement_hook.py"),
    ("PreToolUse", "Skill", "pretool_gate_hook.py"),
    (
        "PreToolUse",
        "Write|Edit|MultiEdit|NotebookEdit|Bash|Skill|Agent|Task|mcp__.*",
        "pretool_protect_hook.py",
    ),
    ("ConfigChange", "", "config_change_hook.py"),
)
HOOKS_FILE = Path("hooks", "hooks.json")


def hook_commands(plugin_root: Path) -> tuple[dict[tuple[str, str], str], list[str]]:
    """((event, script): the command hooks.json declares for it), and what is wrong: each
    hook of HOOKS missing, or declared with a matcher that does not cover its tools, or
    whose script is not in the plugin."""
    path = plugin_root / HOOKS_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {}, [f"{path} cannot be read as JSON ({error})"]
    events = config.get("hooks") if isinstance(config, dict) else None
    if not isinstance(events, dict):
        return {}, [f'{path} has no "hooks" object']
    found: dict[tuple[str, str], str] = {}
    problems = []
    for event, matcher, script in HOOKS:
        command = _declared(events.get(event), matcher, script)
        if command is None:
            problems.append(f"{path} does not run {script} on {event}")
        elif not (plugin_root / "hooks" / script).is_file():
            problems.append(f"{plugin_root / 'hooks' / script} is missing")
        else:
            found[(event, script)] = command
    return found, problems


def _declared(groups: Any, matcher: str, script: str) -> str | None:
    """The command of the group that runs `script` and whose matcher names every tool of
    `matcher` ("" for events without one)."""
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        matches = str(group.get("matcher") or "").split("|")
        if matcher and not set(matcher.split("|")) <= set(matches):
            continue
        for hook in group.get("hooks") or []:
            command = hook.get("command") if isinstance(hook, dict) else None
            if isinstance(command, str) and f"hooks/{script}" in command:
                return command
    return None


def implement_notice(plugin_root: Path) -> str | None:
    """The line /implement's first answer carries when this install cannot hold its promise
    (a hook missing from hooks.json, an isolation level below full); None when all is well."""
    _, problems = hook_commands(plugin_root)
    lines = [
        f"pytest-acceptance: {problem}: reinstall the plugin "
        "(claude plugin install pytest-acceptance@pytest-acceptance)."
        for problem in problems
    ]
    warning = isolation.current().warning
    if warning is not None:
        lines.append(warning)
    if lines:
        lines.append(isolation.doctor_pointer())
    return " ".join(lines) or None


def expand(command: str, plugin_root: Path) -> str:
    """A hooks.json command as the CLI runs it: ${CLAUDE_PLUGIN_ROOT} replaced by the root."""
    return command.replace("${CLAUDE_PLUGIN_ROOT}", os.fspath(plugin_root))
