"""Codex Stop hook: in an /implement flow, a stop goes through only on the gate's own run.

The decision (every stop a claim of done or an escalation, the gate's run, the gate's own
block count, Codex having none) is the library's: pytest_acceptance/gate/prompt_flow.py,
with what differs on Codex in its adapter (host_codex.py). This script reads the event
through that adapter, makes that one call and writes its one answer. Inside a flow an error
or the hook's own deadline blocks (counted the same); a stop whose state cannot be read
blocks too.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_codex, host_hooks

if __name__ == "__main__":
    host_hooks.run_stop(host_codex.ADAPTER)  # inside a flow, never fail open
