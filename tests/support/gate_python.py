"""The interpreter the tests' gates verify with: a virtualenv holding only what a user's gate
needs (this checkout, installed editable, and its dependencies at the pinned versions), not
the test environment's dozen pytest plugins.

Every pytest a gate run starts (its criteria's, their xdist workers') loads its
interpreter's plugins by entry point, as a user's does: with the test environment's that
start costs about 1 s on this 2-core machine, without them 0.3 s, and a hook test starts
several. The tests still run their criteria through a real installed pytest; a test about
the gate beside other plugins builds its own environment.

Built once per checkout at ``.venv-gate/`` (ignored by git) by the test environment's own
pip, at the start of a test run, under a lock; rebuilt when what it was built from changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".venv-gate"
PYTHON = FOLDER / "bin" / "python"
EXECUTABLE = str(PYTHON)  # as ACCEPTANCE_GATE_PYTHON names it
# Its packages, for an environment a test builds to reach them (through a .pth file).
SITE_PACKAGES = (
    FOLDER / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
)
BIN = PYTHON.parent
PIP_TIMEOUT_SECONDS = 600


class GatePythonError(RuntimeError):
    """The gate's interpreter could not be built; the message says why."""


def _built_from() -> str:
    """What the environment is made of: this interpreter, the pins and the dependencies."""
    parts = [sys.version, str(Path(sys.base_prefix).resolve()), str(ROOT)]
    for name in ("constraints/test.txt", "pyproject.toml"):
        parts.append(_digest((ROOT / name).read_text()))
    return "\n".join(parts)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure() -> Path:
    """The gate's interpreter, built first when it is missing or stale."""
    key = _built_from()
    stamp = FOLDER / "built-from"
    lock_file = Path(tempfile.gettempdir(), f"pytest-acceptance-gate-python-{_digest(str(ROOT))}")
    with open(lock_file, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text() == key:
            return PYTHON
        shutil.rmtree(FOLDER, ignore_errors=True)
        _run([sys.executable, "-m", "venv", "--without-pip", str(FOLDER)])
        _run(
            [
                *(sys.executable, "-m", "pip", "--python", str(PYTHON), "install"),
                *("--quiet", "--disable-pip-version-check"),
                *("-c", str(ROOT / "constraints" / "test.txt"), "-e", str(ROOT)),
            ]
        )
        stamp.write_text(key)
    return PYTHON


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise GatePythonError(f"`{' '.join(command)}` took over {PIP_TIMEOUT_SECONDS} s") from error
    if done.returncode != 0:
        raise GatePythonError(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
