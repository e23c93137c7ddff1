"""What the guard imports: it starts before every tool call, so its start-up is its cost.

The entry script (hooks/pretool_protect_hook.py) runs as hooks.json runs it, under
``python3 -E -S``, with ``-X importtime``: every module it imports beyond a bare interpreter
is listed, inside a pinned flow (a Bash call, a refused write) and outside one. Each must be
one of the standard library modules the decision needs, or one of the plugin's modules on
its path. A heavy import coming back (``dataclasses`` and its ``inspect``, ``typing``,
``threading``, ``shutil``, the gate's results, the pinned collection, the interpreter
closure) fails here, whatever the machine's speed: no timing is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import REPO_ROOT, SESSION_ID, TranscriptBuilder, make_repo, pretool
from pinning import open_flow

SPEC = "specs/feature.md"
GUARD = REPO_ROOT / "hooks" / "pretool_protect_hook.py"

# Top-level standard library modules the guard's decision needs (private ``_name`` modules
# are their implementations). Python versions differ in what these import themselves: the
# ones another version adds on its own are listed with them.
STDLIB = frozenset(
    {
        "__future__",
        "contextlib",  # hook_io's suppress
        "errno",
        "hashlib",  # the session's folder name, the transcript tails' digests
        "json",
        "mmap",  # the transcript, mapped rather than read
        "math",
        "os",
        "pathlib",
        "re",
        "shlex",  # protect: the Bash command's words
        "glob",  # protect, for a word with a pattern (and pathlib's own, in Python 3.13)
        "stat",
        # what those import themselves
        "collections",
        "copyreg",
        "encodings",
        "enum",
        "fnmatch",
        "functools",
        "genericpath",
        "grp",
        "io",
        "ipaddress",
        "itertools",
        "keyword",
        "nt",
        "ntpath",
        "operator",
        "posixpath",
        "pwd",
        "reprlib",
        "sre_compile",
        "sre_constants",
        "sre_parse",
        "sys",
        "types",
        "urllib",
        "warnings",
    }
)
# The plugin's modules on the guard's path, inside a flow; nothing of the gate's run.
PLUGIN_MODULES = frozenset(
    {
        "pytest_acceptance",
        "pytest_acceptance.gate",
        "pytest_acceptance.gate.flow_end",
        "pytest_acceptance.gate.flow_records",
        "pytest_acceptance.gate.flow_state",
        "pytest_acceptance.gate.guard_decision",
        "pytest_acceptance.gate.hook_io",
        "pytest_acceptance.gate.pinned_flow",
        "pytest_acceptance.gate.protect",
        "pytest_acceptance.gate.session_flow",
        "pytest_acceptance.gate.settings_guard",
        "pytest_acceptance.gate.transcript",
        "pytest_acceptance.gate.transcript_pin",
        "pytest_acceptance.tree",
        "pytest_acceptance.tree.frozen",
        "pytest_acceptance.tree.hostile",
        "pytest_acceptance.tree.shell",
    }
)
# Outside a flow the call goes through before protect.py and settings_guard.py are needed.
INSIDE_ONLY = frozenset({"pytest_acceptance.gate.protect", "pytest_acceptance.gate.settings_guard"})


def imported(arguments: list[str], payload: bytes, env: dict[str, str]) -> tuple[set[str], str]:
    """The modules ``python3 -E -S -X importtime`` imports for `arguments`, and its output."""
    done = subprocess.run(
        [sys.executable, "-E", "-S", "-X", "importtime", *arguments],
        input=payload,
        capture_output=True,
        env=env,
        check=False,
        timeout=60,
    )
    err = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in err, err
    names = {
        line.split("|")[-1].strip()
        for line in err.splitlines()
        if line.startswith("import time:") and "|" in line and "self [us]" not in line
    }
    return names, done.stdout.decode()


@pytest.fixture
def guard_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The hook's environment; this process pins the flow into the same plugin state."""
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_HOOK_", "CLAUDE"))}
    env.update(CLAUDE_PLUGIN_ROOT=str(REPO_ROOT), CLAUDE_PLUGIN_DATA=str(tmp_path / "data"))
    return env


def pinned(repo: Path, tmp_path: Path, flow: bool) -> Path:
    """The session's transcript; with `flow`, the /implement in it is pinned, open."""
    if flow:
        return open_flow(repo, tmp_path, SPEC)
    builder = TranscriptBuilder(repo, session_id=SESSION_ID)
    builder.prompt("Tidy the README.")
    return builder.write(tmp_path / "session.jsonl")


CALLS: dict[str, tuple[bool, str, dict[str, Any], bool]] = {
    "a Bash call inside a flow": (True, "Bash", {"command": "ls"}, False),
    "a write to the spec inside a flow": (True, "Write", {"file_path": SPEC, "content": "x"}, True),
    "a Bash call outside a flow": (False, "Bash", {"command": "ls"}, False),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_guard_imports_only_what_its_decision_needs(
    tmp_path: Path, guard_env: dict[str, str], name: str
) -> None:
    flow, tool, tool_input, denied = CALLS[name]
    repo = make_repo(tmp_path / "repo")
    transcript = pinned(repo, tmp_path, flow)
    payload = json.dumps(pretool(transcript, repo, tool, tool_input)).encode()
    bare, _ = imported(["-c", "pass"], b"", guard_env)
    names, answer = imported([str(GUARD)], payload, guard_env)
    assert ("deny" in answer) is denied, answer  # the call was decided, not cut short
    added = names - bare
    own = {module for module in added if module.split(".")[0] == "pytest_acceptance"}
    stdlib = {module.split(".")[0] for module in added - own if not module.startswith("_")}
    assert stdlib <= STDLIB, f"the guard now imports {sorted(stdlib - STDLIB)}"
    allowed = PLUGIN_MODULES if flow else PLUGIN_MODULES - INSIDE_ONLY
    assert own <= allowed, f"the guard now imports {sorted(own - allowed)}"
    assert "pytest_acceptance.gate.guard_decision" in own  # the list is of a real decision


def test_the_import_check_sees_a_heavy_import(guard_env: dict[str, str]) -> None:
    """The check above can fail: an import of dataclasses shows, with inspect behind it."""
    names, _ = imported(["-c", "import dataclasses"], b"", guard_env)
    assert {"dataclasses", "inspect"} <= names
    assert not {"dataclasses", "inspect"} & STDLIB
