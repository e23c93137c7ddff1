"""What the plugin's hooks keep across /implements, carried from test to test of one process
as it is from session to session of a user's: each test's plugin state starts with what the
tests before it kept. The environment digests (pytest_acceptance/gate/environment_digests.py):
a pin still reads every file whose stat key changed (tests/hooks/test_environment_digests.py).
The gate's bytecode folders (pytest_acceptance/gate/gate_bytecode.py), moved whole with
their records, so their stat keys stay the ones the gate recorded: a folder changed since is
rebuilt (tests/hooks/attacks/test_bytecode.py)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from pytest_acceptance.gate import environment_digests, gate_bytecode

# Where CLI 2.1.328 keeps the state of a plugin loaded with --plugin-dir ($CLAUDE_PLUGIN_DATA).
INLINE_PLUGIN_STATE = Path(".claude", "plugins", "data", "pytest-acceptance-inline")


# The plugin states that hold the kept bytecode folders now, innermost last: a test's CLI
# session (claude_home) carries them on from the test's own plugin state (plugin_state in
# tests/hooks), which took them from the kept folder, and gives them back in that order.
_holders: list[tuple[Path, Path]] = []  # (kept folder, plugin state)


@contextlib.contextmanager
def carried(kept: Path, plugin_state: Path) -> Iterator[None]:
    """``plugin_state`` starts with the digests and bytecode folders in ``kept`` (the bytecode
    folders from the plugin state holding them, when another carry of this test has them);
    what the test's hooks kept goes back there."""
    folder = plugin_state / environment_digests.FOLDER
    shutil.copytree(kept, folder, ignore=shutil.ignore_patterns(gate_bytecode.STORE))
    giver = next((state for source, state in reversed(_holders) if source == kept), kept)
    store = giver / gate_bytecode.STORE
    if store.is_dir():
        store.rename(plugin_state / gate_bytecode.STORE)
    _holders.append((kept, plugin_state))
    try:
        yield
    finally:
        _holders.pop()
    for file in folder.glob("*.json"):
        shutil.copyfile(file, kept / file.name)
    if (plugin_state / gate_bytecode.STORE).is_dir() and not store.exists():
        gate_bytecode.remove_changed(plugin_state / gate_bytecode.STORE)  # an attack's plant
        (plugin_state / gate_bytecode.STORE).rename(store)
