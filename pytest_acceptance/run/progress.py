"""Live progress for people watching a run: which criterion runs, and for how long.

On the controller (or the only process) a ``LiveProgress`` plugin follows
``pytest_runtest_logstart`` / ``logfinish``, which xdist forwards from its workers, so it
knows what runs on every worker. A background thread shows the longest-running criterion:

- on a terminal, a status line after the current output (``⏳ AC-3 Title · 12 s``),
  shown once a criterion has run for ``STATUS_AFTER`` seconds and erased before pytest
  writes anything (the hook wrappers below hold the lock while pytest writes);
- elsewhere (CI logs), a plain line every ``acceptance_progress_interval`` seconds.

It writes to its own duplicate of the terminal's file descriptor: while a test runs,
pytest's capture redirects fd 1 into a temp file, and a status line must not end up in a
criterion's captured output.

Under ``-s`` a bash criterion's output streams live: ``run_bash.live_output`` gets a
watcher that copies the command's output files to the terminal while the command runs.
It also puts criterion titles in ``-v`` lines (``spec.md::AC-3 Title``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

import pytest

STATUS_AFTER = 2.0  # seconds a criterion runs before the terminal status line shows it
TICK = 0.5  # seconds between status updates
STREAM_TICK = 0.1  # seconds between copies of a command's output under -s
ERASE = "\x1b[K"
SAVE, RESTORE = "\x1b7", "\x1b8"


def register_progress(config: pytest.Config) -> None:
    """Register what the run needs: titles and progress on the controller, and the live
    output of bash criteria under ``-s`` in the process that runs them."""
    if hasattr(config, "workerinput"):
        return  # a worker's starts reach the controller as logstart; its -s output does not
    streaming = config.getoption("capture", "fd") == "no"
    if streaming:
        from pytest_acceptance.run import bash as run_bash

        run_bash.live_output = _stream_output
        config.add_cleanup(lambda: setattr(run_bash, "live_output", None))
    config.pluginmanager.register(_ProgressSetup(streaming), "acceptance-progress-setup")


class _ProgressSetup:
    """Waits for the terminal reporter, which pytest configures after this plugin."""

    def __init__(self, streaming: bool) -> None:
        self._streaming = streaming

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        config = session.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        _show_titles(reporter)
        if config.getoption("collectonly"):
            return
        interval = progress_interval(config)
        status_line = reporter.isatty() and not self._streaming  # -s: the output is live
        if status_line or interval > 0:
            progress = LiveProgress(reporter, interval, status_line)
            config.pluginmanager.register(progress, "acceptance-progress")


def progress_interval(config: pytest.Config) -> float:
    from pytest_acceptance.options import ini_duration

    return ini_duration(config, "acceptance_progress_interval")  # 0: no plain progress lines


# --- titles in -v lines --------------------------------------------------------------------


def _show_titles(reporter: Any) -> None:
    """``spec.md::AC-3 Title`` in ``-v`` lines, also on an xdist controller: the title is
    read back from the report's location (``reportinfo`` gives ``AC-3: Title``). pytest has
    no hook for this line, so its ``_locationline`` is wrapped (a test fails if it goes)."""
    original = getattr(reporter, "_locationline", None)
    if original is None:
        return

    def with_title(nodeid: Any, fspath: str, lineno: int | None, domain: str) -> str:
        line: str = original(nodeid, fspath, lineno, domain)
        title = title_of(str(nodeid), domain)
        return f"{line.rstrip(' ')} {title} " if title else line

    reporter._locationline = with_title


def title_of(nodeid: str, domain: str) -> str | None:
    """The criterion title in a location's domain (``AC-3: Title``), or None."""
    name = nodeid.rsplit("::", 1)[-1]
    if domain and domain.startswith(f"{name}: "):
        return domain[len(name) + 2 :].strip() or None
    return None


# --- the status line / periodic lines --------------------------------------------------------


