"""UserPromptSubmit / UserPromptExpansion hook: pin an /implement flow, end a finished one.

The decision is the library's (pytest_acceptance/gate/pin.py ``on_prompt``): a finished
flow ends at the next prompt the user types; /pytest-acceptance:implement SPEC pins a new
flow unless the session's flow is open and not finished. No other prompt is refused: a pin
that fails is told to the user, and the Stop hook then blocks the flow it cannot check.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import hook_io, pin

DEADLINE = 100  # seconds; the hook's timeout in hooks.json is 120


def main() -> int:
    hook_io.start_deadline(DEADLINE)
    pin.on_prompt(hook_io.read_payload(sys.stdin.buffer.read()))
    return 0


def on_error(error: BaseException) -> None:
    hook_io.tell_user(f"pytest-acceptance prompt hook failed ({error}); flow not pinned.")


if __name__ == "__main__":
    hook_io.run(main, on_error)  # never refuse a prompt; say that the flow is not pinned
