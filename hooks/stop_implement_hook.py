"""Stop hook: in an /implement flow, the session stops only on the gate's own evidence.

The decision (its matrix, the gate's run, the extra layers, the block caps) is the
library's: pytest_acceptance/gate/stop_decision.py. This script reads the event through
Claude Code's adapter (host_claude.py; a stop of another host that runs
``.claude/settings.json`` is left to that host's adapter), makes that one call and writes
its one answer. Inside a flow, nothing fails open: an error or the
hook's own deadline blocks with the reason.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import hook_io, host_claude, host_registry, stop_decision

_SEEN: dict[str, Any] = {}  # what main() learnt, for the fail-closed handler


def main() -> None:
    hook_io.start_deadline(hook_io.env_int("ACCEPTANCE_HOOK_DEADLINE", stop_decision.DEADLINE))
    started = time.time()  # a tool call noted after this moment is not covered by this stop
    raw = hook_io.read_payload(sys.stdin.buffer.read())
    _SEEN["payload"] = raw  # for the fail-closed handler, should the pin be unreadable
    _SEEN["host"] = host_registry.answering_for(host_claude.ADAPTER, raw).contract
    payload = host_registry.take(host_claude.ADAPTER, raw)
    if payload is not None:  # None: another host's stop, judged by its own adapter
        stop_decision.stop(payload, started, _SEEN)


def fail_closed(error: BaseException) -> None:
    stop_decision.stop_failed(error, _SEEN, _SEEN.get("host", host_claude.CONTRACT))


if __name__ == "__main__":
    hook_io.run(main, fail_closed)  # inside a flow, never fail open
