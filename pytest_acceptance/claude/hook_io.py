"""Hook I/O shared by the pytest-acceptance hooks: the payload, the output, env switches.

Standard library only and cheap to import: the hooks run under the user's ``python3 -S``,
without the package installed, on every Stop and on every Skill call.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

PLUGIN_NAME = "pytest-acceptance"
PLUGIN_ROOT = Path(__file__).resolve().parents[2]  # pytest_acceptance/claude/ -> the plugin
DEFAULT_SETTLE_SECONDS = 10.0


class HookInputError(Exception):
    """The hook's input cannot be used; the message says what was wrong."""


# --- hook I/O ------------------------------------------------------------------------------


def read_payload(raw: bytes) -> dict[str, Any]:
    """The hook's JSON payload from stdin bytes, or HookInputError naming what is wrong."""
    if not raw.strip():
        raise HookInputError("empty stdin: expected the JSON payload Claude Code sends to hooks")
    try:
        payload = json.loads(raw)
    except ValueError as error:
        raise HookInputError(f"stdin is not JSON ({error})") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"stdin is JSON {type(payload).__name__}, expected an object")
    return payload


def text_field(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def session_id(payload: dict[str, Any]) -> str | None:
    """The session the hook runs for: the payload's, else the one Claude Code exports."""
    return text_field(payload, "session_id") or os.environ.get("CLAUDE_CODE_SESSION_ID") or None


def emit(output: dict[str, Any]) -> None:
    """Write the hook's decision. A closed stdout must not end in a traceback (the CLI would
    take it for a non-blocking error): a block or deny goes to stderr with exit code 2,
    which Claude Code treats as a blocking error; anything else ends quietly."""
    try:
        sys.stdout.write(json.dumps(output) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # closed, or None when fd 1 was never open
        blocking = output.get("decision") == "block" or "hookSpecificOutput" in output
        if blocking:
            reason = output.get("reason") or output["hookSpecificOutput"].get(
                "permissionDecisionReason", ""
            )
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.write(f"{reason}\n")
                sys.stderr.flush()
        os._exit(2 if blocking else 0)


def tell_user(message: str) -> None:
    """Let the event through, with a message shown to the user."""
    emit({"systemMessage": message})


class HookDeadline(Exception):
    """The hook's internal deadline passed (well before the CLI's own timeout)."""


def start_deadline(seconds: int) -> None:
    """Raise HookDeadline in the main thread after `seconds`: a hook that cannot finish in
    time decides itself (inside a flow: block) instead of letting the CLI's timeout allow."""

    def expire(signum: int, frame: Any) -> None:
        raise HookDeadline(f"the hook did not finish within its {seconds} s deadline")

    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, expire)
        signal.alarm(max(1, seconds))


def cancel_deadline() -> None:
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)


def env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, "").strip() or default)
    except ValueError:
        return default


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "").strip() or default)
    except ValueError:
        return default


def settle_seconds() -> float:
    """How long a hook waits for the CLI's lazily written transcript to hold the event it
    judges (ACCEPTANCE_HOOK_SETTLE_SECONDS): well under the hooks' deadline; an honest flow
    waits milliseconds. Past it, the transcript is judged as written."""
    return env_float("ACCEPTANCE_HOOK_SETTLE_SECONDS", DEFAULT_SETTLE_SECONDS)


def env_enabled(name: str) -> bool:
    """Extra layers are on unless switched off with 0/false/no/off."""
    return os.environ.get(name, "").strip().lower() not in {"0", "false", "no", "off"}


def git_toplevel(folder: Path) -> Path | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else None


def deny_tool_call(reason: str) -> None:
    """A PreToolUse answer that refuses the tool call; the model reads `reason`."""
    emit(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    )
