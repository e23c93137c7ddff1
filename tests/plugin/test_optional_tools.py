"""Tests that need an optional system tool (Chromium, cargo, go, node) skip with the reason
where it is missing or does not run, and fail under CI=true (tests/support/tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tools import require_tool


def tool(folder: Path, name: str, exit_code: int, says: str = "") -> None:
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{says}' >&2\nexit {exit_code}\n")
    script.chmod(0o755)


@pytest.fixture
def path_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    monkeypatch.delenv("CI", raising=False)
    return folder


def test_a_missing_tool_skips_with_the_reason(path_dir: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"no-such-tool is not on PATH \(needed\)"):
        require_tool("no-such-tool", why="needed")


def test_a_tool_that_does_not_run_skips_with_what_it_said(path_dir: Path) -> None:
    tool(path_dir, "cargo", 1, "rustup could not choose a version of cargo to run")
    with pytest.raises(pytest.skip.Exception, match=r"exits 1: rustup could not choose"):
        require_tool("cargo")


def test_the_first_of_the_names_that_runs_is_returned(path_dir: Path) -> None:
    tool(path_dir, "broken-browser", 1)
    tool(path_dir, "other-browser", 0)
    found = require_tool("missing-browser", "broken-browser", "other-browser")
    assert found == str(path_dir / "other-browser")


def test_under_ci_a_missing_or_broken_tool_fails_instead(
    path_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_tool("no-such-tool")
    tool(path_dir, "go", 2)
    with pytest.raises(pytest.fail.Exception, match=r"go --version exits 2"):
        require_tool("go")
