"""The environment digests the plugin's hooks keep across /implements
(pytest_acceptance/claude/environment_digests.py), carried from test to test of one process
as they are from session to session of a user's: each test's plugin state starts with what
the tests before it kept. A pin still reads every file whose stat key changed
(tests/hooks/test_environment_digests.py)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from pytest_acceptance.claude import environment_digests

# Where CLI 2.1.328 keeps the state of a plugin loaded with --plugin-dir ($CLAUDE_PLUGIN_DATA).
INLINE_PLUGIN_STATE = Path(".claude", "plugins", "data", "pytest-acceptance-inline")


@contextlib.contextmanager
def carried(kept: Path, plugin_state: Path) -> Iterator[None]:
    """``plugin_state`` starts with the digests in ``kept``; what the test's hooks kept
    goes back there."""
    folder = plugin_state / environment_digests.FOLDER
    shutil.copytree(kept, folder)
    yield
    for file in folder.glob("*.json"):
        shutil.copyfile(file, kept / file.name)
