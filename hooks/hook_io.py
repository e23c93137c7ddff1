"""Hook I/O shared by the pytest-acceptance hooks: the payload, the output, env switches.

Standard library only and cheap to import: the hooks run under the user's ``python3 -S``,
without the package installed, on every Stop and on every Skill call.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

PLUGIN_NAME = "pytest-acceptance"
PLUGIN_ROOT = Path(__file__).resolve().parent.parent


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


def emit(output: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(output) + "\n")


def tell_user(message: str) -> None:
    """Let the event through, with a message shown to the user."""
    emit({"systemMessage": message})


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
