"""The working-tree fingerprint against the git tricks of issue 8, on real git repositories
in temporary directories: every trick changes the fingerprint, an honest run does not, and a
git that cannot answer raises instead of passing for a clean tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.repos import (
    TRICKS,
    git,
    make_repo,
    rewrite_same_size_and_mtime,
)

from pytest_acceptance.tree import fingerprint
from pytest_acceptance.tree.fingerprint import FingerprintError, tree_fingerprint


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


# -- each trick: (set-up before the first fingerprint, change after it) ----------------------


@pytest.mark.parametrize("trick", TRICKS, ids=lambda trick: trick.__name__)
def test_each_git_trick_changes_the_fingerprint(repo: Path, trick) -> None:
    """Set the trick up, fingerprint, make the change the trick hides from git: it shows."""
    change = trick(repo)
    before = tree_fingerprint(str(repo))
    assert tree_fingerprint(str(repo)) == before  # stable before the change
    change()
    assert tree_fingerprint(str(repo)) != before


def test_the_same_tree_gives_the_same_fingerprint(repo: Path) -> None:
    assert tree_fingerprint(str(repo)) == tree_fingerprint(str(repo))
    assert tree_fingerprint(str(repo)).startswith("git:")


def test_an_honest_runs_outputs_do_not_change_it(repo: Path) -> None:
    """pytest and the plugin write these during the run the gate fingerprints around."""
    before = tree_fingerprint(str(repo))
    for directory in ("src/__pycache__", "tests/__pycache__", ".pytest_cache/v", ".acceptance"):
        (repo / directory).mkdir(parents=True)
    (repo / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0" * 64)
    (repo / "tests" / "__pycache__" / "x.pyc").write_bytes(b"\1" * 64)
    (repo / ".pytest_cache" / "v" / "lastfailed").write_text("{}")
    (repo / ".acceptance" / "verdict.json").write_text("{}")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\2")
    (repo / "run.log").write_text("log\n")
    git(repo, "status")  # refreshes the index: stat data only, never content
    assert tree_fingerprint(str(repo)) == before


def test_a_new_untracked_file_and_a_deletion_change_it(repo: Path) -> None:
    before = tree_fingerprint(str(repo))
    (repo / "src" / "new.py").write_text("")
    with_new = tree_fingerprint(str(repo))
    assert with_new != before
    (repo / "src" / "new.py").unlink()
    assert tree_fingerprint(str(repo)) == before
    (repo / "tests" / "test_app.py").unlink()
    assert tree_fingerprint(str(repo)) != before


def test_a_commit_alone_does_not_change_it(repo: Path) -> None:
    """Only what the checks see counts: the content, not where HEAD points."""
    (repo / "src" / "app.py").write_text("def answer():\n    return 43\n")
    edited = tree_fingerprint(str(repo))
    git(repo, "commit", "-qam", "edit")
    assert tree_fingerprint(str(repo)) == edited


def test_a_subdirectory_root_fingerprints_its_repository(repo: Path) -> None:
    assert tree_fingerprint(str(repo / "src")) == tree_fingerprint(str(repo))


def test_the_callers_git_environment_is_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE set by the agent's shell steer nothing."""
    honest = tree_fingerprint(str(repo))
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    git(decoy, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.excludesfile'='/dev/null'")
    assert tree_fingerprint(str(repo)) == honest


def test_core_worktree_cannot_send_git_elsewhere(repo: Path, tmp_path: Path) -> None:
    before = tree_fingerprint(str(repo))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(repo, "config", "core.worktree", str(elsewhere))
    assert tree_fingerprint(str(repo)) == before
    (repo / "src" / "app.py").write_text("changed\n")
    assert tree_fingerprint(str(repo)) != before


# -- files git's view would not survive ---------------------------------------------------


def fingerprint_in_subprocess(root: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run in a child so that a hang fails the test instead of hanging the suite."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from pytest_acceptance.tree.fingerprint import tree_fingerprint;"
        "print(tree_fingerprint(sys.argv[1]))"
    )
    package_root = str(Path(fingerprint.__file__).resolve().parents[2])
    return subprocess.run(
        [sys.executable, "-S", "-c", code, str(root), package_root],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_fifo_neither_hangs_nor_crashes(repo: Path, tmp_path: Path) -> None:
    """FIFOs in the tree, behind a symlink, and outside the tree behind a symlink: only
    their type is hashed (opening one would block until a writer came)."""
    os.mkfifo(repo / "src" / "pipe")
    outside_fifo = tmp_path / "outside-pipe"
    os.mkfifo(outside_fifo)
    (repo / "src" / "to-pipe").symlink_to(outside_fifo)
    first = fingerprint_in_subprocess(repo)
    second = fingerprint_in_subprocess(repo)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert first.stdout.startswith("git:")


def test_a_fifo_outside_git_neither_hangs_nor_crashes(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    done = fingerprint_in_subprocess(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("files:")


def test_symlink_loops_and_dangling_links_are_hashed_as_such(repo: Path) -> None:
    (repo / "src" / "loop_a").symlink_to("loop_b")
    (repo / "src" / "loop_b").symlink_to("loop_a")
    (repo / "src" / "dangling").symlink_to("does-not-exist")
    (repo / "src" / "up").symlink_to("..", target_is_directory=True)
    (repo / "src" / "self").symlink_to(".", target_is_directory=True)
    first = tree_fingerprint(str(repo))
    assert tree_fingerprint(str(repo)) == first
    (repo / "src" / "dangling").unlink()
    (repo / "src" / "dangling").symlink_to("app.py")
    assert tree_fingerprint(str(repo)) != first


# -- failing closed -----------------------------------------------------------------------


def test_a_corrupt_index_raises(repo: Path) -> None:
    (repo / ".git" / "index").write_bytes(b"DIRC garbage that is no index")
    with pytest.raises(FingerprintError, match="index"):
        tree_fingerprint(str(repo))


def test_a_missing_git_raises_in_a_repository(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(FingerprintError, match="cannot run git"):
        tree_fingerprint(str(repo))


def test_a_git_planted_in_the_project_is_never_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated .venv/bin on PATH is agent-writable: a `git` there that calls every
    file ignored would blind the fingerprint. Only a git outside the project runs."""
    planted = repo / ".venv" / "bin"
    planted.mkdir(parents=True)
    (planted / "git").write_text("#!/bin/sh\nprintf 'src/\\0tests/\\0'\n")
    (planted / "git").chmod(0o755)
    honest = tree_fingerprint(str(repo))
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    assert tree_fingerprint(str(repo)) == honest
    (repo / "src" / "app.py").write_text("changed\n")
    assert tree_fingerprint(str(repo)) != honest


def test_a_broken_git_directory_raises(tmp_path: Path) -> None:
    """An empty .git is no repository: git fails, and so does the fingerprint (it does not
    fall back to whatever repository encloses the directory)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("")
    with pytest.raises(FingerprintError, match="not a git repository"):
        tree_fingerprint(str(tmp_path))


def test_a_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(FingerprintError, match="not a directory"):
        tree_fingerprint(str(tmp_path / "missing"))
    with pytest.raises(FingerprintError, match="null"):
        tree_fingerprint(str(tmp_path) + "\0")


def test_past_the_file_cap_it_raises_rather_than_cover_part(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fingerprint, "MAX_ENTRIES", 3)
    with pytest.raises(FingerprintError, match="more than 3 files"):
        tree_fingerprint(str(repo))


def test_a_sparse_terabyte_fails_at_once_instead_of_reading(repo: Path) -> None:
    """A file far larger than the byte cap is refused before any read (reading it would run
    past a hook's timeout, and a timed-out hook lets the stop through)."""
    with (repo / "huge.bin").open("wb") as huge:
        huge.truncate(1 << 40)
    with pytest.raises(FingerprintError, match="bytes to read"):
        tree_fingerprint(str(repo))


def test_a_time_limit_is_enforced(repo: Path) -> None:
    with pytest.raises(FingerprintError, match="time limit"):
        tree_fingerprint(str(repo), timeout=0)
    assert tree_fingerprint(str(repo), timeout=60) == tree_fingerprint(str(repo))


# -- outside git ----------------------------------------------------------------------------


def test_outside_git_the_content_counts_not_the_mtime(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("VALUE = 1\n")
    before = tree_fingerprint(str(tmp_path))
    assert before.startswith("files:")
    os.utime(tmp_path / "a.py", ns=(0, 0))
    assert tree_fingerprint(str(tmp_path)) == before
    rewrite_same_size_and_mtime(tmp_path / "a.py", "VALUE = 2\n")
    assert tree_fingerprint(str(tmp_path)) != before


# -- names: any bytes a file system allows --------------------------------------------------

NAMES = st.binary(min_size=1, max_size=40).filter(
    lambda name: b"/" not in name and b"\0" not in name and name not in (b".", b"..")
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    # A file named .git makes a repository of the directory (covered by the fail-closed tests).
    files=st.dictionaries(
        NAMES.filter(lambda name: name != b".git"), st.binary(max_size=64), min_size=1, max_size=6
    ),
    data=st.data(),
)
def test_any_names_are_fingerprinted_deterministically(tmp_path_factory, files, data) -> None:
    """Arbitrary file names (newlines, invalid UTF-8, leading dashes) never crash the walk,
    the same tree gives the same fingerprint, and changing one file's bytes changes it."""
    root = tmp_path_factory.mktemp("names")
    for name, content in files.items():
        (Path(os.fsdecode(root)) / os.fsdecode(name)).write_bytes(content)
    first = tree_fingerprint(str(root))
    assert tree_fingerprint(str(root)) == first
    victim = data.draw(st.sampled_from(sorted(files)))
    path = Path(os.fsdecode(root)) / os.fsdecode(victim)
    path.write_bytes(files[victim] + b"!")
    assert tree_fingerprint(str(root)) != first


@settings(max_examples=15, deadline=None)
@given(names=st.lists(NAMES.filter(lambda n: n != b".git"), min_size=1, max_size=4, unique=True))
def test_any_names_in_a_git_repository(tmp_path_factory, names) -> None:
    """The same with git listing the names (quoted paths never leak into the result)."""
    root = tmp_path_factory.mktemp("gitnames")
    git(root, "init", "-q")
    for name in names:
        (Path(os.fsdecode(root)) / os.fsdecode(name)).write_bytes(name)
    first = tree_fingerprint(str(root))
    assert tree_fingerprint(str(root)) == first
    (Path(os.fsdecode(root)) / os.fsdecode(names[0])).write_bytes(b"changed")
    assert tree_fingerprint(str(root)) != first
