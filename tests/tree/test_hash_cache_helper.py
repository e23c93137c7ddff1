"""The hash cache's stat helper (hash_cache._StatHelper): on a large cache a forked child
checks a share of the stat keys while the fingerprinting process checks the rest. These tests
use real forks, pipes and signals on real git repositories, with the helper's threshold
lowered so that a few dozen files get one: a change in either share is seen, and a helper
that dies, hangs past the deadline, or is left running by a failing fingerprint never
decides anything and is always reaped."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.repos import git, make_repo, rewrite_same_size_and_mtime

from pytest_acceptance.tree import hash_cache
from pytest_acceptance.tree.fingerprint import FingerprintError, tree_fingerprint
from pytest_acceptance.tree.hash_cache import HashCache

FILES = 40
WINDOW = 0.05


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository of FILES + 3 files, old enough to be cached; a helper from 10
    cached entries on."""
    root = make_repo(tmp_path)
    for number in range(FILES):
        (root / "src" / f"module{number:02}.py").write_text(f"VALUE = {number:02}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "modules")
    monkeypatch.setattr(hash_cache, "RACY_SECONDS", WINDOW)
    monkeypatch.setattr(HashCache, "HELPER_AT", 10)
    # Other tests of this process may have left threads behind (in-process pytest runs with
    # plugins that start them); counted here are the threads this module's tests start.
    baseline = threading.active_count() - 1
    monkeypatch.setattr(hash_cache.threading, "active_count", lambda: _count() - baseline)
    time.sleep(WINDOW * 3)
    return root


_count = threading.active_count


def on_each_helper(
    monkeypatch: pytest.MonkeyPatch, action: Callable[[int], None] = lambda pid: None
) -> list[int]:
    """Runs `action(pid)` on each real helper right after it is forked; returns their pids."""
    pids: list[int] = []
    start = hash_cache._StatHelper.start.__func__  # type: ignore[attr-defined]

    def started(cls: type, items: hash_cache.Items, limits: object) -> object:
        helper = start(cls, items, limits)
        if helper is not None:
            pids.append(helper.pid)
            action(helper.pid)
        return helper

    monkeypatch.setattr(hash_cache._StatHelper, "start", classmethod(started))
    return pids


def in_each_helper(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Runs `action()` inside each helper (the forked child), before it checks its share."""
    parent = os.getpid()
    sizes = hash_cache._sizes

    def acting(items: hash_cache.Items, limits: object) -> object:
        if os.getpid() != parent:
            action()
        return sizes(items, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(hash_cache, "_sizes", acting)


def stop_each_helper_before_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each helper sends itself SIGSTOP before checking its share: whatever the machine's
    load, it has not answered when the test acts on it (or never will, if nobody does)."""
    in_each_helper(monkeypatch, lambda: os.kill(os.getpid(), signal.SIGSTOP))


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of every helper started from now on."""
    return on_each_helper(monkeypatch)


def reaped(pid: int) -> bool:
    """True once `pid` is no child of ours any more (no zombie left behind)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def filled(repo: Path, cache_file: Path) -> str:
    """The cold fingerprint, after a first cached call filled `cache_file`."""
    tree_fingerprint(str(repo), cache=HashCache(cache_file))
    return tree_fingerprint(str(repo))


def test_a_helper_checks_its_share_and_the_warm_fingerprint_is_the_cold_one(
    repo: Path, tmp_path: Path, helpers: list[int]
) -> None:
    cold = filled(repo, tmp_path / "hashes")
    cache = HashCache(tmp_path / "hashes")
    assert tree_fingerprint(str(repo), cache=cache) == cold
    assert cache.hits == FILES + 3  # nothing read again
    assert 0 < cache.helped < FILES + 3  # the helper checked a share, this process the rest
    assert helpers and all(reaped(pid) for pid in helpers)


@pytest.mark.parametrize("position", [0, -1], ids=["own share", "helper's share"])
def test_a_same_size_rewrite_in_either_share_is_read_again(
    repo: Path, tmp_path: Path, position: int
) -> None:
    """The cache's order decides the shares: this process checks the first entries, the
    helper the last ones. A rewrite that keeps size and mtime shows in both."""
    filled(repo, tmp_path / "hashes")
    path = list(HashCache(tmp_path / "hashes").entries)[position]
    before = tree_fingerprint(str(repo))
    content = Path(os.fsdecode(path)).read_bytes()
    rewrite_same_size_and_mtime(Path(os.fsdecode(path)), content.decode().swapcase())
    cache = HashCache(tmp_path / "hashes")
    after = tree_fingerprint(str(repo), cache=cache)
    assert after != before
    assert after == tree_fingerprint(str(repo))
    assert cache.helped > 0


def test_a_helper_killed_before_it_answers_leaves_its_share_to_be_read_again(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = filled(repo, tmp_path / "hashes")
    stop_each_helper_before_it_answers(monkeypatch)
    pids = on_each_helper(monkeypatch, lambda pid: os.kill(pid, signal.SIGKILL))
    cache = HashCache(tmp_path / "hashes")
    assert tree_fingerprint(str(repo), cache=cache) == cold
    assert pids and all(reaped(pid) for pid in pids)
    assert cache.helped == 0
    assert 0 < cache.hits < FILES + 3  # only this process's share was reused


def test_a_helper_that_hangs_fails_the_fingerprint_at_its_deadline_and_is_reaped(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filled(repo, tmp_path / "hashes")
    stop_each_helper_before_it_answers(monkeypatch)
    pids = on_each_helper(monkeypatch)
    started = time.monotonic()
    with pytest.raises(FingerprintError, match="time"):
        tree_fingerprint(str(repo), timeout=2.0, cache=HashCache(tmp_path / "hashes"))
    assert time.monotonic() - started < 30
    assert pids and all(reaped(pid) for pid in pids)


def test_a_fingerprint_that_fails_while_the_helper_runs_reaps_it(
    repo: Path, tmp_path: Path, helpers: list[int]
) -> None:
    """git fails after the helper was forked (a corrupt index): the error is the caller's,
    the helper is stopped and reaped on the way out."""
    filled(repo, tmp_path / "hashes")
    (repo / ".git" / "index").write_bytes(b"not an index")
    with pytest.raises(FingerprintError, match="git"):
        tree_fingerprint(str(repo), cache=HashCache(tmp_path / "hashes"))
    assert helpers and all(reaped(pid) for pid in helpers)


def test_no_helper_is_forked_while_another_thread_runs(
    repo: Path, tmp_path: Path, helpers: list[int]
) -> None:
    """A fork copies the locks other threads hold: with one running, the cache checks every
    key itself."""
    cold = filled(repo, tmp_path / "hashes")
    helpers.clear()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        cache = HashCache(tmp_path / "hashes")
        assert tree_fingerprint(str(repo), cache=cache) == cold
    finally:
        release.set()
        other.join()
    assert (helpers, cache.helped, cache.hits) == ([], 0, FILES + 3)


def test_a_small_cache_gets_no_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helpers: list[int]
) -> None:
    repo = make_repo(tmp_path)
    monkeypatch.setattr(hash_cache, "RACY_SECONDS", WINDOW)
    time.sleep(WINDOW * 3)
    filled(repo, tmp_path / "hashes")
    cache = HashCache(tmp_path / "hashes")
    tree_fingerprint(str(repo), cache=cache)
    assert (helpers, cache.helped, cache.hits) == ([], 0, 3)


def test_the_helper_never_runs_the_callers_code(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever happens in the helper, it exits there: an error in its share ends it with a
    failure status (its share is read again), never by returning into the caller."""
    cold = filled(repo, tmp_path / "hashes")
    parent = os.getpid()

    def fail() -> None:
        raise RuntimeError("the helper failed")

    in_each_helper(monkeypatch, fail)
    cache = HashCache(tmp_path / "hashes")
    assert tree_fingerprint(str(repo), cache=cache) == cold
    assert os.getpid() == parent
    assert cache.helped == 0
