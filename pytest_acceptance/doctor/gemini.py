"""Doctor's checks for Gemini CLI, in the project named: nothing in the settings that makes
Gemini skip a hook of ours (host_gemini.hooks_problems, which the hooks check too), the
project trusted in `~/.gemini/trustedFolders.json` (Gemini ignores an
untrusted folder's settings, hooks included), the interpreter the hooks' launcher picks, the
state folder writable, and the gate run's isolation level.

What Gemini itself would load is not asked (it has no command that lists the hooks it
runs): these checks read the files it reads, as its documentation says it reads them."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_acceptance.doctor import FAIL, OK, Check, Options, probes
from pytest_acceptance.gate import gemini_install, host_gemini

HOST = host_gemini.CONTRACT.name


def installer(project: Path) -> str:
    return probes.installer(host_gemini, project)


def checks(options: Options) -> list[Check]:
    commands, rows = probes.hook_file(host_gemini, options)
    return [*rows, _trusted(options.project)] if commands else rows


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
