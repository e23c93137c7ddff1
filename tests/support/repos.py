"""Shared test helpers."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT = [
    "git",
    "-c",
    "user.email=t@example.invalid",
    "-c",
    "user.name=t",
    "-c",
    "init.defaultBranch=main",
]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def make_repo(tmp_path: Path) -> Path:
    """A committed repository: source, a test, a .gitignore for build output."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def answer():\n    return 42\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text("def test_answer():\n    assert 1\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


def rewrite_same_size_and_mtime(path: Path, content: str) -> None:
    """What `touch -d` makes possible: new bytes, same size, the old mtime restored."""
    before = path.stat()
    assert len(content.encode()) == before.st_size
    path.write_text(content)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def assume_unchanged(repo: Path) -> Callable[[], None]:
    git(repo, "update-index", "--assume-unchanged", "src/app.py")
    return lambda: rewrite_same_size_and_mtime(
        repo / "src" / "app.py", "def answer():\n    return 41\n"
    )


def skip_worktree(repo: Path) -> Callable[[], None]:
    git(repo, "update-index", "--skip-worktree", "src/app.py")
    return lambda: (repo / "src" / "app.py").write_text("def answer():\n    return 0\n")


def silent_fsmonitor(repo: Path) -> Callable[[], None]:
    """A core.fsmonitor hook (protocol 2) that reports no change, ever: git status believes
    it (checked below), the fingerprint must not."""
    hook = repo / ".git" / "quiet-fsmonitor"
    hook.write_text('#!/bin/sh\nprintf "token\\0"\n')
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "core.fsmonitorHookVersion", "2")
    git(repo, "status")
    git(repo, "update-index", "--fsmonitor")
    git(repo, "status")  # records the hook's token in the index

    def change() -> None:
        (repo / "src" / "app.py").write_text("def answer():\n    return 7\n")
        assert git(repo, "status", "--porcelain") == "", "the hook no longer fools git status"

    return change


def info_exclude(repo: Path) -> Callable[[], None]:
    (repo / "src" / "helper.py").write_text("VALUE = 1\n")
    with (repo / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("src/helper.py\n")
    return lambda: (repo / "src" / "helper.py").write_text("VALUE = 2\n")


def global_excludes_file(repo: Path) -> Callable[[], None]:
    excludes = repo.parent / "global-ignore"
    excludes.write_text("secret.py\n")
    git(repo, "config", "core.excludesFile", str(excludes))
    (repo / "src" / "secret.py").write_text("VALUE = 1\n")
    return lambda: (repo / "src" / "secret.py").write_text("VALUE = 2\n")


def file_symlink_leaving_tree(repo: Path) -> Callable[[], None]:
    outside = repo.parent / "outside.py"
    outside.write_text("VALUE = 1\n")
    (repo / "src" / "linked.py").symlink_to(outside)
    return lambda: outside.write_text("VALUE = 2\n")


def directory_symlink_leaving_tree(repo: Path) -> Callable[[], None]:
    outside = repo.parent / "outside-lib"
    outside.mkdir()
    (outside / "lib.py").write_text("VALUE = 1\n")
    (repo / "lib").symlink_to(outside, target_is_directory=True)
    return lambda: (outside / "lib.py").write_text("VALUE = 2\n")


def nested_repository(repo: Path) -> Callable[[], None]:
    nested = repo / "vendor_lib"
    nested.mkdir()
    (nested / "lib.py").write_text("VALUE = 1\n")
    git(nested, "init", "-q")
    git(nested, "add", "-A")
    git(nested, "commit", "-qm", "nested")
    return lambda: (nested / "lib.py").write_text("VALUE = 2\n")


def submodule(repo: Path) -> Callable[[], None]:
    upstream = repo.parent / "upstream"
    upstream.mkdir()
    (upstream / "lib.py").write_text("VALUE = 1\n")
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "upstream")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-qm", "submodule")
    return lambda: (repo / "sub" / "lib.py").write_text("VALUE = 2\n")


def same_size_same_mtime(repo: Path) -> Callable[[], None]:
    return lambda: rewrite_same_size_and_mtime(
        repo / "src" / "app.py", "def answer():\n    return 24\n"
    )


def untracked_behind_gitignore_rule(repo: Path) -> Callable[[], None]:
    """`git rm --cached` of a tracked file an ignore rule matches, then an edit."""
    (repo / "settings.log").write_text("level = 1\n")
    git(repo, "add", "-f", "settings.log")
    git(repo, "commit", "-qm", "tracked despite *.log")
    return lambda: (
        git(repo, "rm", "-q", "--cached", "settings.log"),
        (repo / "settings.log").write_text("level = 2\n"),
    )


def invalid_nested_git_directory(repo: Path) -> Callable[[], None]:
    """git skips every path named .git; one that is no repository hides files from git."""
    hidden = repo / "src" / "cache" / ".git"
    hidden.mkdir(parents=True)
    (hidden / "payload.py").write_text("VALUE = 1\n")
    return lambda: (hidden / "payload.py").write_text("VALUE = 2\n")


def executable_bit(repo: Path) -> Callable[[], None]:
    return lambda: (repo / "src" / "app.py").chmod(0o755)


TRICKS = [
    assume_unchanged,
    skip_worktree,
    silent_fsmonitor,
    info_exclude,
    global_excludes_file,
    file_symlink_leaving_tree,
    directory_symlink_leaving_tree,
    nested_repository,
    submodule,
    same_size_same_mtime,
    untracked_behind_gitignore_rule,
    invalid_nested_git_directory,
    executable_bit,
]
