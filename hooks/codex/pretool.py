"""Codex PreToolUse hook on `Bash` and `apply_patch`: during a flow, no write to the spec,
the hooks' own files or Codex's configuration.

Codex hands shell calls as `Bash` (`tool_input.command`) and patches as `apply_patch` (the
patch text in `tool_input.command`). Outside a flow everything goes through. Inside one, a
patch that touches the pinned spec or `.codex/`, or a shell command that names them, or
Codex's config.toml, is denied with the reason. The gate does not rely on this guard: a
changed spec still blocks done at the stop; the guard says it earlier, and keeps the hooks
and their trust from being edited away mid-flow.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_codex, host_hooks

if __name__ == "__main__":
    host_hooks.run_guard(host_codex.ADAPTER, host_codex.protected_target)
