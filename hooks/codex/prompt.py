"""Codex UserPromptSubmit hook: pin an /implement flow from the user's own prompt, end a
finished one, and say loudly when Codex would skip a hook of ours.

A prompt that starts with ``$acceptance-implement SPEC`` pins a new flow (pin.py), unless
the session's flow is open and not finished: that prompt is refused with the reason. A
prompt typed while Codex would skip one of our hooks (untrusted or edited) starts or resumes
no flow: it is refused, so that no flow runs ungated; any other prompt goes through with the
warning.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.claude import hook_io, host_codex, isolation, pin
from pytest_acceptance.claude.flow_state import Flow

DEADLINE = 100  # seconds; the hook's timeout in .codex/hooks.json is 120


def main() -> int:
    hook_io.start_deadline(DEADLINE)
    host_codex.use_codex_state()
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    session_id = hook_io.session_id(payload)
    if session_id is None:
        raise hook_io.HookInputError("the payload has no session_id")
    cwd = hook_io.text_field(payload, "cwd") or os.getcwd()
    problems = host_codex.trust_problems(host_codex.hooks_file_of(cwd))
    args = host_codex.implement_args(hook_io.text_field(payload, "prompt"))
    if args is None:
        pin.end_finished_flow(session_id, payload)
        open_flow = Flow.load(session_id)
        if problems and open_flow is not None and open_flow.is_open:
            _refuse_untrusted(payload, problems, cwd, "The open /implement flow was not resumed.")
        elif problems:
            _warn(host_codex.trust_warning(problems))
        return 0
    if problems:
        _refuse_untrusted(payload, problems, cwd, "The /implement flow was not started.")
        return 0
    held = Flow.load(session_id)
    if held is not None and held.is_open and held.problem is None and not held.finished():
        _refuse(pin.refusal(held, args))
        return 0
    flow = pin.pin_implement(session_id, payload, args)
    _tell_model(flow)
    return 0


def _tell_model(flow: Flow) -> None:
    if flow.problem is not None:
        note = (
            f"pytest-acceptance: this /implement flow has no spec to verify ({flow.problem}). "
            f"It can only end with an escalation: a message whose first line starts with "
            f"{host_codex.ESCALATE_MARK}"
        )
    else:
        note = (
            f"pytest-acceptance pinned the spec {flow.spec_path}. This session ends only when "
            "the gate's own run of that spec passes on the working tree (every stop is a claim "
            "of done), or with an escalation: a message whose first line starts with "
            f"{host_codex.ESCALATE_MARK} followed by the evidence."
        )
    answer: dict[str, Any] = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": note}
    }
    notice = _implement_notice()
    if notice is not None:
        answer["systemMessage"] = notice
        answer["hookSpecificOutput"]["additionalContext"] = f"{note} {notice}"
    hook_io.emit(answer)


def _implement_notice() -> str | None:
    """What this machine leaves open (the gate run's isolation level below full), said in
    the flow's first answer; None when all is well. Hook trust is checked above."""
    warning = isolation.current().warning
    if warning is None:
        return None
    return f"{warning} Run `pytest-acceptance-doctor --agent codex` for the whole check."


def _warn(message: str) -> None:
    hook_io.emit(
        {
            "systemMessage": message,
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": message,
            },
        }
    )


def _refuse_untrusted(payload: dict[str, Any], problems: list[str], cwd: str, what: str) -> None:
    """No flow runs while Codex would skip one of our hooks: refused, and recorded where
    `codex exec` users look (it shows no hook's reason)."""
    reason = f"{host_codex.trust_warning(problems)} {what}"
    repo = hook_io.git_toplevel(Path(cwd)) or Path(cwd)
    host_codex.record_outcome(payload, host_codex.REFUSED, reason, repo)
    _refuse(reason)


def _refuse(reason: str) -> None:
    hook_io.emit({"decision": "block", "reason": reason})


def on_error(error: BaseException) -> None:
    hook_io.tell_user(f"pytest-acceptance prompt hook failed ({error}); flow not pinned.")


if __name__ == "__main__":
    hook_io.run(main, on_error)
