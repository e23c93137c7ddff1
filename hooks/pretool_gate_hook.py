"""PreToolUse hook on the Skill tool: /done and /escalate only on the gate's own evidence.

The decision (no /implement in progress or no /verify since it: deny; otherwise the gate
runs the pinned spec on the current tree itself) is the library's:
pytest_acceptance/gate/stop_decision.py. This script reads the event, makes that one call
and writes its one answer. Every skill but our done/escalate passes untouched, answered
before the gate's library is imported (the CLI runs this hook and the guard on every Skill
call); inside a flow an error or the deadline denies with the reason.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import hook_io
from pytest_acceptance.gate.transcript import gated_skill

_SEEN: dict[str, object] = {}  # what main() learnt, for the fail-closed handler


def main() -> None:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", hook_io.GATE_HOOK_DEADLINE))
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    if gated_skill(payload) is None:
        return
    # Imported here, before the gate's run: nothing of the project has run in this process.
    from pytest_acceptance.gate import stop_decision

    stop_decision.skill_call(payload, _SEEN)


def fail_closed(error: BaseException) -> None:
    from pytest_acceptance.gate import stop_decision

    stop_decision.skill_call_failed(error, _SEEN)


if __name__ == "__main__":
    hook_io.run(main, fail_closed)  # inside a flow, never fail open
