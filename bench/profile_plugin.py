"""Profile every process of a pytest run, the xdist controller and each worker, with cProfile.

Usage (the workers inherit ``-p`` and the environment)::

    BENCH_PROFILE=/tmp/prof PYTHONPATH=bench pytest -p profile_plugin --acceptance s.md -n 2
    python -m pstats /tmp/prof/controller.prof   # or gw0.prof, gw1.prof

Each process writes ``<name>.prof`` when pytest unconfigures it; the profile starts when this
plugin is imported (after pytest's own start-up, which both sides of a comparison share).
"""

from __future__ import annotations

import cProfile
import os
from pathlib import Path

import pytest

_DIRECTORY = os.environ.get("BENCH_PROFILE")
_PROFILE = cProfile.Profile() if _DIRECTORY else None
if _PROFILE is not None:
    _PROFILE.enable()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _PROFILE is None or _DIRECTORY is None:
        return
    _PROFILE.disable()
    worker = getattr(config, "workerinput", {}).get("workerid", "controller")
    Path(_DIRECTORY).mkdir(parents=True, exist_ok=True)
    _PROFILE.dump_stats(str(Path(_DIRECTORY) / f"{worker}.prof"))
