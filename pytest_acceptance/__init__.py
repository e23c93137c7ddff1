"""pytest-acceptance: the acceptance criteria of a markdown spec, run as pytest items.

The pipeline, one module per stage: parse -> collect -> run (bash / agent / manual)
-> record -> decide. This module stays import-free so that the stdlib-only hooks can
import ``pytest_acceptance.tree.fingerprint`` without pulling in pytest.
"""

from __future__ import annotations

__version__ = "0.1.0"
