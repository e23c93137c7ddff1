"""ConfigChange hook: while an /implement flow is open, settings changes that switch hooks
off (disableAllHooks, this plugin disabled) or add/alter hooks do not take effect, nor does
a change of a settings file the guard cannot read exactly as the CLI does.

The rules and the snapshot they compare with are in settings_guard.py. Outside a flow every
change goes through. The refusal is `{"decision": "block", "reason": ...}`: the CLI keeps the
settings it had.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import hook_io, session_flow, settings_guard


def main() -> int:
    payload = hook_io.read_payload(sys.stdin.buffer.read())
    if payload.get("source") in settings_guard.FREE_SOURCES:
        return 0
    flow = session_flow.open_flow(payload, session_flow.pin_of(payload))
    if flow is None:
        return 0
    snapshot = settings_guard.load_snapshot(settings_guard.snapshot_path(flow.key))
    why = settings_guard.refusal(payload.get("source"), payload.get("file_path"), snapshot)
    if why is not None:
        settings_guard.record_refusal(payload, why)
        refuse(
            f"{why} while the /implement flow for {flow.spec} is open: the change does not take "
            "effect. Hooks are the human's to change, between flows."
        )
    return 0


def refuse(reason: str) -> None:
    hook_io.emit({"decision": "block", "reason": f"[pytest-acceptance guard] {reason}"})


def on_error(error: BaseException) -> None:
    refuse(f"the settings guard failed ({error!r}); the change was not applied.")


if __name__ == "__main__":
    hook_io.run(main, on_error)  # fail closed: keep the settings that were in force
