"""The commands the docs show run as shown: each line of the reference's selection block
and its sign-off command, in a project whose spec has what they name (the specs a.md and
b.md, a MUST criterion AC-3 about notifications in the category Delivery, AC-7, a manual
criterion). A command that stopped working (an option renamed, a marker gone) fails here.
The README's commands are run by tests/plugin/test_examples.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.runs import QUIET_PLUGINS
from support.specs import bash, manual, spec

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference.md"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)

SPEC = spec(
    bash("AC-3", "echo sent", "Notifications are sent", priority="MUST"),
    bash("AC-7", "true", "The feed refreshes", priority="SHOULD"),
    category="Delivery",
)
SIGN_OFF_SPEC = SPEC + manual("AC-9", "The layout reads well", checks=["fits a phone"])


def reference_commands() -> list[str]:
    """Every `pytest …` line of the reference's shell blocks, without its comment."""
    lines = [
        line.split("  #", 1)[0].strip()
        for block in SH_BLOCK.findall(REFERENCE.read_text(encoding="utf-8"))
        for line in block.splitlines()
    ]
    return [line for line in lines if line.startswith("pytest --acceptance ")]


def run(root: Path, words: list[str]) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CLAUDE"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET_PLUGINS, *words[1:]],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )


def test_the_reference_shows_commands_to_run() -> None:
    commands = reference_commands()
    assert any("-m must" in command for command in commands), commands
    assert any("--acceptance-sign-off" in command for command in commands), commands


@pytest.mark.parametrize("command", reference_commands())
def test_a_reference_command_runs_as_shown(tmp_path: Path, command: str) -> None:
    words = shlex.split(command)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name in ("spec.md", "a.md", "b.md"):
        (tmp_path / name).write_text(SIGN_OFF_SPEC if "--acceptance-sign-off" in words else SPEC)
    if "--lf" in words:  # after a run, as "only what failed last time" means
        assert run(tmp_path, ["pytest", "--acceptance", "spec.md"]).returncode == 0
    if "--acceptance-sign-off" in words:
        words[words.index("--acceptance-sign-off") + 1] = "AC-9"  # the spec's manual one
    done = run(tmp_path, words)
    assert done.returncode == 0, done.stdout + done.stderr
    if "--acceptance-sign-off" in words:
        assert "signed off by Ada Lovelace" in done.stdout
    else:
        assert "verdict: PASS (exit code 0)" in done.stdout, done.stdout
