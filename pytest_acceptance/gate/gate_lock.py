"""One gate run of a working tree at a time.

Two hooks can judge the same tree at the same instant: two Stop hooks of one session, or
the sessions of two agents in one repository. Their runs share what the gate keeps beside a
flow (the bytecode folders it compiles and then witnesses unchanged, the stored results,
the counts in flow.json) and the tree itself, which each run fingerprints before and after
its criteria ran. Run together, each could change what the other reads, and report that
instead of its own reason. So a gate run takes an exclusive ``flock`` on a file named by
the tree's real path, in the plugin's state, before it reads anything, and holds it to the
end; a second run waits for it within its own deadline, then reads the flow's state as the
first one left it (it reuses the stored result when that is allowed and the tree is
unchanged, and runs again otherwise). The kernel releases the lock when its holder's file
closes, which a process that dies does too: a crashed run never wedges the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import IO, Iterator

from pytest_acceptance.gate.flow_state import Flow, data_dir
from pytest_acceptance.gate.gate_runtime import GateError

POLL = 0.1  # seconds between two tries of a held lock
# What a gate run writes into flow.json: read again once the lock is taken, so a run that
# waited neither works from what the run before it replaced nor saves it back over it.
RUN_KEYS = ("criteria_modules", "gate_runs", "real_run_at")


def lock_path(repo: str) -> Path:
    real = os.path.realpath(repo)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return data_dir() / "locks" / f"gate-{digest}.lock"


@contextlib.contextmanager
def held(flow: Flow, deadline_at: float) -> Iterator[None]:
    """The tree's gate lock for the body; GateError when another run still holds it at the
    deadline (``time.monotonic()`` seconds)."""
    path = lock_path(flow.repo)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 -- held to the end
    except OSError as error:
        raise GateError(f"cannot take the gate's lock {path} ({error})") from None
    with handle:
        _wait(handle, path, deadline_at)
        _say_holder(handle)
        _refresh(flow)
        yield


def _wait(handle: IO[str], path: Path, deadline_at: float) -> None:
    started = time.monotonic()
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as error:
            raise GateError(f"cannot take the gate's lock {path} ({error})") from None
        if time.monotonic() >= deadline_at:
            raise GateError(
                f"another gate run of this working tree ({_holder(path)}) did not finish "
                f"within {time.monotonic() - started:.0f} s; the gate runs one verification "
                "of a tree at a time. Try again when it has finished"
            )
        time.sleep(POLL)


def _say_holder(handle: IO[str]) -> None:
    """Write this process's pid into the lock file: what a waiter names."""
    with contextlib.suppress(OSError):
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        text = ""
    return text if text.startswith("pid ") and text[4:].isdigit() else "another process"


def _refresh(flow: Flow) -> None:
    try:
        data = json.loads((flow.folder / "flow.json").read_bytes())
    except (OSError, ValueError):
        return  # never saved yet, or unreadable: the flow keeps what it loaded
    if not isinstance(data, dict) or data.get("session_id") != flow.session_id:
        return
    for key in RUN_KEYS:
        if key in data:
            flow.data[key] = data[key]
        else:
            flow.data.pop(key, None)
