"""Locate (and install with npm) the pinned Gemini CLI that the Gemini contract tests drive.

The CLI comes from the npm registry (`@google/gemini-cli`, one bundled JavaScript file run
by Node 20+), installed into a cache folder outside the project
(`$ACCEPTANCE_GEMINI_CACHE`, default `~/.cache/pytest-acceptance/gemini-cli`), one folder
per version. `python tests/support/gemini_cli.py install` installs it when missing and
prints its path. The tests never download it themselves: when it is missing or of another
version they fail with the reason and the next step, they never skip.

Offline: `GEMINI_API_KEY` with `security.auth.selectedType = "gemini-api-key"` in the
settings, and `GOOGLE_GEMINI_BASE_URL` pointing at a stand-in of the Gemini API on
127.0.0.1 (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The pin: hook payloads and the settings' shape move between releases.
GEMINI_VERSION = "0.61.0"
PACKAGE = f"@google/gemini-cli@{GEMINI_VERSION}"
NPM_TIMEOUT_SECONDS = 900
NEXT_STEP = "run `.venv/bin/python tests/support/gemini_cli.py install` (npm)"


class GeminiInstallError(RuntimeError):
    """The pinned CLI is not there and could not be installed; the message says why."""


def cache_folder() -> Path:
    configured = os.environ.get("ACCEPTANCE_GEMINI_CACHE", "").strip()
    base = Path(configured) if configured else Path("~/.cache/pytest-acceptance/gemini-cli")
    return base.expanduser() / GEMINI_VERSION


def launcher(folder: Path | None = None) -> Path:
    """Where npm puts the `gemini` command (it need not exist)."""
    return (folder or cache_folder()) / "node_modules" / ".bin" / "gemini"


def installed_version(binary: Path) -> str | None:
    """The version `gemini --version` prints, or None."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def installed_gemini() -> Path:
    """The pinned `gemini` command; never downloads."""
    binary = launcher()
    if not binary.is_file():
        raise GeminiInstallError(f"the pinned Gemini CLI {PACKAGE} is not in {binary}: {NEXT_STEP}")
    version = installed_version(binary)
    if version != GEMINI_VERSION:
        raise GeminiInstallError(
            f"{binary} reports version {version!r}, the tests pin {GEMINI_VERSION}: {NEXT_STEP}"
        )
    return binary


def ensure_gemini() -> Path:
    """The pinned command, installing it with npm first when it is missing."""
    binary = launcher()
    if binary.is_file() and installed_version(binary) == GEMINI_VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise GeminiInstallError("npm is not on PATH: install Node.js (20 or newer) and npm")
    folder = cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), PACKAGE]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise GeminiInstallError(
            f"`{' '.join(command)}` took over {NPM_TIMEOUT_SECONDS} s"
        ) from error
    if done.returncode != 0:
        raise GeminiInstallError(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return installed_gemini()


def main(argv: list[str]) -> int:
    if argv == ["install"]:
        try:
            print(ensure_gemini())
        except GeminiInstallError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if argv == ["version"]:
        print(GEMINI_VERSION)
        return 0
    print("usage: python tests/support/gemini_cli.py install | version", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
