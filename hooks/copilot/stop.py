"""GitHub Copilot CLI agentStop hook: in an /implement flow, a stop goes through only on the
gate's own run.

The decision (every stop a claim of done or an escalation, the gate's run, the gate's own
block count, never above Copilot's cap of 8) is the library's:
pytest_acceptance/gate/prompt_flow.py, with what differs on Copilot in its adapter
(host_copilot.py: the agent's last message is read from Copilot's transcript). A refusal is
``{"decision": "block", "reason": ...}`` on stdout with exit 0 (Copilot sends the reason as
the next prompt); the stop Copilot's cap would let through is recorded as forced. Inside a
flow an error or the hook's own deadline blocks (counted the same). The deadline stays well
under the hook's timeoutSec (900): past it Copilot drops the hook and lets the stop through.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_copilot, host_hooks

if __name__ == "__main__":
    host_hooks.run_stop(host_copilot.ADAPTER)  # inside a flow, never fail open
