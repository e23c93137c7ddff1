"""How the gate starts a process of its own interpreter: from an environment built from
scratch, its answer read as one JSON object. Standard library only, like every hook module.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from pytest_acceptance.gate.criteria_env import CRITERIA_PYCACHE_VARIABLE

_KEPT_ENV = ("PATH", "HOME", "LANG", "TZ", "USER", "LOGNAME")


class GateError(Exception):
    """The gate cannot verify; the message says why and what to do. It blocks."""


def probe_report(
    python: str,
    arguments: list[str],
    pycache: str,
    timeout: float,
    cwd: str | None = None,
    bytecode: str = "",
) -> dict[str, Any]:
    """The JSON object `python -I <arguments>` prints, or GateError. `pycache`: the probe's
    private folder, its bytecode kept there; with `bytecode`, read from there instead, with
    writing off."""
    prefix = ["-B", "-X", f"pycache_prefix={bytecode}"] if bytecode else []
    command = [python, "-I", *(prefix or ["-X", f"pycache_prefix={pycache}"]), *arguments]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=clean_env(python, pycache, bytecode),
            capture_output=True,
            timeout=max(1.0, timeout),
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GateError(f"{python} could not run the probe ({error})") from None
    try:
        report = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise GateError(f"{python} cannot run pytest_acceptance ({' | '.join(tail)})") from None
    if not isinstance(report, dict):
        raise GateError(f"{python}: the probe answered {report!r:.200}")
    return report


def clean_env(
    python: str, pycache: str = "", gate_bytecode: str = "", criteria_bytecode: str = ""
) -> dict[str, str]:
    """The run's environment, from scratch: nothing the agent's shell could have set.
    `pycache`: the run's private folder, so no child Python reads __pycache__; with
    `gate_bytecode`, the gate's pytest reads that instead, and its criteria's Pythons read
    `criteria_bytecode` (or `pycache`, empty)."""
    env = {key: os.environ[key] for key in _KEPT_ENV if os.environ.get(key)}
    env.update(
        {
            key: value
            for key, value in os.environ.items()
            if key.startswith(("LC_", "ANTHROPIC_")) and value
        }
    )
    folder = os.path.dirname(python)
    path = env.get("PATH", os.defpath)
    env["PATH"] = f"{folder}{os.pathsep}{path}" if folder else path
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["ACCEPTANCE_PARSE_CACHE"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # A criterion's own pytest writes no .pytest_cache into the tree: the gate files its
    # result under a fingerprint of every file, and an honest run must not change it.
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = pycache
    if pycache and gate_bytecode:  # the gate's pytest and workers read the gate's own
        env["PYTHONPYCACHEPREFIX"] = gate_bytecode
        env[CRITERIA_PYCACHE_VARIABLE] = criteria_bytecode or pycache
    if pycache:
        # The run's own temporary folder, fresh: nothing planted in /tmp is where it looks.
        env["TMPDIR"] = os.path.join(pycache, "tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
    return env
