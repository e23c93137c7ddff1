"""An /implement session on the real Codex CLI, with the gate installed as the docs say:
the tests' view of one run (the stand-in's requests, the gate's state and records).

tests/hooks/conftest.py builds it (`codex_session` fixture) from a script of model turns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import gate_python
from support.codex_harness import (
    CodexRun,
    CodexSetup,
    ResponsesStandIn,
    exec_args,
    hook_prompts,
    run_codex,
)

PROMPT = "$acceptance-implement spec.md"
BLOCK_TAG = "[pytest-acceptance stop guard]"
GUARD_TAG = "[pytest-acceptance guard]"


class Session:
    """The stand-in, the Codex home with the gate installed, and what the run left."""

    def __init__(self, api: ResponsesStandIn, setup: CodexSetup, project: Path) -> None:
        self.api = api
        self.setup = setup
        self.project = project

    def run(self, prompt: str = PROMPT, **env: str) -> CodexRun:
        """`codex exec` in the project; the gate verifies with this interpreter."""
        environment = {**self.setup.env, "ACCEPTANCE_GATE_PYTHON": gate_python.EXECUTABLE, **env}
        return run_codex(exec_args(prompt), self.project, environment, self.setup.codex)

    def flow(self) -> dict[str, Any]:
        """The one pinned flow's state (flow.json)."""
        found = list((self.setup.state / "flows").glob("*/flow.json"))
        assert len(found) == 1, found
        data = json.loads(found[0].read_text())
        assert isinstance(data, dict)
        return data

    def pinned(self) -> bool:
        return bool(list((self.setup.state / "flows").glob("*/flow.json")))

    def blocks(self) -> list[str]:
        """The stop guard's reasons Codex fed back to the model, in order."""
        last = self.api.requests[-1] if self.api.requests else {}
        return [text for text in hook_prompts(last) if BLOCK_TAG in text]

    def history(self) -> str:
        """Everything the model was sent last (tool outputs and denials included)."""
        return json.dumps(self.api.requests[-1]["input"]) if self.api.requests else ""

    def outcomes(self, trusted: bool = False) -> list[dict[str, Any]]:
        """The gate's outcome records: the project's copy, or the one in CODEX_HOME."""
        path = (
            self.setup.state / "outcomes.jsonl"
            if trusted
            else self.project / ".acceptance" / "codex-outcomes.jsonl"
        )
        return _json_lines(path)

    def forced(self) -> list[dict[str, Any]]:
        return _json_lines(self.project / ".acceptance" / "forced-stops.jsonl")


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
