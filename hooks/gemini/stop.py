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
import time
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import hook_io, host_gemini, host_registry, prompt_flow
from pytest_acceptance.gate.stop_decision import DEADLINE

_SEEN: dict[str, Any] = {}  # what main() learnt, for the fail-closed handler


def main() -> None:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", DEADLINE))
    host_gemini.use_gemini_state()
    started = time.time()
    raw = hook_io.read_payload(sys.stdin.buffer.read())
    payload = host_registry.take(host_gemini.ADAPTER, raw)
    if payload is not None:  # None never: no other host runs Gemini's settings files
        prompt_flow.stop(payload, started, _SEEN, host_gemini.ADAPTER)


def fail_closed(error: BaseException) -> None:
    prompt_flow.stop_failed(error, _SEEN, host_gemini.ADAPTER)


if __name__ == "__main__":
    hook_io.run(main, fail_closed)  # inside a flow, never fail open
