"""Optional system tools some tests need (Chromium, cargo, go, node): such a test skips with
the reason where the tool is missing or does not run, and fails instead under ``CI=true``,
where the set-up installs every tool and a skip would hide a broken one."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

PROBE_TIMEOUT = 60.0  # seconds: a first start of a browser or a toolchain may be slow


def in_ci() -> bool:
    """``CI=true`` (GitHub Actions, GitLab, most CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def require_tool(*names: str, probe: tuple[str, ...] = ("--version",), why: str = "") -> str:
    """The path of the first of ``names`` on PATH that runs (``<tool> --version`` exits 0);
    otherwise a skip naming what is wrong, or a failure under CI."""
    problem = ""
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        problem = _does_not_run(path, probe)
        if not problem:
            return path
    if not problem:
        problem = f"{' or '.join(names)} is not on PATH"
    reason = f"{problem}{f' ({why})' if why else ''}"
    if in_ci():
        pytest.fail(f"{reason}: CI=true, so the set-up must provide it", pytrace=False)
    pytest.skip(reason)


def _does_not_run(path: str, probe: tuple[str, ...]) -> str:
    """Why ``path`` does not run ("" when ``path probe`` exits 0)."""
    try:
        done = subprocess.run(
            [path, *probe],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{path} does not run ({error})"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        first = f": {said[0]}" if said else ""
        return f"{path} {' '.join(probe)} exits {done.returncode}{first}"
    return ""
