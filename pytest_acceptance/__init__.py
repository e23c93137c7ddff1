"""pytest-acceptance: the acceptance criteria of a markdown spec, run as pytest items.

Two programs share the package: the pytest plugin (plugin.py wires its stages: spec/ ->
collect.py -> run/, agent/ -> verdict/ -> evidence/, store.py) and the gate the agents'
hooks run (gate/, its table of what it trusts in gate/pins/, with tree/ and integrity/:
standard library only, Python 3.8). This
module stays import-free so that the hooks, which run without site-packages, can import
those folders without pulling in pytest. docs/architecture.md maps both.
"""

from __future__ import annotations

__version__ = "0.1.0"
