"""Install and locate the pinned Claude Code CLI that the real-CLI tests drive.

`python tests/support/claude_cli.py install` installs it when missing and prints the binary path
(.ci/run calls this); `python tests/support/claude_cli.py version` prints the pin.
The CLI is a hard requirement of the test suite: when it cannot be installed this fails
with the reason and the next step, it never lets the tests skip.
"""

from __future__ import annotations

import fcntl
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The one pin: transcript format and hook payloads change between releases.
CLAUDE_CODE_VERSION = "2.1.328"
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_DIR_VARIABLE = "PYTEST_ACCEPTANCE_CLAUDE_DIR"
NPM_TIMEOUT_SECONDS = 900


class ClaudeInstallError(RuntimeError):
    """The pinned CLI is not there and could not be installed; the message says why."""


def install_dir() -> Path:
    configured = os.environ.get(INSTALL_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "pytest-acceptance" / f"claude-code-{CLAUDE_CODE_VERSION}"


def platform_package() -> str:
    """The npm package holding the native binary for this machine (npm 11 skips postinstall,
    so the `claude` of node_modules/.bin is only a placeholder)."""
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or arch is None:
        raise ClaudeInstallError(
            f"no Claude Code binary package for {platform.system()} {platform.machine()}: "
            "the real-CLI tests need Linux or macOS on x86_64 or arm64"
        )
    return f"{PACKAGE}-{system}-{arch}"


def binary_path(root: Path | None = None) -> Path:
    root = install_dir() if root is None else root
    return root / "node_modules" / Path(*platform_package().split("/")) / "claude"


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


@contextmanager
def _install_lock(root: Path) -> Iterator[None]:
    # xdist workers may all call ensure_claude() at once: one installs, the others wait.
    root.parent.mkdir(parents=True, exist_ok=True)
    lock_path = root.parent / f".{root.name}.lock"
    with lock_path.open("w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _npm_install(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    command = [
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--save-exact",
        f"{PACKAGE}@{CLAUDE_CODE_VERSION}",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as error:
        raise ClaudeInstallError(
            "npm is not on PATH: install Node.js with npm, then run "
            "`python tests/support/claude_cli.py install`"
        ) from error
    except subprocess.TimeoutExpired as error:
        raise ClaudeInstallError(
            f"`{' '.join(command)}` in {root} took more than {NPM_TIMEOUT_SECONDS} s"
        ) from error
    if done.returncode != 0:
        raise ClaudeInstallError(
            f"`{' '.join(command)}` in {root} failed (exit {done.returncode}):\n"
            f"{done.stderr[-3000:]}"
        )


def _check_version(binary: Path) -> Path:
    version = installed_version(binary)
    if version != CLAUDE_CODE_VERSION:
        raise ClaudeInstallError(
            f"{binary} reports version {version!r}, the tests pin {CLAUDE_CODE_VERSION}: "
            f"remove {binary.parents[3]} (or point {INSTALL_DIR_VARIABLE} elsewhere) and run "
            "`python tests/support/claude_cli.py install`"
        )
    return binary


def installed_claude() -> Path:
    """The pinned `claude` binary when `install` put it there; never downloads (the tests
    must not fetch 357 MB of npm packages silently in the middle of a run)."""
    binary = binary_path()
    if installed_version(binary) != CLAUDE_CODE_VERSION:
        raise ClaudeInstallError(
            f"Claude Code {CLAUDE_CODE_VERSION} is not installed in {install_dir()}: run "
            "`.venv/bin/python tests/support/claude_cli.py install` first (CONTRIBUTING; it needs "
            "Node.js with npm and downloads about 360 MB)"
        )
    return binary


def ensure_claude() -> Path:
    """The real pinned `claude` binary, installed with npm first when it is missing."""
    root = install_dir()
    binary = binary_path(root)
    if installed_version(binary) == CLAUDE_CODE_VERSION:
        return binary
    with _install_lock(root):
        if installed_version(binary) != CLAUDE_CODE_VERSION:
            _npm_install(root)
        if not binary.is_file():
            raise ClaudeInstallError(
                f"npm installed {PACKAGE}@{CLAUDE_CODE_VERSION} in {root} but {binary} is "
                f"missing: npm skipped the optional package {platform_package()}; check "
                "`npm config get omit` and the npm log"
            )
        return _check_version(binary)


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
