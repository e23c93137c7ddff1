"""Checks every host shares, each made by doing: the hooks' launcher run as the agent runs
it, a file written into the state folder and removed, the isolation level probed as the
hooks probe it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pytest_acceptance.doctor import FAIL, OK, Check
from pytest_acceptance.gate import isolation

# What the launcher must be able to run: the hooks' own package, under python3 -E -S.
_LAUNCHER_PROBE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import pytest_acceptance.gate.hook_io; "
    "print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"
)
PYTHON_FIX = (
    "put a python3 >= 3.8 first on the PATH the agent starts with, outside the project, "
    "neither a virtualenv's nor a version manager's shim"
)


def launcher_python(host: str, root: Path, project: Path, env: Mapping[str, str]) -> Check:
    """Run the plugin's hooks launcher as the agent does (from the project, with this PATH):
    the python3 it picks must run the hooks' package."""
    launcher = root / "hooks" / "python3"
    try:
        done = subprocess.run(
            ["/bin/sh", str(launcher), "-B", "-c", _LAUNCHER_PROBE, str(root)],
            cwd=project if project.is_dir() else None,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        found = f"{launcher} did not run ({error})"
        return Check(host, "hooks' python3", FAIL, found, PYTHON_FIX)
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        found = f"the launcher's python3 fails: {said}"
        return Check(host, "hooks' python3", FAIL, found, PYTHON_FIX)
    return Check(host, "hooks' python3", OK, f"{lines[0]} (Python {lines[1]})")


def writable_folder(host: str, folder: Path) -> Check:
    """Write into the state folder (or, before its first use, into the folder it will be
    made in), take the write back, and give the folder its times back."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    fix = f"make {existing} writable by your user (its owner, its mode, a read-only mount)"
    try:
        times = existing.stat()
        if existing == folder:
            handle, name = tempfile.mkstemp(prefix=".doctor-", dir=folder)
            os.close(handle)
            os.unlink(name)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".doctor-", dir=existing))
        os.utime(existing, ns=(times.st_atime_ns, times.st_mtime_ns))
    except OSError as error:
        return Check(host, "state folder", FAIL, f"{existing} is not writable ({error})", fix)
    return Check(host, "state folder", OK, f"{folder} writable")


def isolation_level(host: str) -> Check:
    level = isolation.current()
    found = f"{level.name}: {level.gives} ({isolation.why()})"
    if level.warning is None:
        return Check(host, "gate run isolation", OK, found)
    return Check(host, "gate run isolation", FAIL, found, level.fix)
