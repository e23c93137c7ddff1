"""An /implement session on the real Gemini CLI, with the gate installed as the docs say
(hooks/gemini/install.py): the tests' view of one run (the stand-in's requests, the gate's
state and records). tests/hooks/conftest.py builds it (`gemini_session` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

from support import gate_python
from support.gemini_harness import GeminiAPI, gemini_env, run_gemini, user_texts
from support.pinned_session import CliRun, PinnedFlowSession

PROMPT = "$acceptance-implement spec.md"
BLOCK_TAG = "[pytest-acceptance stop guard]"
GUARD_TAG = "[pytest-acceptance guard]"


class Session(PinnedFlowSession):
    """The stand-in, a fresh HOME with the gate installed in the project, what a run left."""

    HOST, HOME_FOLDER, HOOKS = "gemini-cli", ".gemini", "gemini"

    def __init__(self, api: GeminiAPI, gemini: Path, home: Path, project: Path) -> None:
        super().__init__(home, project)
        self.api = api
        self.gemini = gemini

    def env(self, **extra: str) -> dict[str, str]:
        return gemini_env(
            self.home, self.api, ACCEPTANCE_GATE_PYTHON=gate_python.EXECUTABLE, **extra
        )

    def run(self, prompt: str = PROMPT, **env: str) -> CliRun:
        """`gemini -p` in the project, tools approved (yolo: the hooks are the only check)."""
        return run_gemini(
            self.gemini, self.project, self.env(**env), prompt, "--approval-mode", "yolo"
        )

    def blocks(self) -> list[str]:
        """The stop hook's reasons Gemini sent back to the model as prompts, in order."""
        last = self.api.requests[-1] if self.api.requests else {}
        return [text for text in user_texts(last) if BLOCK_TAG in text]

    def history(self) -> str:
        """Everything the model was sent last (tool outputs and denials included)."""
        return json.dumps(self.api.requests[-1]) if self.api.requests else ""
