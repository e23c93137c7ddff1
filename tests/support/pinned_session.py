"""What the sessions of the hosts whose flow is pinned from the user's prompt share (Gemini
CLI, GitHub Copilot CLI): one CLI run with a deadline that kills all it started, the gate's
state under the host's home, its installer as the docs say to run it, and the records a
flow leaves (how it ended, the forced stops)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLI_TIMEOUT = 240


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(argv: list[str], cwd: Path, env: dict[str, str]) -> CliRun:
    """One CLI run, stdin closed; past CLI_TIMEOUT it and all it started are killed."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=CLI_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        name = Path(argv[0]).name
        raise AssertionError(
            f"{name} still ran after {CLI_TIMEOUT} s; killed.\n{stdout[-2000:]}\n{stderr[-2000:]}"
        ) from None
    return CliRun(process.returncode, stdout, stderr)


class PinnedFlowSession:
    """A fresh HOME with the gate installed in the project, and what a run left there.
    `HOST`: the contract's name; `HOME_FOLDER`: the host's folder under HOME (the gate's
    state is its `pytest-acceptance`); `HOOKS`: the plugin's folder of the host's scripts."""

    HOST = ""
    HOME_FOLDER = ""
    HOOKS = ""

    def __init__(self, home: Path, project: Path) -> None:
        self.home = home
        self.project = project

    @property
    def state(self) -> Path:
        return self.home / self.HOME_FOLDER / "pytest-acceptance"

    def env(self, **extra: str) -> dict[str, str]:
        raise NotImplementedError

    def install(self, plugin_root: Path) -> subprocess.CompletedProcess[str]:
        """The installer as the docs say to run it, with the system's python3."""
        script = plugin_root / "hooks" / self.HOOKS / "install.py"
        return subprocess.run(
            ["python3", str(script), str(self.project)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def flow(self) -> dict[str, Any]:
        found = list((self.state / "flows").glob("*/flow.json"))
        assert len(found) == 1, found
        data = json.loads(found[0].read_text())
        assert isinstance(data, dict)
        return data

    def outcomes(self, trusted: bool = False) -> list[dict[str, Any]]:
        """How each flow ended: the project's copy, or the one to trust in the state."""
        path = (
            self.state / "outcomes.jsonl"
            if trusted
            else self.project / ".acceptance" / f"{self.HOST}-outcomes.jsonl"
        )
        return json_lines(path)

    def forced(self) -> list[dict[str, Any]]:
        return json_lines(self.project / ".acceptance" / "forced-stops.jsonl")


def json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
