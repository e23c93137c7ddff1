"""Shared test helpers."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    """Gone, or a zombie nobody reaps (it no longer runs anything)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def running_with(token: str) -> list[int]:
    """The live processes whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if token.encode() in Path("/proc", entry, "cmdline").read_bytes():
                    found.append(int(entry))
    return [pid for pid in found if not is_gone(pid)]


def wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if not is_gone(pid)]
        if not alive:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if not is_gone(pid)]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
