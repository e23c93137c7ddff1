"""PreToolUse hook (file tools, Bash, Skill, Agent/Task, MCP tools): protected paths during a
flow. The decision is pytest_acceptance/gate/guard_decision.py; this script reads the
payload and writes the one answer.
"""

from __future__ import annotations

import os
import sys

# The plugin's root, where its stdlib-only package is (the hooks run as python3 -E -S).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_acceptance.gate import guard_decision, hook_io

TAG = "[pytest-acceptance guard]"


def main() -> int:
    reason = guard_decision.judge(hook_io.read_payload(sys.stdin.buffer.read()))
    if reason is not None:
        hook_io.deny_tool_call(f"{TAG} {reason}")
    return 0


def on_error(error: BaseException) -> None:
    hook_io.deny_tool_call(
        f"{TAG} the guard failed ({error!r}), so this tool call is refused; try it another way."
    )


if __name__ == "__main__":
    hook_io.run(main, on_error)  # fail closed: a guard that cannot check does not wave through
