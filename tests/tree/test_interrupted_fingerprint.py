"""A Ctrl-C during a fingerprint leaves no open file and no running git: every pipe of the
git listings is closed on every path (an error, an interrupt, a second interrupt while the
first is handled), by ``_Git``'s context manager. Each case runs in a child Python under
``-W error -X dev``, where a leaked pipe is an ``Exception ignored in: <_io.FileIO ...>``
on stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.repos import make_repo

STRICT = [sys.executable, "-W", "error", "-X", "dev", "-c"]
LEAKS = ("Exception ignored", "ResourceWarning", "unclosed", "still running")


def run_strict(code: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STRICT, textwrap.dedent(code)], capture_output=True, text=True, timeout=60, **kw
    )  # type: ignore[call-overload]


INTERRUPT_AT = {
    # while git lists the tree: communicate() is interrupted
    "the listing": "fingerprint._Git._finish",
    # while the hash cache is checked beside the running listings
    "the cache check": "HashCache.check",
    # between starting the first git and the second
    "the second start": "fingerprint._Git._start",
}


@pytest.mark.parametrize("where", INTERRUPT_AT)
def test_an_interrupt_anywhere_in_the_git_listing_leaks_nothing(tmp_path: Path, where: str) -> None:
    repo = make_repo(tmp_path)
    target = INTERRUPT_AT[where]
    owner, name = target.rsplit(".", 1)
    code = f"""
        import gc
        from pytest_acceptance.tree import fingerprint
        from pytest_acceptance.tree.hash_cache import HashCache
        original = {owner}.{name}
        calls = []
        def interrupted(*args, **kwargs):
            calls.append(1)
            if {name!r} != "_start" or len(calls) == 2:
                raise KeyboardInterrupt
            return original(*args, **kwargs)
        {owner}.{name} = interrupted
        cache = HashCache({str(tmp_path / "cache")!r}) if {name!r} == "check" else None
        try:
            fingerprint.tree_fingerprint({str(repo)!r}, cache=cache)
        except KeyboardInterrupt:
            print("interrupted")
        gc.collect()
    """
    done = run_strict(code)
    assert done.stdout.strip() == "interrupted", done.stderr
    assert not any(leak in done.stderr for leak in LEAKS), done.stderr


def test_an_honest_fingerprint_under_w_error_is_silent(tmp_path: Path) -> None:
    """The control: the same child, not interrupted, prints its fingerprint and nothing else."""
    repo = make_repo(tmp_path)
    code = f"""
        import gc
        from pytest_acceptance.tree.fingerprint import tree_fingerprint
        print(tree_fingerprint({str(repo)!r})[:4])
        gc.collect()
    """
    done = run_strict(code)
    assert (done.stdout.strip(), done.stderr) == ("git:", "")


def test_two_real_ctrl_c_during_a_slow_listing_leak_nothing(tmp_path: Path) -> None:
    """Written after the fix: real SIGINTs, the second while the first is being handled,
    against a git that takes its time (first on PATH, outside the project)."""
    repo = make_repo(tmp_path)
    tools = tmp_path / "slow-bin"
    tools.mkdir()
    slow_git = tools / "git"
    slow_git.write_text("#!/bin/sh\nexec sleep 30\n")
    slow_git.chmod(0o755)
    code = f"""
        import gc, sys
        from pytest_acceptance.tree.fingerprint import tree_fingerprint
        print("started", flush=True)
        try:
            try:
                tree_fingerprint({str(repo)!r})
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                import time; time.sleep(5)  # where the second Ctrl-C lands
        except KeyboardInterrupt:
            print("interrupted again", flush=True)
        gc.collect()
    """
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    child = subprocess.Popen(
        [*STRICT, textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"
    time.sleep(1.0)  # git is listing (sleeping)
    child.send_signal(signal.SIGINT)
    assert child.stdout.readline().strip() == "interrupted"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert out.strip() == "interrupted again"
    assert not any(leak in err for leak in LEAKS), err
