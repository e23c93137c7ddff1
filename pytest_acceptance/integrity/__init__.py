"""Criterion integrity: the checks a bash criterion runs are part of the criterion.

Standard library only and Python 3.8 compatible (the hooks import it under ``python3 -S``).

:func:`snapshot` is taken when a flow starts: every file a criterion's command names,
directly or through a folder, a script, an npm script or a make recipe, is pinned, with an
inventory per test (Python definitions by identity, assertions, skip markers, parametrized
cases) or by content hash (configuration, conftest files, data beside the tests, scripts).
:func:`weakened` compares the tree at /done with that pin and returns one :class:`Finding`
per change a human must decide on. What it reads, how, and what it cannot see are in
docs/threat-model.md ("Criterion integrity").

One module per role: :mod:`.core` (snapshot, weakened), :mod:`.findings` (the pin's format,
:class:`Finding`, comparing inventories), :mod:`.limits`, :mod:`.files` (reading, naming
test files), :mod:`.python`, :mod:`.javascript`, :mod:`.go` and :mod:`.inventory` (what a
file holds), :mod:`.commands` and :mod:`.make` (what a command runs), :mod:`.named` (which
files a command names), :mod:`.pins` and :mod:`.config` (what is pinned by hash),
:mod:`.data` (data files beside the tests), :mod:`.import_time` (code a module runs on
import).
"""

from __future__ import annotations

from .core import snapshot, weakened
from .findings import (
    FILE_LEVEL,
    HASHED,
    IMPORTED_WITH,
    MAKE_READS,
    PYTEST_LOADS,
    PYTEST_READS,
    RUNNER_READS,
    RUNS,
    SCHEMA,
    TESTS_IMPORT,
    TESTS_READ,
    VERSION,
    WAY_OUT,
    Finding,
    compare_inventories,
)
from .inventory import inventory_of
from .limits import MAX_FILE_BYTES, MAX_FILES

__all__ = [
    "FILE_LEVEL",
    "HASHED",
    "IMPORTED_WITH",
    "MAKE_READS",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "PYTEST_LOADS",
    "PYTEST_READS",
    "RUNNER_READS",
    "RUNS",
    "SCHEMA",
    "TESTS_IMPORT",
    "TESTS_READ",
    "VERSION",
    "WAY_OUT",
    "Finding",
    "compare_inventories",
    "inventory_of",
    "snapshot",
    "weakened",
]
