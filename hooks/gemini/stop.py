"""Gemini CLI AfterAgent hook: in an /implement flow, a stop goes through only on the gate's
own run.

The decision (every stop a claim of done or an escalation, the gate's run, the gate's own
block count, Gemini having none) is the library's: pytest_acceptance/gate/prompt_flow.py,
with what differs on Gemini in its adapter (host_gemini.py). A refusal is written as
``{"decision": "deny", "reason": ...}`` (Gemini retries with the reason as the prompt), a
stop let through past the gate's cap as ``{"continue": false, "stopReason": ...}``, recorded
as forced. Inside a flow an error or the hook's own deadline blocks (counted the same).
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_gemini, host_hooks

if __name__ == "__main__":
    host_hooks.run_stop(host_gemini.ADAPTER)  # inside a flow, never fail open
