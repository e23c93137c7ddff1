"""Locate (and install with pip) the pinned Claude Code CLI that the real-CLI tests drive.

The CLI comes from PyPI, inside the pinned `claude-agent-sdk` wheel
(`claude_agent_sdk/_bundled/claude`): the test extra installs it (`pip install -e
'.[test]'`), no Node.js involved. `python tests/support/claude_cli.py install` installs it
into the running interpreter's environment when missing (pip, without the SDK's own
dependencies: the tests run the CLI, never the SDK) and prints the binary's path;
`python tests/support/claude_cli.py version` prints the pin.
The CLI is a hard requirement of the test suite: when it is missing or of another version
the tests fail with the reason and the next step, they never skip.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

# The pins: transcript format and hook payloads change between releases. The SDK release
# bundles exactly this CLI (its _bundled/claude.version says so).
CLAUDE_CODE_VERSION = "2.1.328"
SDK_VERSION = "0.2.185"
SDK_REQUIREMENT = f"claude-agent-sdk=={SDK_VERSION}"
PIP_TIMEOUT_SECONDS = 900
NEXT_STEP = "run `.venv/bin/pip install -e '.[test]'` (CONTRIBUTING; about 165 MB from PyPI)"


class ClaudeInstallError(RuntimeError):
    """The pinned CLI is not there and could not be installed; the message says why."""


def bundled_binary() -> Path | None:
    """The CLI inside the installed claude-agent-sdk, found without importing the SDK."""
    importlib.invalidate_caches()  # pip may have installed it since this process started
    spec = importlib.util.find_spec("claude_agent_sdk")
    for location in (spec.submodule_search_locations or ()) if spec else ():
        binary = Path(location, "_bundled", "claude")
        if binary.is_file():
            return binary
    return None


def installed_version(binary: Path) -> str | None:
    """What `claude --version` prints (first word), or None when it does not run."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    return words[0] if done.returncode == 0 and words else None


def installed_claude() -> Path:
    """The pinned `claude` binary of the installed SDK; never downloads (the tests must not
    fetch 165 MB silently in the middle of a run)."""
    binary = bundled_binary()
    if binary is None:
        raise ClaudeInstallError(
            f"{SDK_REQUIREMENT} (which bundles Claude Code {CLAUDE_CODE_VERSION}) is not "
            f"installed in {sys.prefix}: {NEXT_STEP}"
        )
    return _check_version(binary)


def _check_version(binary: Path) -> Path:
    version = installed_version(binary)
    if version != CLAUDE_CODE_VERSION:
        raise ClaudeInstallError(
            f"{binary} reports version {version!r}, the tests pin {CLAUDE_CODE_VERSION} "
            f"({SDK_REQUIREMENT}): {NEXT_STEP}"
        )
    return binary


def ensure_claude(requirement: str = SDK_REQUIREMENT) -> Path:
    """The pinned `claude` binary, pip-installing the pinned SDK first when it is missing
    (``requirement``: what pip installs, the pin unless a test says otherwise)."""
    binary = bundled_binary()
    if binary is not None and installed_version(binary) == CLAUDE_CODE_VERSION:
        return binary
    _pip_install(requirement)
    binary = bundled_binary()
    if binary is None:
        raise ClaudeInstallError(
            f"pip installed {SDK_REQUIREMENT} but claude_agent_sdk/_bundled/claude is "
            "missing: no wheel of it bundles the CLI for this platform (there are wheels "
            "for manylinux x86_64 and aarch64, macOS and Windows; none for musl)"
        )
    return _check_version(binary)


def _pip_install(requirement: str) -> None:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", requirement]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise ClaudeInstallError(
            f"`{' '.join(command)}` took more than {PIP_TIMEOUT_SECONDS} s"
        ) from error
    if done.returncode != 0:
        raise ClaudeInstallError(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )


def shadow_sdk(directory: Path) -> Path:
    """A `claude_agent_sdk` package without a bundled CLI in ``directory``: put it first on
    PYTHONPATH and the plugin's search for the bundled CLI finds nothing (as after
    `pip install pytest-acceptance` without the extra). Returns ``directory``."""
    package = directory / "claude_agent_sdk"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A stand-in: no bundled CLI here."""\n')
    return directory


def main(argv: list[str]) -> int:
    if argv == ["install"]:
        try:
            print(ensure_claude())
        except ClaudeInstallError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if argv == ["version"]:
        print(CLAUDE_CODE_VERSION)
        return 0
    print("usage: python tests/support/claude_cli.py install | version", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
