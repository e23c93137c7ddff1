"""UserPromptSubmit / UserPromptExpansion hook: pin an /implement flow, end a finished one.

UserPromptSubmit (every prompt the user types): a finished flow (flow_state.Flow.finished)
ends here. UserPromptExpansion of /pytest-acceptance:implement SPEC: a new flow is pinned in
the plugin's state (pin.py) -- unless the session's flow is open and not finished: one flow
per session, whatever the process, so that /implement is refused with the reason and the
open flow stays as it is. No other prompt is refused: a pin that fails is told to the user,
and the Stop hook then blocks the flow it cannot check.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import hook_io, installation, pin
from pytest_acceptance.gate.pins import declared_inputs

DEADLINE = 100  # seconds; the hook's timeout in hooks.json is 120


def main() -> int:
    hook_io.start_deadline(DEADLINE)
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    session_id = hook_io.session_id(payload)
    if session_id is None:
        raise hook_io.HookInputError("the payload has no session_id")
    event = payload.get("hook_event_name")
    if event == "UserPromptSubmit":
        pin.end_finished_flow(session_id, payload)
        return 0
    args = pin.implement_args(payload) if event == "UserPromptExpansion" else None
    if args is not None:
        held = pin.held_flow(session_id)
        if held is not None:  # the command never expands, nor reaches the transcript
            hook_io.emit({"decision": "block", "reason": pin.refusal(held, args)})
            return 0
        flow = pin.pin_implement(session_id, payload, args)
        notice = installation.implement_notice(hook_io.PLUGIN_ROOT)
        if notice is not None:
            hook_io.tell_user(notice)
        undeclarable = declared_inputs.refusal(flow)
        if undeclarable is not None:
            hook_io.tell_user(undeclarable)
        if flow.problem is None and flow.pin_pending:
            hook_io.tell_user(
                "pytest-acceptance: the spec is pinned, but no Python with pytest-acceptance "
                f"was found ({flow.pin_pending}). The gate never pins one later: "
                "/done cannot be verified in this flow (only /escalate). Install the package "
                "(or set ACCEPTANCE_GATE_PYTHON), end this flow with /pytest-acceptance:escalate, "
                "then start /implement again (or start it in a new session)."
            )
    return 0


def on_error(error: BaseException) -> None:
    hook_io.tell_user(f"pytest-acceptance prompt hook failed ({error}); flow not pinned.")


if __name__ == "__main__":
    hook_io.run(main, on_error)  # never refuse a prompt; say that the flow is not pinned
