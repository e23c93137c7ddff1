"""An /implement session on the real Copilot CLI, with the gate installed as the docs say
(hooks/copilot/install.py): the tests' view of one run (the stand-in's requests, the gate's
state and records). tests/hooks/conftest.py builds it (`copilot_session` fixture).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.copilot_harness import (
    ChatCompletions,
    CopilotRun,
    copilot_env,
    run_copilot,
    user_texts,
)

PROMPT = "$acceptance-implement spec.md"
BLOCK_TAG = "[pytest-acceptance stop guard]"
GUARD_TAG = "[pytest-acceptance guard]"


class Session:
    """The stand-in, a fresh HOME with the gate installed in the project, what a run left."""

    def __init__(self, api: ChatCompletions, copilot: Path, home: Path, project: Path) -> None:
        self.api = api
        self.copilot = copilot
        self.home = home
        self.project = project

    @property
    def state(self) -> Path:
        return self.home / ".copilot" / "pytest-acceptance"

    @property
    def hooks_file(self) -> Path:
        return self.project / ".github" / "hooks" / "pytest-acceptance.json"

    def env(self, **extra: str) -> dict[str, str]:
        return copilot_env(self.home, self.api, ACCEPTANCE_GATE_PYTHON=sys.executable, **extra)

    def install(self, plugin_root: Path) -> subprocess.CompletedProcess[str]:
        """The installer as the docs say to run it, with the system's python3."""
        return subprocess.run(
            ["python3", str(plugin_root / "hooks" / "copilot" / "install.py"), str(self.project)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def run(self, prompt: str = PROMPT, **env: str) -> CopilotRun:
        return run_copilot(self.copilot, self.project, self.env(**env), prompt)

    def flow(self) -> dict[str, Any]:
        found = list((self.state / "flows").glob("*/flow.json"))
        assert len(found) == 1, found
        data = json.loads(found[0].read_text())
        assert isinstance(data, dict)
        return data

    def blocks(self) -> list[str]:
        """The stop hook's reasons Copilot sent back to the model as prompts, in order."""
        last = self.api.requests[-1] if self.api.requests else {}
        return [text for text in user_texts(last) if BLOCK_TAG in text]

    def history(self) -> str:
        """Everything the model was sent last (tool results and denials included)."""
        return json.dumps(self.api.requests[-1]) if self.api.requests else ""

    def outcomes(self, trusted: bool = False) -> list[dict[str, Any]]:
        path = (
            self.state / "outcomes.jsonl"
            if trusted
            else self.project / ".acceptance" / "copilot-cli-outcomes.jsonl"
        )
        return _json_lines(path)

    def forced(self) -> list[dict[str, Any]]:
        return _json_lines(self.project / ".acceptance" / "forced-stops.jsonl")


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
