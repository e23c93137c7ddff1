"""Gemini CLI BeforeTool hook on `run_shell_command`, `write_file` and `replace`: during a
flow, no write to the spec, the hooks' own settings or Gemini's configuration.

Outside a flow everything goes through. Inside one, a call that writes the pinned spec,
`.gemini/` (its settings.json holds these hooks), Gemini's home or the plugin is denied with
the reason (host_gemini.protected_target). The gate does not rely on this guard: a changed
spec or test still blocks done at the stop; the guard says it earlier, and keeps the hooks
from being edited away mid-flow.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_gemini, host_hooks

if __name__ == "__main__":
    host_hooks.run_guard(
        host_gemini.ADAPTER, host_gemini.protected_target, host_gemini.deny_tool_call
    )
