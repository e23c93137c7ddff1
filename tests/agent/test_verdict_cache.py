"""The opt-in agent verdict cache: what invalidates an entry and what is never stored."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import criterion as spec_criterion
from support.specs import spec

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


# A command judge that passes and logs the criterion it judged (outside the tree).
LOGGING_JUDGE = """
import json, os, sys
sys.stdin.read()
with open(os.environ["JUDGE_LOG"], "a") as log:
    log.write(os.environ["PYTEST_ACCEPTANCE_CRITERION"] + "\\n")
print(json.dumps({"status": "pass", "summary": "holds", "issues": []}))
"""


def agent_spec(second_check: str) -> str:
    return spec(
        spec_criterion("AC-1", "Errors", method="subagent", checks=["no raw Error()"]),
        spec_criterion("AC-2", "Logs", method="subagent", checks=[second_check]),
    )


def test_editing_one_criterion_invalidates_its_entry_and_no_other(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = tmp_path_factory.mktemp("judge")
    (outside / "judge.py").write_text(LOGGING_JUDGE)
    log = outside / "calls.log"
    monkeypatch.setenv("JUDGE_LOG", str(log))
    pytester.makeini(
        f"[pytest]\nacceptance_agent_command = {sys.executable} {outside / 'judge.py'}"
    )
    pytester.makefile(".md", spec=agent_spec("log calls pass a dict"))
    # pytester keeps each run's output and temp folder in the project: not its files
    (pytester.path / ".gitignore").write_text("stdout\nstderr\nrunpytest-*\n")
    make_repo_here(pytester.path)

    def judged() -> list[str]:
        args = ("--acceptance", "spec.md", "--acceptance-cache", "-p", "no:cacheprovider")
        before = log.read_text().split() if log.exists() else []
        assert pytester.runpytest_subprocess(*args).ret == 0
        return sorted(log.read_text().split()[len(before) :])

    assert judged() == ["AC-1", "AC-2"]
    assert judged() == []
    pytester.makefile(".md", spec=agent_spec("log calls pass a mapping"))
    assert judged() == ["AC-2"]  # AC-1's text, agent and the rest of the tree are unchanged
    (pytester.path / "src.py").write_text("raise Error()\n")
    assert judged() == ["AC-1", "AC-2"]  # any other file of the tree invalidates them all


def make_repo_here(path: Path) -> None:
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command],
            cwd=path,
            check=True,
            capture_output=True,
        )
