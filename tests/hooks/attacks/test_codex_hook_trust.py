"""Hook trust on Codex: Codex skips an untrusted or edited hook silently, so a session whose
Stop hook is skipped would end ungated without a word.

Closed by the installer's trust record: every hook of ours that runs compares the hooks
file and Codex's `[hooks.state] trusted_hash` entries with what the installer trusted, and
the prompt hook refuses to start a flow while any hook would be skipped, recording why. When
none of our hooks runs, nothing can be said in the session: `install.py --check` asks Codex.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hook_transcripts import REPO_ROOT
from support.codex_harness import Turn, replace_file_patch, say
from support.codex_session import Session

pytestmark = pytest.mark.e2e

Start = Callable[[list[Turn]], Session]
FIX = replace_file_patch("value.txt", "1", "2")


def _edit_stop_hook(project: Path) -> None:
    hooks_file = project / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    hooks["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 901
    hooks_file.write_text(json.dumps(hooks, indent=2) + "\n")


def _untrust_stop_hook(codex_home: Path) -> None:
    config = codex_home / "config.toml"
    lines = config.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if ":stop:0:0" in line)
    assert lines[header + 1].startswith("trusted_hash")
    del lines[header : header + 2]
    config.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("how", ["edited hook", "trust revoked"])
def test_an_untrusted_stop_hook_refuses_the_flow_loudly(codex_session: Start, how: str) -> None:
    """Codex would skip the Stop hook silently: the prompt hook (still trusted) refuses to
    start the flow, and records why where `codex exec` users and CI look."""
    flow = codex_session([FIX, say("Done.")])
    if how == "edited hook":
        _edit_stop_hook(flow.project)
    else:
        _untrust_stop_hook(flow.setup.codex_home)
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert flow.api.requests == []  # the prompt never reached the model
    assert not (flow.setup.state / "flows").exists() or not any(
        (flow.setup.state / "flows").iterdir()
    )
    (refused,) = flow.outcomes()
    assert refused["outcome"] == "refused"
    assert "NOT FULLY GATED" in refused["detail"]
    assert refused == flow.outcomes(trusted=True)[0]


def test_a_trusted_installation_refuses_nothing(codex_session: Start) -> None:
    """Control: the same prompt with the hooks as installed starts the flow."""
    flow = codex_session([FIX, say("Done.")])
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert [o["outcome"] for o in flow.outcomes()] == ["verified"]


def test_an_untrusted_hook_is_told_to_the_model_outside_a_flow(codex_session: Start) -> None:
    flow = codex_session([say("Hello.")])
    _edit_stop_hook(flow.project)
    run = flow.run("hello")
    assert run.returncode == 0, run.describe()
    (request,) = flow.api.requests
    assert "THIS CODEX SESSION IS NOT FULLY GATED" in json.dumps(request)


def test_the_installer_check_reports_untrusted_hooks(codex_session: Start) -> None:
    """When every hook of ours is edited, none runs and nothing can be said in the session:
    `install.py --check` (before a session, or in CI) says it."""
    flow = codex_session([])
    check = [sys.executable, str(REPO_ROOT / "hooks" / "codex" / "install.py"), "--check"]
    ok = subprocess.run(
        [*check, str(flow.project)],
        env=flow.setup.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    hooks_file = flow.project / ".codex" / "hooks.json"
    hooks_file.write_text(hooks_file.read_text().replace('"timeout": ', '"timeout": 1'))
    bad = subprocess.run(
        [*check, str(flow.project)],
        env=flow.setup.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 1
    assert "Codex does not trust these hooks" in bad.stderr
    assert ".codex/hooks.json:stop:0:0 (" in bad.stderr


def test_an_edited_guard_hook_refuses_the_flow_too(codex_session: Start) -> None:
    """A second variant, written after the check: the PreToolUse guard's matcher narrowed
    so that it never fires (Codex would skip it as edited anyway). Blocked with no new code."""
    flow = codex_session([FIX, say("Done.")])
    hooks_file = flow.project / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    hooks["hooks"]["PreToolUse"][0]["matcher"] = "^NeverCalled$"
    hooks_file.write_text(json.dumps(hooks, indent=2) + "\n")
    run = flow.run()
    assert run.returncode == 0, run.describe()
    assert flow.api.requests == [] and not flow.pinned()
    (refused,) = flow.outcomes(trusted=True)
    assert refused["outcome"] == "refused" and "changed since it was trusted" in refused["detail"]
