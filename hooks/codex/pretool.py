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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import hook_io, host_codex
from pytest_acceptance.gate.flow_state import Flow

TAG = "[pytest-acceptance guard]"


def main() -> int:
    host_codex.use_codex_state()
    if not hook_io.env_enabled("ACCEPTANCE_HOOK_GUARD"):
        return 0  # switched off by whoever started Codex (to test the gate behind it)
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    session_id = hook_io.session_id(payload)
    flow = Flow.load(session_id) if session_id else None
    if flow is None or not flow.is_open:
        return 0
    touched = host_codex.protected_target(flow, payload)
    if touched is not None:
        hook_io.deny_tool_call(
            f"{TAG} Inside the /implement flow, {touched} is protected: the gate verifies the "
            "spec as it was pinned, and the hooks and Codex's configuration decide whether it "
            "runs at all. Change the code, not these; escalate if the spec itself is wrong."
        )
    return 0


def fail_closed(error: BaseException) -> None:
    hook_io.deny_tool_call(f"{TAG} The guard could not check this call ({error}).")


if __name__ == "__main__":
    hook_io.run(main, fail_closed)
