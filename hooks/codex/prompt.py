"""Codex UserPromptSubmit hook: pin an /implement flow from the user's own prompt, end a
finished one, and say loudly when Codex would skip a hook of ours.

The decision (which prompt pins a flow, which is refused, what the model is told) is the
library's: pytest_acceptance/gate/prompt_flow.py, with what differs on Codex (the
``$acceptance-implement SPEC`` prompt, the hook-trust check) in its adapter, host_codex.py.
This script parses the payload, makes that one call and writes its one answer.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import hook_io, host_codex, prompt_flow

DEADLINE = 100  # seconds; the hook's timeout in .codex/hooks.json is 120


def main() -> None:
    hook_io.start_deadline(DEADLINE)
    host_codex.use_codex_state()
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    prompt_flow.prompt(payload, host_codex.ADAPTER)


if __name__ == "__main__":
    hook_io.run(main, prompt_flow.prompt_failed)  # never refuse a prompt for our own error
