"""A coding agent's CLI from the npm registry, pinned, installed into a cache folder outside
the project (`$ACCEPTANCE_<NAME>_CACHE`, default `~/.cache/pytest-acceptance/<name>-cli`),
one folder per version. The tests never download one themselves: when it is missing or of
another version they fail with the reason and the next step, they never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NPM_TIMEOUT_SECONDS = 900


class CliInstallError(RuntimeError):
    """The pinned CLI is not there and could not be installed; the message says why."""


@dataclass(frozen=True)
class NpmCli:
    name: str  # "gemini", "copilot": the cache folder, the environment variable, the script
    package: str
    version: str
    command: str  # the launcher npm puts in node_modules/.bin

    @property
    def pinned(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def next_step(self) -> str:
        return f"run `.venv/bin/python tests/support/{self.name}_cli.py install` (npm)"

    def cache_folder(self) -> Path:
        configured = os.environ.get(f"ACCEPTANCE_{self.name.upper()}_CACHE", "").strip()
        default = Path(f"~/.cache/pytest-acceptance/{self.name}-cli")
        return (Path(configured) if configured else default).expanduser() / self.version

    def launcher(self) -> Path:
        return self.cache_folder() / "node_modules" / ".bin" / self.command

    def installed_version(self, binary: Path) -> str | None:
        """The last word `<command> --version` prints on its first line, or None."""
        try:
            done = subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        lines = done.stdout.strip().splitlines()
        words = lines[0].split() if lines else []
        return words[-1].rstrip(".").lstrip("v") if done.returncode == 0 and words else None

    def installed(self) -> Path:
        """The pinned launcher; never downloads."""
        binary = self.launcher()
        if not binary.is_file():
            raise CliInstallError(f"{self.pinned} is not in {binary}: {self.next_step}")
        version = self.installed_version(binary)
        if version != self.version:
            raise CliInstallError(
                f"{binary} reports version {version!r}, the tests pin {self.version}: "
                f"{self.next_step}"
            )
        return binary

    def ensure(self) -> Path:
        """The pinned launcher, installing it with npm first when it is missing."""
        binary = self.launcher()
        if binary.is_file() and self.installed_version(binary) == self.version:
            return binary
        npm = shutil.which("npm")
        if npm is None:
            raise CliInstallError("npm is not on PATH: install Node.js (20 or newer) and npm")
        folder = self.cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), self.pinned]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
            )
        except subprocess.TimeoutExpired as error:
            took = f"`{' '.join(command)}` took over {NPM_TIMEOUT_SECONDS} s"
            raise CliInstallError(took) from error
        if done.returncode != 0:
            raise CliInstallError(
                f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
            )
        return self.installed()

    def main(self, argv: list[str]) -> int:
        if argv == ["install"]:
            try:
                print(self.ensure())
            except CliInstallError as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
            return 0
        if argv == ["version"]:
            print(self.version)
            return 0
        print(f"usage: python tests/support/{self.name}_cli.py install | version", file=sys.stderr)
        return 2
