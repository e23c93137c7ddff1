"""The gate's hash cache (hash_cache.HashCache) on real git repositories: a warm cache gives
exactly the fingerprint of a cold run, every git trick still shows through it, a change the
stat data betray (ctime: no process can set it) is re-read, a file changed too recently is
never cached, and a garbled, hostile or unwritable cache file costs time, never correctness.

Files written by a test are seconds younger than the cache's racy window (RACY_SECONDS = 3 s):
the tests that need entries cached shrink the window and wait it out, instead of sleeping
for seconds."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.repos import TRICKS, git, make_repo, rewrite_same_size_and_mtime

from pytest_acceptance.tree import fingerprint, hash_cache
from pytest_acceptance.tree.fingerprint import tree_fingerprint
from pytest_acceptance.tree.hash_cache import HashCache

WINDOW = 0.05  # seconds: well above a coarse timestamp tick, well below a test's patience


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def short_window(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Shrinks the racy window; the returned call waits until every file written so far is
    old enough to be cached."""
    monkeypatch.setattr(hash_cache, "RACY_SECONDS", WINDOW)
    return lambda: time.sleep(WINDOW * 3)


def warm(root: Path, cache_file: Path) -> tuple[str, int]:
    """(fingerprint, files reused) of a second cached call, after a first one filled the cache."""
    tree_fingerprint(str(root), cache=HashCache(cache_file))
    cache = HashCache(cache_file)
    return tree_fingerprint(str(root), cache=cache), cache.hits


def test_a_warm_cache_reuses_every_file_and_gives_the_cold_fingerprint(
    repo: Path, tmp_path: Path, short_window: Callable[[], None]
) -> None:
    short_window()
    cold = tree_fingerprint(str(repo))
    fingerprint_, hits = warm(repo, tmp_path / "hashes")
    assert fingerprint_ == cold
    assert hits == 3  # src/app.py, tests/test_app.py, .gitignore: none read again


@pytest.mark.parametrize("trick", TRICKS, ids=lambda trick: trick.__name__)
def test_each_git_trick_shows_through_a_warm_cache(
    repo: Path,
    tmp_path: Path,
    short_window: Callable[[], None],
    trick: Callable[..., Callable[[], None]],
) -> None:
    change = trick(repo)
    short_window()
    cache_file = tmp_path / "hashes"
    before, hits = warm(repo, cache_file)
    assert hits > 0
    change()
    after = tree_fingerprint(str(repo), cache=HashCache(cache_file))
    assert after != before
    assert after == tree_fingerprint(str(repo))


