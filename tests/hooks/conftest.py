"""Every hook test gets its own plugin state folder ($CLAUDE_PLUGIN_DATA of its hook runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hook_transcripts
import pytest


@pytest.fixture(autouse=True)
def plugin_state(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "plugin-data"
    hook_transcripts.PLUGIN_DATA["current"] = folder
    yield folder
    hook_transcripts.PLUGIN_DATA.pop("current", None)
