"""Hypothesis profiles for the fuzz suite.

``ci`` (the default) runs a few seconds per test; ``long`` is for a hand run hunting for
crashes: ``HYPOTHESIS_PROFILE=long .venv/bin/pytest tests/fuzz -q``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci", max_examples=150, deadline=None, suppress_health_check=_QUIET, print_blob=True
)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=_QUIET, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
