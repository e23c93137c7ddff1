"""The run's guard: what keeps a run from losing results or leaving processes behind.

- **Signals**: Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the run: what the running
  criteria started is killed, the xdist workers are told to stop, and pytest's
  KeyboardInterrupt ends the session (exit code 2, an ``interrupted`` verdict that keeps
  what finished). A second stop signal ends the run at once, without a traceback: every
  process of the run is killed and pytest's own clean-up is skipped. A worker, which a
  terminal's Ctrl-C reaches as well as the controller's stop, acts on the first only.
- **Processes** (containment.py): the controller makes the run's cgroup and hands it to the
  workers; it kills a worker's subtree when that worker goes down (even a worker killed
  by its own criterion), and everything left at the end.
- **Wave slots**: the ``pytest-acceptance-wave-*`` lock directories in the temp directory
  are removed at the end of a run, with those of earlier runs nobody holds any more.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pytest_acceptance.options import VERDICT_DECIDED
from pytest_acceptance.run import containment

_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WAVE_PREFIX = "pytest-acceptance-wave-"
_WORKER_KEY = "acceptance_cgroup"


# The signal that stopped the run (SIGTERM, SIGHUP), for the verdict's words.
STOPPED_BY = pytest.StashKey[str]()
# Folders a criterion deleted during the run, recreated to hold the verdict.
VANISHED = pytest.StashKey[list[str]]()


class RunGuard:
    """Registered on every process of a run that uses ``--acceptance``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.signal_name: str | None = None
        self.stops = 0  # stop signals received
        self.finishing = False  # the criteria are done: a stop must not cut the verdict short
        self.workers: frozenset[int] = frozenset()  # our children that are xdist workers
        self.exited: frozenset[int] = frozenset()  # of those, the ones seen dead
        self.previous_handlers: dict[int, Any] = {}
        workerinput = getattr(config, "workerinput", None)
        self.is_worker = workerinput is not None
        if workerinput is not None:
            given = workerinput.get(_WORKER_KEY)
            self.run_cgroup = Path(given) if given else None
            containment.use(self.run_cgroup, str(workerinput.get("workerid", "worker")))
        else:
            self.run_cgroup = None if config.option.collectonly else containment.start_run()
            containment.use(self.run_cgroup, "main")
        self._install_handlers()

    # -- signals -----------------------------------------------------------------------------

    def _install_handlers(self) -> None:
        """Not for SIGINT or SIGHUP when the run was started to ignore it: ``nohup`` ignores
        SIGHUP and a script's background job SIGINT, so that a closed terminal or a Ctrl-C
        meant for the script does not stop the run. SIGTERM, how a supervisor (the gate's
        hook, a CI runner) stops a run, always stops it."""
        for signum in _STOPPING:
            ignored = signum != signal.SIGTERM and signal.getsignal(signum) is signal.SIG_IGN
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                if not ignored:
                    self.previous_handlers[signum] = signal.signal(signum, self._stop)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        """Kill what criteria started, then stop like Ctrl-C does; at once the second time."""
        self.stops += 1
        name = signal.Signals(signum).name
        if self.stops > 1:
            if self.is_worker:  # the controller decides how the run ends
                return
            self._stop_at_once(name)
        self.signal_name = name
        self.config.stash[STOPPED_BY] = name
        if self.finishing:  # nothing runs any more; the verdict is being written
            return
        if self.is_worker:  # the controller stops us (or a user signalled us directly)
            raise KeyboardInterrupt(f"stopped by {name}")
        if self.run_cgroup is not None:  # the commands, not pytest's own processes
            containment.kill_cgroup(self.run_cgroup, containment.pytest_processes())
        # xdist workers, which would go on to the next criterion (SIGTERM for SIGINT, which
        # a shell ignores in background jobs)
        _stop_children(signal.SIGTERM if signum == signal.SIGINT else signum)
        raise KeyboardInterrupt(f"stopped by {name}")

    def _stop_at_once(self, name: str) -> None:
        """A second stop: kill every process of the run (the workers too), say what is left
        of the verdict, and exit with pytest's code for an interrupted run. No clean-up of
        pytest's runs any more: that is what the second Ctrl-C asked for. (A cgroup left
        behind is removed by the next run.)"""
        if self.run_cgroup is not None:
            containment.kill_cgroup(self.run_cgroup, frozenset({os.getpid()}))
        containment.kill_adopted(frozenset())  # our children and everything below them
        if self.config.stash.get(VERDICT_DECIDED, False):
            left = "the verdict was already written"
        else:
            left = "no verdict was written (the last one was removed as the run started)"
        line = f"\nacceptance: stopped at once by a second {name}: every process of the run "
        line += f"was killed; {left}\n"
        with contextlib.suppress(OSError):
            os.write(2, line.encode())
        os._exit(int(pytest.ExitCode.INTERRUPTED))

    def _restore_handlers(self) -> None:
        for signum, handler in self.previous_handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self.previous_handlers.clear()

    # -- xdist ---------------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.run_cgroup is not None:
            node.workerinput[_WORKER_KEY] = str(self.run_cgroup)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self.workers |= containment.children()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Whatever a worker's commands left is dead weight once the worker is gone (and
        when its criterion killed it, no one else would ever stop them)."""
        if self.run_cgroup is None and error is not None:  # tracking: they come to us
            self.exited |= containment.await_a_death(self.workers - self.exited)
            containment.kill_adopted(self.workers)
        if self.run_cgroup is not None:
            workerid = node.workerinput.get("workerid", "")
            if workerid:  # a worker still exiting is spared: only what it left goes
                spare = containment.pytest_processes()
                containment.remove_cgroup(self.run_cgroup / workerid, spare=spare)

    # -- the end -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:
            self.finishing = True
            if not self.is_worker:
                self._recreate_vanished_directories()

    def _recreate_vanished_directories(self) -> None:
        """A criterion that deleted the project: pytest would crash returning to the
        invocation directory, and the verdict would have nowhere to go. Recreate both
        (empty) and let the verdict say what happened."""
        vanished = []
        for directory in {self.config.invocation_params.dir, self.config.rootpath}:
            if not directory.is_dir():
                with contextlib.suppress(OSError):
                    directory.mkdir(parents=True)
                    vanished.append(str(directory))
        if vanished:
            self.config.stash[VANISHED] = vanished

    def pytest_unconfigure(self) -> None:
        containment.stop_using()
        self._restore_handlers()
        if self.is_worker:
            return
        if self.run_cgroup is not None:
            containment.remove_cgroup(self.run_cgroup, spare=containment.pytest_processes())
        remove_free_wave_directories(Path(tempfile.gettempdir()))


def _stop_children(signum: int) -> None:
    """xdist workers only hear of the stop through us (unless a terminal's Ctrl-C reached
    them too): pass the signal on, which makes a worker kill its running command's
    processes and stop."""
    for pid in _children():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _children() -> Iterable[int]:
    """Our direct children, from the kernel's own list of them. Not the process group: it
    also holds whoever started us without job control (a script's shell) or shares our
    pipeline. Only a kernel built without that list (CONFIG_PROC_CHILDREN) leaves the scan
    of every process's parent in /proc."""
    if _kernel_lists_children():
        return containment.children()
    me = os.getpid()
    table = containment.process_table()
    return [pid for pid, (state, ppid, *_rest) in table.items() if ppid == me and state != "Z"]


def _kernel_lists_children() -> bool:
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def remove_free_wave_directories(temporary: Path) -> int:
    """Remove every wave-slot directory whose slots nobody holds; returns how many."""
    try:
        import fcntl
    except ImportError:
        return 0
    removed = 0
    for directory in temporary.glob(f"{WAVE_PREFIX}*"):
        if directory.is_symlink() or not directory.is_dir():
            continue
        if _remove_if_free(directory, fcntl):
            removed += 1
    return removed


def _remove_if_free(directory: Path, fcntl: Any) -> bool:
    held = []
    try:
        slots = list(directory.glob("slot-*.lock"))
        for slot in slots:
            handle = slot.open("a")
            held.append(handle)
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # someone holds it: skip
        for slot in slots:
            slot.unlink()
        directory.rmdir()
        return True
    except OSError:
        return False
    finally:
        for handle in held:
            handle.close()
