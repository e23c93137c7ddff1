"""The hook sets of the hosts whose /implement flow is pinned from the user's own prompt
(Codex, Copilot CLI, Gemini CLI): each hook's whole life, one call from its entry script.

Every hook reads its payload through the host's adapter (host_<name>.py), keeps the flow's
state where the host's home holds it, makes its one decision in the library
(prompt_flow.py) and writes one answer in the host's shape. What each hook does when it
cannot check is decided here once: the stop hook blocks inside a flow (and when it cannot
tell whether one is open), the guard denies the tool call, the prompt hook never refuses a
prompt for its own error.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Mapping

from pytest_acceptance.gate import hook_io, host_registry, prompt_flow
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.hosts import HostAdapter
from pytest_acceptance.gate.stop_decision import DEADLINE, Seen

PROMPT_DEADLINE = 100  # seconds; each host's prompt hook timeout is 120 s
GUARD_TAG = "[pytest-acceptance guard]"
# A host's reading of a tool call in an open flow: what it would write among the protected
# paths, described; None when it writes none of them (host_<name>.protected_target).
ProtectedTarget = Callable[[Flow, Mapping[str, Any]], "str | None"]


def _start(host: HostAdapter) -> None:
    """The host's answers and state set for this hook."""
    hook_io.answer_with(host.render)
    host.use_state()


def _payload(host: HostAdapter) -> dict[str, Any]:
    """The hook's payload in the neutral field names the shared modules read."""
    return host.hook_payload(hook_io.read_payload(sys.stdin.buffer.read()))


def run_stop(host: HostAdapter) -> None:
    """The stop hook: in a flow, a stop goes through only on the gate's own run."""
    seen: Seen = {}

    def main() -> None:
        hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", DEADLINE))
        host.use_state()
        started = time.time()  # a tool call noted after this moment is not covered
        raw = hook_io.read_payload(sys.stdin.buffer.read())
        payload = host_registry.take(host, raw)
        if payload is not None:  # None never: no other host runs this host's hooks files
            prompt_flow.stop(payload, started, seen, host)

    hook_io.run(main, lambda error: prompt_flow.stop_failed(error, seen, host))


def run_prompt(host: HostAdapter) -> None:
    """The prompt hook: pin a flow from the user's prompt, or end a finished one."""

    def main() -> None:
        hook_io.start_deadline(PROMPT_DEADLINE)
        _start(host)
        prompt_flow.prompt(_payload(host), host)

    hook_io.run(main, prompt_flow.prompt_failed)  # never refuse a prompt for our own error


def run_guard(
    host: HostAdapter,
    protected_target: ProtectedTarget,
    deny: Callable[[str], None] = hook_io.deny_tool_call,
) -> None:
    """The guard before a tool call: inside a flow, no write to the pinned spec, the hooks'
    own files or the host's configuration (`protected_target` names the write); `deny`
    writes the refusal as the host's tool hook reads it."""

    def main() -> None:
        _start(host)
        if not hook_io.env_enabled("ACCEPTANCE_HOOK_GUARD"):
            return  # switched off by whoever started the host (to test the gate behind it)
        payload = _payload(host)
        session_id = hook_io.session_id(payload)
        flow = Flow.load(session_id) if session_id else None
        touched = protected_target(flow, payload) if flow is not None and flow.is_open else None
        if touched is not None:
            deny(
                f"{GUARD_TAG} Inside the /implement flow, {touched} is protected: the gate "
                "verifies the spec as it was pinned, and the hooks and "
                f"{host.contract.title}'s settings decide whether it runs at all. Change the "
                "code, not these; escalate if the spec itself is wrong."
            )

    def fail_closed(error: BaseException) -> None:
        deny(f"{GUARD_TAG} The guard could not check this call ({error}).")

    hook_io.run(main, fail_closed)
