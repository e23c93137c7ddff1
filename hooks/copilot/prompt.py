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
from pytest_acceptance.gate import host_copilot, host_hooks

if __name__ == "__main__":
    host_hooks.run_prompt(host_copilot.ADAPTER)  # never refuses a prompt for its own error
