"""Hook I/O shared by the pytest-acceptance hooks: the payload, the output, env switches.

Standard library only and cheap to import: the hooks run under the user's ``python3 -S``,
without the package installed, on every Stop and on every Skill call.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any, Callable, NoReturn

PLUGIN_NAME = "pytest-acceptance"
PLUGIN_ROOT = Path(__file__).resolve().parents[2]  # pytest_acceptance/gate/ -> the plugin
DEFAULT_SETTLE_SECONDS = 10.0
# The deadline of the hooks that may run the gate (ACCEPTANCE_HOOK_DEADLINE), in seconds:
# their timeout in hooks.json is 900.
GATE_HOOK_DEADLINE = 840


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


# The hook's one answer, written once when the hook ends (``finish``): the CLI reads exactly
# one JSON value on stdout, so a warning and a block decided at different moments of one run
# become one object, and a block is never lost behind an earlier message.
_ANSWER: dict[str, Any] = {}
# How the answer is written for the host that runs the hook (hosts.py): the neutral
# vocabulary above, rendered in the host's own shape by its adapter.
_RENDER: list[Callable[[dict[str, Any]], dict[str, Any]]] = []


def answer_with(render: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Write this hook's answer through `render` (a host adapter's)."""
    _RENDER[:] = [render]


def emit(output: dict[str, Any]) -> None:
    """Add to the hook's answer. A block or deny outranks a plain message (both are kept);
    two blocks keep both reasons."""
    for key, value in output.items():
        if key == "hookSpecificOutput" and isinstance(value, dict):
            _merge_specific(value)
        elif key in ("systemMessage", "reason", "stopReason") and key in _ANSWER:
            if value not in str(_ANSWER[key]):
                _ANSWER[key] = f"{_ANSWER[key]}\n{value}"
        elif key in ("decision", "continue") and key in _ANSWER:
            continue  # the first block or stop stands; a later one adds its reason only
        else:
            _ANSWER[key] = value


def _merge_specific(specific: dict[str, Any]) -> None:
    kept = _ANSWER.setdefault("hookSpecificOutput", {})
    reason = specific.get("permissionDecisionReason")
    if (
        "permissionDecisionReason" in kept
        and reason
        and reason not in kept["permissionDecisionReason"]
    ):
        kept["permissionDecisionReason"] += f"\n{reason}"
        specific = {k: v for k, v in specific.items() if k != "permissionDecisionReason"}
    if kept.get("permissionDecision") == "deny":
        specific = {k: v for k, v in specific.items() if k != "permissionDecision"}
    kept.update(specific)


def blocking(output: dict[str, Any]) -> bool:
    specific = output.get("hookSpecificOutput")
    denied = isinstance(specific, dict) and specific.get("permissionDecision") == "deny"
    return output.get("decision") in ("block", "deny") or denied or output.get("continue") is False


def finish() -> None:
    """Write the answer (nothing when there is none), once. A closed stdout must not end in
    a traceback (the CLI would take it for a non-blocking error): a block or deny goes to
    stderr with exit code 2, which Claude Code treats as a blocking error."""
    if not _ANSWER:
        return
    output = dict(_ANSWER)
    _ANSWER.clear()
    if _RENDER:
        # A renderer's bug must not lose a block: the neutral answer then stands.
        with contextlib.suppress(Exception):
            output = _RENDER[0](output) or {}
        if not output:
            return
    try:
        sys.stdout.write(json.dumps(output) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # closed, or None when fd 1 was never open
        if blocking(output):
            specific = output.get("hookSpecificOutput") or {}
            reason = output.get("reason") or specific.get("permissionDecisionReason", "")
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.write(f"{reason}\n")
                sys.stderr.flush()
        os._exit(2 if blocking(output) else 0)


def run(main: Callable[[], object], on_error: Callable[[BaseException], None]) -> NoReturn:
    """A hook's whole life: ``main``; any exception, ``RecursionError`` and ``MemoryError``
    included, goes to ``on_error`` (which decides: inside a flow it blocks); then the one
    answer is written and the process ends with 0."""
    try:
        main()
    except Exception as error:  # every failure is decided by on_error, never a traceback
        try:
            on_error(error)
        except Exception as again:  # the handler itself failed: never allow silently
            emit({"decision": "block", "reason": f"pytest-acceptance: the hook failed ({again!r})"})
    finally:
        cancel_deadline()
        finish()
    sys.exit(0)


def tell_user(message: str) -> None:
    """Let the event through, with a message shown to the user."""
    emit({"systemMessage": message})


class HookDeadline(Exception):
    """The hook's internal deadline passed (well before the CLI's own timeout)."""


def start_deadline(seconds: int) -> None:
    """Raise HookDeadline in the main thread after `seconds`: a hook that cannot finish in
    time decides itself (inside a flow: block) instead of letting the CLI's timeout allow."""
    import signal  # here: the guard, which runs before every tool call, sets no deadline

    def expire(signum: int, frame: Any) -> None:
        raise HookDeadline(f"the hook did not finish within its {seconds} s deadline")

    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, expire)
        signal.alarm(max(1, seconds))


def cancel_deadline() -> None:
    signal = sys.modules.get("signal")  # not imported: no deadline was started
    if signal is not None and hasattr(signal, "SIGALRM"):
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


def project_top(folder: Path) -> Path | None:
    """The repository holding `folder` (links resolved), found on the file system as git
    finds it (tree/repository.py): never asked of a git or a configuration the project
    controls, which would choose the folder the gate verifies."""
    from pytest_acceptance.tree import repository

    found = repository.top(os.path.realpath(folder))
    return None if found is None else Path(found)


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
