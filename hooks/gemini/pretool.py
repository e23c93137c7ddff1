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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import hook_io, host_gemini
from pytest_acceptance.gate.flow_state import Flow

TAG = "[pytest-acceptance guard]"


def main() -> int:
    hook_io.answer_with(host_gemini.ADAPTER.render)
    host_gemini.use_gemini_state()
    if not hook_io.env_enabled("ACCEPTANCE_HOOK_GUARD"):
        return 0  # switched off by whoever started Gemini (to test the gate behind it)
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    session_id = hook_io.session_id(payload)
    flow = Flow.load(session_id) if session_id else None
    if flow is None or not flow.is_open:
        return 0
    touched = host_gemini.protected_target(flow, payload)
    if touched is not None:
        deny(
            f"{TAG} Inside the /implement flow, {touched} is protected: the gate verifies the "
            "spec as it was pinned, and the hooks and Gemini's settings decide whether it "
            "runs at all. Change the code, not these; escalate if the spec itself is wrong."
        )
    return 0


def deny(reason: str) -> None:
    hook_io.emit({"decision": "block", "reason": reason})  # rendered as Gemini's deny


def fail_closed(error: BaseException) -> None:
    deny(f"{TAG} The guard could not check this call ({error}).")


if __name__ == "__main__":
    hook_io.run(main, fail_closed)
