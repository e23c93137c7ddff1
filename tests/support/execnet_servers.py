"""Real execnet socket servers on 127.0.0.1, each in a folder of its own: stand-ins for
the machines that ``pytest --tx socket=HOST:PORT`` reaches. execnet ships the server
(``execnet/script/socketserver.py``); it runs with this interpreter, so the workers it
starts have pytest-acceptance installed, as a prepared remote machine would.

A server is stopped (its process group killed) when the ``with`` block ends, and kills
itself after ``LIFETIME`` seconds should the test process die first.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import execnet.script.socketserver as _script

LIFETIME = 600  # seconds a server lives at most, whatever happens to the test process
_LISTENING = re.compile(r"Entering Accept loop \('127\.0\.0\.1', (\d+)\)")


@dataclass(frozen=True)
class SocketServer:
    folder: Path  # the server's working directory: where a ``--tx socket=`` worker starts
    port: int
    process: subprocess.Popen[str]

    @property
    def tx(self) -> str:
        return f"socket=127.0.0.1:{self.port}"

    def kill(self) -> None:
        """The machine goes away: the server and the worker it runs, at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def start_server(folder: Path) -> SocketServer:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder.parent / f"{folder.name}.log"  # a file, not a pipe nobody drains
    with log.open("w") as output:
        # `timeout` ends the server should the test never stop it (a killed test process).
        server = [sys.executable, "-u", _script.__file__, "127.0.0.1:0"]
        process = subprocess.Popen(
            ["timeout", "-s", "KILL", str(LIFETIME), *server],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a group of its own: kill() ends the worker with it
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if found := _LISTENING.search(log.read_text()):
            return SocketServer(folder, int(found.group(1)), process)
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"the execnet socket server in {folder} never listened: {log.read_text()}")


@contextlib.contextmanager
def socket_servers(base: Path, count: int) -> Iterator[list[SocketServer]]:
    """``count`` servers in ``base/machine-1`` … ``base/machine-N``, stopped afterwards."""
    servers: list[SocketServer] = []
    try:
        for number in range(1, count + 1):
            servers.append(start_server(base / f"machine-{number}"))
        yield servers
    finally:
        for server in servers:
            server.kill()
