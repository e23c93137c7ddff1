"""The opt-in agent verdict cache: what invalidates an entry and what is never stored."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from pytest_acceptance.agent.verdict_cache import VerdictCache, cache_key
from pytest_acceptance.model import Criterion, Issue, Location, Method, Result, Status

CONFIG = {"backend": "command", "argv": ["judge"], "model": None, "prompt_version": 1}
PASSED = Result(Status.PASSED, message="holds")
FAILED = Result(Status.FAILED, issues=(Issue("src/a.py:1", "x", "y"),), message="does not")


def criterion(tmp_path: Path) -> Criterion:
    return Criterion(
        id="AC-1",
        title="Errors",
        method=Method.SUBAGENT,
        location=Location(tmp_path / "spec.md", 10),
        description="AppError only.",
        checks=("no raw Error()",),
    )


def test_a_pass_is_reused_only_on_the_same_fingerprint(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    key = cache_key(criterion(tmp_path), CONFIG)
    cache.store(key, "git:one", PASSED)
    hit = cache.lookup(key, "git:one")
    assert hit is not None and hit.status is Status.PASSED and hit.message == "holds"
    assert cache.lookup(key, "git:two") is None


def test_a_fail_is_never_stored_and_forgets_an_earlier_pass(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    key = cache_key(criterion(tmp_path), CONFIG)
    cache.store(key, "git:one", PASSED)
    cache.store(key, "git:one", FAILED)
    assert cache.lookup(key, "git:one") is None
    assert list(cache.directory.iterdir()) == []


def test_criterion_text_and_agent_configuration_are_in_the_key(tmp_path: Path) -> None:
    base = criterion(tmp_path)
    key = cache_key(base, CONFIG)
    assert cache_key(dataclasses.replace(base, checks=("other",)), CONFIG) != key
    assert cache_key(dataclasses.replace(base, description="changed"), CONFIG) != key
    assert cache_key(base, {**CONFIG, "model": "opus"}) != key
    # moving the criterion within the spec asks nothing new
    moved = dataclasses.replace(base, location=Location(tmp_path / "spec.md", 99))
    assert cache_key(moved, CONFIG) == key


def test_an_unreadable_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.directory.mkdir(parents=True)
    (cache.directory / "a.json").write_text("{not json")
    (cache.directory / "b.json").write_text("[1, 2]")
    (cache.directory / "c.json").write_text('{"schema": "other", "fingerprint": "git:one"}')
    assert [cache.lookup(key, "git:one") for key in "abc"] == [None, None, None]


def test_the_cache_is_ignored_by_git_so_it_never_changes_the_tree(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    VerdictCache(tmp_path).store("k", "git:one", PASSED)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
