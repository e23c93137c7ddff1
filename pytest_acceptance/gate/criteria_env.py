"""The environment the gate's run hands its criteria's commands, apart from its own.

The gate starts one pytest; that pytest runs the criteria's commands. Some variables are
for those commands only, never for the gate's pytest (the witness's reporter must not load
into it, the criteria's Pythons must not read its bytecode), so the gate sets them under
other names and the bash runner (run/bash.py) renames them for each command:

- ``ACCEPTANCE_CRITERIA_PYCACHEPREFIX`` becomes ``PYTHONPYCACHEPREFIX``;
- ``ACCEPTANCE_CRITERIA_ENV_<NAME>`` becomes ``<NAME>``.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

from typing import Mapping

CRITERIA_PYCACHE_VARIABLE = "ACCEPTANCE_CRITERIA_PYCACHEPREFIX"
CRITERIA_ENV_PREFIX = "ACCEPTANCE_CRITERIA_ENV_"


def criteria_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as a criterion's command gets it: the criteria-only variables renamed."""
    out = dict(env)
    pycache = out.pop(CRITERIA_PYCACHE_VARIABLE, "")
    if pycache:
        out["PYTHONPYCACHEPREFIX"] = pycache
    for name in [name for name in out if name.startswith(CRITERIA_ENV_PREFIX)]:
        out[name[len(CRITERIA_ENV_PREFIX) :]] = out.pop(name)
    return out
