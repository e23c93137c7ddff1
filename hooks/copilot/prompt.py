"""GitHub Copilot CLI userPromptSubmitted hook: pin an /implement flow from the user's own
prompt (``$acceptance-implement SPEC``), and end a finished one.

The decision (which prompt pins a flow, which is refused, what the model is told) is the
library's: pytest_acceptance/gate/prompt_flow.py, with what differs on Copilot in its
adapter, host_copilot.py. This script parses the payload, makes that one call and writes its
one answer, in Copilot's shape (a refusal is ``{"decision": "block", "reason": ...}``, the
model's note ``additionalContext``). A stop hook's block comes back through here as the next
prompt: it starts nothing and leaves the flow open.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import hook_io, host_copilot, prompt_flow

DEADLINE = 100  # seconds; the hook's timeoutSec in .github/hooks/ is 120


def main() -> None:
    hook_io.start_deadline(DEADLINE)
    host_copilot.use_copilot_state()
    raw = hook_io.read_payload(sys.stdin.buffer.read())
    prompt_flow.prompt(host_copilot.neutral_payload(raw), host_copilot.ADAPTER)


if __name__ == "__main__":
    hook_io.run(main, prompt_flow.prompt_failed)  # never refuse a prompt for our own error
