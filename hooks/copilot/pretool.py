"""GitHub Copilot CLI preToolUse hook on `bash`, `create`, `edit` and `apply_patch`: during
a flow, no write to the spec, the hooks' own files or Copilot's configuration.

Outside a flow everything goes through. Inside one, a call that writes the pinned spec,
`.github/hooks/` (its pytest-acceptance.json holds these hooks), `.claude/`, Copilot's home
or the plugin is denied with the reason (host_copilot.protected_target), written as
Copilot reads it: ``{"permissionDecision": "deny", "permissionDecisionReason": ...}``. The
gate does not rely on this guard: a changed spec or test still blocks done at the stop; the
guard says it earlier, and keeps the hooks from being edited away mid-flow.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import host_copilot, host_hooks

if __name__ == "__main__":
    host_hooks.run_guard(host_copilot.ADAPTER, host_copilot.protected_target)
