"""Where the Claude Code CLI comes from: an explicit path, else the CLI bundled in an
installed claude-agent-sdk (found without importing the SDK), else `claude` on PATH; and
reading what an agent reports about its cost, which is input like any answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.agent.backends import (
    ClaudeNotFound,
    bundled_claude,
    claude_usage,
    find_claude,
    reported_usage,
)
from pytest_acceptance.agent.prompt import MalformedVerdict


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 2.1.328\n")
    path.chmod(0o755)
    return path


def installed_sdk(site: Path, bundled: bool = True) -> Path:
    """A claude_agent_sdk package that fails when imported: finding its CLI must not."""
    package = site / "claude_agent_sdk"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the SDK was imported')\n")
    if bundled:
        executable(package / "_bundled" / "claude")
    return package


def test_the_bundled_cli_is_found_without_importing_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = installed_sdk(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PATH", str(executable(tmp_path / "bin" / "claude").parent))
    assert find_claude(None) == package / "_bundled" / "claude"  # before PATH's
    assert "claude_agent_sdk" not in sys.modules


def test_an_explicit_path_wins_over_the_bundled_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed_sdk(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    mine = executable(tmp_path / "mine" / "claude")
    assert find_claude(str(mine)) == mine.resolve()


def test_an_explicit_path_that_is_not_an_executable_is_named(tmp_path: Path) -> None:
    (tmp_path / "claude").write_text("not executable")
    with pytest.raises(ClaudeNotFound, match=r"claude \(given\) is not an executable file"):
        find_claude(str(tmp_path / "claude"))


def test_without_a_bundled_cli_claude_on_path_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed_sdk(tmp_path / "site", bundled=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    on_path = executable(tmp_path / "bin" / "claude")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_claude(None) == on_path


def test_with_no_cli_anywhere_the_error_names_each_place_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = installed_sdk(tmp_path / "site", bundled=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ClaudeNotFound) as raised:
        find_claude(None)
    assert str(raised.value) == (
        f"{package / '_bundled' / 'claude'} (of the installed claude-agent-sdk) is missing or "
        "not executable; `claude` is not on PATH"
    )
    assert bundled_claude() == package / "_bundled" / "claude"


# --- what an agent reports about its cost is input too ---------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300)
    | st.floats()
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=10,
)
USAGE_KEYS = st.sampled_from(["cost_usd", "input_tokens", "output_tokens", "turns", "other"])


@given(st.dictionaries(USAGE_KEYS, JSON) | JSON)
def test_a_reported_usage_is_numbers_of_at_least_zero_or_an_off_contract_answer(
    usage: Any,
) -> None:
    try:
        found = reported_usage({"usage": usage})
    except MalformedVerdict:
        return
    assert min(found.cost_usd, found.input_tokens, found.output_tokens, found.turns) >= 0
    assert all(isinstance(n, int) for n in (found.input_tokens, found.output_tokens))


@given(JSON)
def test_the_clis_result_never_breaks_reading_its_usage(result: Any) -> None:
    usage = claude_usage({"total_cost_usd": result, "usage": result, "num_turns": result})
    assert min(usage.cost_usd, usage.input_tokens, usage.output_tokens, usage.turns) >= 0
