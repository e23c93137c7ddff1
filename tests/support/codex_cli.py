"""Locate (and install with npm) the pinned OpenAI Codex CLI that the Codex tests drive.

The CLI comes from the npm registry (`@openai/codex`, which brings its native binary in
`@openai/codex-linux-x64`), installed into a cache folder outside the project
(`$ACCEPTANCE_CODEX_CACHE`, default `~/.cache/pytest-acceptance/codex-cli`), one folder per
version. `python tests/support/codex_cli.py install` installs it when missing and prints the
binary's path; `python tests/support/codex_cli.py version` prints the pin. The tests never
download it themselves: when it is missing or of another version they fail with the reason
and the next step, they never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The pin: hook payloads, the trust hashes and the transcript format move between releases.
CODEX_VERSION = "0.171.0"
PACKAGE = f"@openai/codex@{CODEX_VERSION}"
NPM_TIMEOUT_SECONDS = 900
NEXT_STEP = "run `.venv/bin/python tests/support/codex_cli.py install` (npm, about 120 MB)"
_NATIVE = Path("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")


class CodexInstallError(RuntimeError):
    """The pinned CLI is not there and could not be installed; the message says why."""


def cache_folder() -> Path:
    configured = os.environ.get("ACCEPTANCE_CODEX_CACHE", "").strip()
    base = Path(configured) if configured else Path("~/.cache/pytest-acceptance/codex-cli")
    return base.expanduser() / CODEX_VERSION


def native_binary(folder: Path | None = None) -> Path:
    """Where npm puts the native binary (it need not exist)."""
    return (folder or cache_folder()) / "node_modules" / _NATIVE


def installed_version(binary: Path) -> str | None:
    """The version `codex --version` prints (`codex-cli 0.171.0`), or None."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def installed_codex() -> Path:
    """The pinned native `codex` binary; never downloads."""
    binary = native_binary()
    if not binary.is_file():
        raise CodexInstallError(f"the pinned Codex CLI {PACKAGE} is not in {binary}: {NEXT_STEP}")
    version = installed_version(binary)
    if version != CODEX_VERSION:
        raise CodexInstallError(
            f"{binary} reports version {version!r}, the tests pin {CODEX_VERSION}: {NEXT_STEP}"
        )
    return binary


def ensure_codex() -> Path:
    """The pinned binary, installing it with npm first when it is missing."""
    binary = native_binary()
    if binary.is_file() and installed_version(binary) == CODEX_VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise CodexInstallError("npm is not on PATH: install Node.js (20 or newer) and npm")
    folder = cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), PACKAGE]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise CodexInstallError(
            f"`{' '.join(command)}` took over {NPM_TIMEOUT_SECONDS} s"
        ) from error
    if done.returncode != 0:
        raise CodexInstallError(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return installed_codex()


def main(argv: list[str]) -> int:
    if argv == ["install"]:
        try:
            print(ensure_codex())
        except CodexInstallError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if argv == ["version"]:
        print(CODEX_VERSION)
        return 0
    print("usage: python tests/support/codex_cli.py install | version", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
