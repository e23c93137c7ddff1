"""Real ``pytest --acceptance`` runs in subprocesses: a project in a temp directory, a run
to wait for, a run to signal, and what it left (verdict.json, recorded pids)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any


def plugins_left_out(*loaded: str) -> tuple[str, ...]:
    """`-p no:NAME` for every pytest plugin the test environment installs besides the
    plugin, xdist and `loaded`. They are there for the tests that prove each changes nothing
    for criteria, and those load theirs (the `started_runs_load` mark, or `-p NAME`, which
    comes later and wins). Elsewhere they stay out of the runs these tests start, as the
    cache does: pytest-randomly would reorder them, Hypothesis's plugin imports all of
    hypothesis at each run's end, and the rest double each run's start-up, in every process
    and xdist worker."""
    names = {entry.name for entry in metadata.entry_points(group="pytest11")}
    return tuple(f"-pno:{name}" for name in sorted(names - {"acceptance", "xdist", *loaded}))


QUIET_PLUGINS = plugins_left_out()
BASE = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET_PLUGINS]
STRICT = "[pytest]\nfilterwarnings = error\n"


def project(root: Path, text: str, ini: str = STRICT, name: str = "spec.md") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text(ini)
    (root / name).write_text(text)
    return root


def run(
    root: Path, *args: str, name: str = "spec.md", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BASE, "--acceptance", name, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start(root: Path, *args: str, session: bool = False) -> subprocess.Popen[str]:
    """A run in the background; ``session``: in a session (and process group) of its own,
    as a terminal's foreground job, which ``interrupt`` signals as Ctrl-C does. Its stop
    signals are the default ones even when this suite runs under ``nohup`` (whose ignored
    SIGHUP a run keeps, by design)."""
    return subprocess.Popen(
        [*BASE, "--acceptance", "spec.md", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=session,
        preexec_fn=_default_stop_signals,
    )


def _default_stop_signals() -> None:
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def interrupt(process: subprocess.Popen[str]) -> None:
    """Ctrl-C in a terminal: SIGINT to the whole foreground process group (the run and its
    xdist workers; a criterion's commands run in sessions of their own)."""
    os.killpg(process.pid, signal.SIGINT)


def verdict(root: Path) -> dict[str, Any]:
    return json.loads((root / ".acceptance" / "verdict.json").read_text())


def wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 60) -> None:
    """Until ``path`` exists with content (the run wrote it); fails if the run ends first."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def recorded(path: Path) -> list[int]:
    """The pids a criterion wrote into ``path``, one per line."""
    return [int(word) for word in path.read_text().split()] if path.exists() else []


def assert_clean(output: str) -> None:
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert "Warning" not in output


class Lines:
    """A background run's output, read as it comes (by a thread), so a test can wait for
    a line the run prints, then for the rest."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self.process = process
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)

    def wait_for(self, text: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not any(text in line for line in list(self.lines)):
            assert self.process.poll() is None, self.rest(0)
            assert time.monotonic() < deadline, f"{text!r} never printed:\n{self.rest(0)}"
            time.sleep(0.05)

    def rest(self, seconds: float = 60) -> str:
        """Everything the run printed, once it ended (or after ``seconds``)."""
        self.reader.join(seconds)
        return "".join(self.lines)