def test_a_same_size_file_renamed_over_with_the_old_mtime_is_read_again(
    repo: Path, tmp_path: Path, short_window: Callable[[], None]
) -> None:
    """A new inode in the old one's place (same name, size and mtime): its stat key differs."""
    app = repo / "src" / "app.py"
    short_window()
    before, _ = warm(repo, tmp_path / "hashes")
    replacement = repo / "src" / "new.tmp"
    replacement.write_text("def answer():\n    return 24\n")
    old = app.stat()
    os.utime(replacement, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(replacement, app)
    assert tree_fingerprint(str(repo), cache=HashCache(tmp_path / "hashes")) != before


def test_a_file_changed_within_the_racy_window_is_never_cached(repo: Path, tmp_path: Path) -> None:
    """Default window: a file written just now is hashed but not kept (a second write in the
    same timestamp tick would keep its ctime); the next call reads it again."""
    fresh = repo / "src" / "fresh.py"
    fresh.write_text("VALUE = 1\n")
    cache_file = tmp_path / "hashes"
    tree_fingerprint(str(repo), cache=HashCache(cache_file))
    assert os.fsencode(fresh) not in HashCache(cache_file).entries
    rewrite_same_size_and_mtime(fresh, "VALUE = 2\n")
    assert tree_fingerprint(str(repo), cache=HashCache(cache_file)) == tree_fingerprint(str(repo))


def test_an_entry_whose_stat_key_does_not_match_is_never_used(
    repo: Path, tmp_path: Path, short_window: Callable[[], None]
) -> None:
    """A stale or forged entry (another ctime) for a file: the file is read, not believed."""
    short_window()
    cold = tree_fingerprint(str(repo))
    cache_file = tmp_path / "hashes"
    tree_fingerprint(str(repo), cache=HashCache(cache_file))
    data = cache_file.read_bytes()
    app = os.fsencode(repo / "src" / "app.py")
    start = data.index(app + b"\0") + len(app) + 1
    key_end = data.index(b"\0", start)
    *fields, ctime = data[start:key_end].split(b",")
    forged = b",".join([*fields, str(int(ctime) - 1).encode()])
    description_end = data.index(b"\0", key_end + 1)
    cache_file.write_bytes(data[:start] + forged + b"\0file:" + b"0" * 64 + data[description_end:])
    cache = HashCache(cache_file)
    assert tree_fingerprint(str(repo), cache=cache) == cold
    assert cache.hits == 2


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(garbage=st.binary(max_size=300), magic=st.booleans())
def test_a_garbled_cache_file_is_an_empty_cache(
    repo: Path, tmp_path: Path, garbage: bytes, magic: bool
) -> None:
    cache_file = tmp_path / "hashes"
    cache_file.write_bytes((HashCache.MAGIC if magic else b"") + garbage)
    assert tree_fingerprint(str(repo), cache=HashCache(cache_file)) == tree_fingerprint(str(repo))


@pytest.mark.parametrize("kind", ["fifo", "directory", "device-link", "missing-folder"])
def test_a_hostile_cache_path_neither_hangs_nor_fails(
    repo: Path, tmp_path: Path, kind: str
) -> None:
    """A FIFO in the cache's place must not block the read (nor a link to /dev/zero flood it);
    a path that cannot be written is simply not saved."""
    cache_file = tmp_path / "hashes"
    if kind == "fifo":
        os.mkfifo(cache_file)
    elif kind == "directory":
        cache_file.mkdir()
    elif kind == "device-link":
        cache_file.symlink_to("/dev/zero")
    else:
        cache_file = tmp_path / "file" / "hashes"
        (tmp_path / "file").write_text("a file where the cache folder should be")
    assert tree_fingerprint(str(repo), cache=HashCache(cache_file)) == tree_fingerprint(str(repo))


def test_a_failed_call_leaves_nothing_half_seen_behind(
    repo: Path, tmp_path: Path, short_window: Callable[[], None]
) -> None:
    """The same cache object after a call that ran out of time: it holds what the next
    complete call saw, nothing more."""
    short_window()
    cache = HashCache(tmp_path / "hashes")
    with pytest.raises(fingerprint.FingerprintError):
        tree_fingerprint(str(repo), timeout=0, cache=cache)
    (repo / "src" / "app.py").unlink()
    tree_fingerprint(str(repo), cache=cache)
    assert os.fsencode(repo / "src" / "app.py") not in HashCache(tmp_path / "hashes").entries


def test_outside_git_the_cache_is_used_too(
    tmp_path: Path, short_window: Callable[[], None]
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("one\n")
    short_window()
    cold = tree_fingerprint(str(root))
    fingerprint_, hits = warm(root, tmp_path / "hashes")
    assert (fingerprint_, hits) == (cold, 1)
    rewrite_same_size_and_mtime(root / "notes.txt", "two\n")
    assert tree_fingerprint(str(root), cache=HashCache(tmp_path / "hashes")) != cold


def test_a_nested_repository_is_cached_like_the_rest(
    repo: Path, tmp_path: Path, short_window: Callable[[], None]
) -> None:
    nested = repo / "vendor"
    nested.mkdir()
    (nested / "lib.py").write_text("VALUE = 1\n")
    git(nested, "init", "-q")
    short_window()
    _, hits = warm(repo, tmp_path / "hashes")
    assert hits == 4
