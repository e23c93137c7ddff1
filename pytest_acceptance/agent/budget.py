"""The run's agent budget (``--acceptance-max-cost``), shared by every process of the run.

One small JSON file, locked with ``flock`` for each change, holds what the run's agent
calls have spent and what the calls in flight may still spend. A call reserves its share
before it starts: what is neither spent nor reserved, split evenly among the wave's free
slots (so the checks of one wave get equal shares, and the CLI is told its share with
``--max-budget-usd``). When the call ends, its reservation is replaced by what it spent.
So spent plus reserved never passes the limit, and once it is spent no call starts: the
remaining agent criteria end as errors, never as passes. A call may still overrun its
share by the turn during which it reached it: the CLI checks its budget between turns.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PREFIX = "pytest-acceptance-budget-"
_POLL_SECONDS = 0.05
_SMALLEST_SHARE = 1e-6  # below a micro-dollar, a share cannot pay for any call


class BudgetExhausted(Exception):
    """No agent call may start: the budget is spent. ``str()`` says how much of what."""


@dataclass(frozen=True)
class _State:
    spent: float = 0.0
    reserved: float = 0.0
    in_flight: int = 0


class Budget:
    """``limit`` USD for the whole run, in the ledger file at ``path``."""

    def __init__(self, path: Path, limit: float, wave: int) -> None:
        self.path = path
        self.limit = limit
        self.wave = wave
        self._thread_lock = threading.Lock()  # flock is per open file, not per thread

    @classmethod
    def create(cls, limit: float, wave: int) -> Budget:
        handle, name = tempfile.mkstemp(prefix=PREFIX, suffix=".json")
        os.close(handle)
        return cls(Path(name), limit, wave)

    def reserve(self) -> float:
        """This call's share in USD, once one can be had; BudgetExhausted when the budget
        is spent (or everything left is reserved and no call is in flight to free it)."""
        while True:
            with self._locked() as (state, save):
                if state.spent >= self.limit:
                    raise BudgetExhausted(self.describe(state.spent))
                free = self.limit - state.spent - state.reserved
                slots = max(1, self.wave - state.in_flight)
                share = free / slots
                if share >= _SMALLEST_SHARE:
                    save(_State(state.spent, state.reserved + share, state.in_flight + 1))
                    return share
                if state.in_flight == 0:
                    raise BudgetExhausted(self.describe(state.spent))
            time.sleep(_POLL_SECONDS)  # the calls in flight will free what they do not spend

    def settle(self, share: float, spent: float) -> None:
        """A call that reserved ``share`` ended having spent ``spent``."""
        with self._locked() as (state, save):
            save(
                _State(
                    state.spent + spent,
                    max(0.0, state.reserved - share),
                    max(0, state.in_flight - 1),
                )
            )

    def spent(self) -> float:
        with self._locked() as (state, _save):
            return state.spent

    def describe(self, spent: float) -> str:
        return f"${spent:.4f} of the ${self.limit:g} budget (--acceptance-max-cost) spent"

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[_State, _Saver]]:
        with self._thread_lock, self.path.open("a+", encoding="utf-8") as handle:
            _lock(handle)
            handle.seek(0)
            state = _parse(handle.read())
            yield state, _Saver(handle)


class _Saver:
    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle

    def __call__(self, state: _State) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(state.__dict__))
        self.handle.flush()


def _lock(handle: IO[str]) -> None:
    try:
        import fcntl
    except ImportError:  # no flock: the thread lock is the only one (one process)
        return
    fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes


def _parse(text: str) -> _State:
    try:
        data = json.loads(text) if text.strip() else {}
        return _State(float(data["spent"]), float(data["reserved"]), int(data["in_flight"]))
    except (ValueError, KeyError, TypeError):
        return _State()