class LiveProgress:
    """Shows the longest-running criterion while it runs (see the module docstring)."""

    def __init__(self, reporter: Any, interval: float, status_line: bool) -> None:
        self._reporter = reporter
        self._tty = status_line
        self._interval = interval
        self._out, self._owns_out = _terminal_stream(reporter)
        self._lock = threading.RLock()
        self._running: dict[str, tuple[str, float]] = {}  # nodeid → (label, started)
        self._shown = ""  # the status text now on screen (TTY)
        self._last_line = time.monotonic()  # when the last plain line was written
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="acceptance-progress", daemon=True)
        self._thread.start()

    # pytest writes only inside these wrappers while the status line is erased.
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, Any, str]) -> Any:
        with self._lock:
            self._erase()
            self._running[nodeid] = (_label(nodeid, location), time.monotonic())
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        with self._lock:
            self._erase()
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> Any:
        with self._lock:
            self._erase()
            self._running.pop(nodeid, None)
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_internalerror(self) -> Any:
        self.close()
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Any:
        self.close()
        return (yield)

    def pytest_unconfigure(self) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            self._erase()
            self._running.clear()
            if self._owns_out:
                self._out.close()  # our duplicate of the terminal's descriptor

    def _loop(self) -> None:
        while not self._stop.wait(TICK):
            with self._lock:
                if not self._stop.is_set():
                    self._update(time.monotonic())

    def _update(self, now: float) -> None:
        running = self._long_running(now)
        if self._tty:
            self._show(status_text(running, now) if running else "")
        elif running and now - self._last_line >= self._interval:
            self._write_line(f"[acceptance] {status_text(running, now, plain=True)}")
            self._last_line = now

    def _long_running(self, now: float) -> list[tuple[str, float]]:
        """The running criteria, longest first, once the longest ran for a moment."""
        ordered = sorted(self._running.values(), key=lambda entry: entry[1])
        return ordered if ordered and now - ordered[0][1] >= STATUS_AFTER else []

    def _show(self, text: str) -> None:
        room = self._reporter._tw.fullwidth - self._reporter._tw.width_of_current_line - 2
        text = text[: max(room, 0)] if room >= 12 else ""
        if text != self._shown:
            self._emit(f"{ERASE}{SAVE} {text}{RESTORE}" if text else ERASE)
            self._shown = text

    def _erase(self) -> None:
        if self._shown:
            self._emit(ERASE)
            self._shown = ""

    def _write_line(self, line: str) -> None:
        """A line of its own. In ``-v`` output it ends the criterion's half-written line and
        pytest writes that line whole again; in ``.`` output the dots go on below it."""
        verbose = self._reporter.showlongtestinfo
        started = "\n" if self._reporter._tw.width_of_current_line else ""
        self._emit(started + line + ("" if verbose else "\n"))
        with contextlib.suppress(AttributeError):  # keep pytest's idea of the line in step
            self._reporter._tw._current_line = line if verbose else ""
            if verbose:
                self._reporter.currentfspath = -2

    def _emit(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # ValueError: closed at the end
            self._out.write(text)
            self._out.flush()


def status_text(running: list[tuple[str, float]], now: float, plain: bool = False) -> str:
    label, started = running[0]
    more = f" (+{len(running) - 1} more running)" if len(running) > 1 else ""
    prefix = "still running" if plain else "⏳"
    return f"{prefix} {label} · {_seconds(now - started)}{more}"


def _seconds(elapsed: float) -> str:
    whole = int(elapsed)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


def _label(nodeid: str, location: tuple[str, Any, str]) -> str:
    name = nodeid.rsplit("::", 1)[-1]
    title = title_of(nodeid, location[2] if len(location) > 2 else "")
    return f"{name} {title}" if title else name


def _terminal_stream(reporter: Any) -> tuple[IO[str], bool]:
    """A duplicate of the terminal's descriptor, taken while pytest's capture is off (at
    session start): writes through it never land in a test's captured output."""
    writer_file = getattr(reporter._tw, "_file", sys.stdout)
    try:
        descriptor = os.dup(writer_file.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor (an in-process pytester)
        return writer_file, False
    return os.fdopen(descriptor, "w", encoding="utf-8", errors="replace"), True


# --- -s: a bash criterion's output, live ------------------------------------------------


@contextlib.contextmanager
def _stream_output(stdout: IO[bytes], stderr: IO[bytes]) -> Iterator[None]:
    """Copy what a command writes to its output files to our stdout/stderr while it runs.

    The files are memfds or temp files the command writes through its own descriptors;
    ``os.pread`` reads them without moving the offset the command writes at."""
    stop = threading.Event()
    copiers = [_Copier(stdout, sys.stdout), _Copier(stderr, sys.stderr)]

    def loop() -> None:
        while not stop.wait(STREAM_TICK):
            for copier in copiers:
                copier.copy()

    thread = threading.Thread(target=loop, name="acceptance-live-output", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        for copier in copiers:
            copier.copy()


class _Copier:
    def __init__(self, source: IO[bytes], target: IO[str]) -> None:
        self._source, self._target, self._offset = source.fileno(), target, 0

    def copy(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.pread(self._source, 65536, self._offset):
                self._offset += len(chunk)
                self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        buffer = getattr(self._target, "buffer", None)
        if buffer is not None:
            self._target.flush()
            buffer.write(chunk)
            buffer.flush()
        else:
            self._target.write(chunk.decode("utf-8", errors="replace"))
            self._target.flush()
