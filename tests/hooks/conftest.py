"""Every hook test gets its own plugin state folder ($CLAUDE_PLUGIN_DATA of its hook runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hook_transcripts
import pytest
from hook_transcripts import VALUE_SPEC, git


@pytest.fixture(autouse=True)
def plugin_state(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "plugin-data"
    hook_transcripts.PLUGIN_DATA["current"] = folder
    yield folder
    hook_transcripts.PLUGIN_DATA.pop("current", None)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with the spec and a value that does not meet it yet."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "agent@example.com")
    git(repo, "config", "user.name", "Agent")
    (repo / "spec.md").write_text(VALUE_SPEC)
    (repo / "value.txt").write_text("1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spec")
    return repo
