"""Issue 8's fingerprint target, measured side by side in one process: fingerprinting a
10,000-file git repository vs ``git status`` on the same tree (stat data only). Target ratio
<= 3.

Two fingerprints are timed: cold (every file's content read and hashed, git listing what
``.gitignore`` excludes: a plain ``pytest --acceptance`` run, or ``/implement`` filling the
gate's cache), and with the hash cache the Claude Code gate keeps in its own state (files
whose stat data, ctime included, are unchanged are not read again; a forked helper checks a
share of the stat keys): the gate's path, which the target is for. Timed alternately in this
process, best of N: ``git status`` as a subprocess (as a hook runs it), each fingerprint as
one call (which runs two git listings itself). The tree is aged past the cache's racy
window first (files changed less than ``RACY_SECONDS`` ago are never cached).

Usage: python bench/bench_fingerprint.py [--rounds N] [--files N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_acceptance.tree.fingerprint import tree_fingerprint
from pytest_acceptance.tree.hash_cache import RACY_SECONDS, HashCache


def build_repository(root: Path, files: int) -> None:
    """``files`` small source files in 100 packages of two levels, committed, plus a
    .gitignore'd build directory and a few untracked files (what a working tree looks like)."""
    for number in range(files):
        package = root / f"pkg{number % 100}" / ("sub" if number % 2 else "")
        package.mkdir(parents=True, exist_ok=True)
        body = f"# module {number}\n" + "value = 1\n" * (number % 40)
        (package / f"module{number}.py").write_text(body)
    (root / ".gitignore").write_text("build/\n")
    git = [
        "git",
        "-c",
        "user.email=bench@example.invalid",
        "-c",
        "user.name=bench",
        "-c",
        "gc.auto=0",
    ]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], cwd=root, check=True)
    (root / "build").mkdir()
    for number in range(200):
        (root / "build" / f"out{number}.o").write_bytes(b"\0" * 512)
    for number in range(10):
        (root / f"untracked{number}.py").write_text("pass\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--files", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        hashes = Path(tmp) / "hashes"
        build_repository(root, options.files)
        time.sleep(RACY_SECONDS + 0.5)
        status = ["git", "status", "--porcelain"]
        actions = {
            "git status": lambda: subprocess.run(status, cwd=root, capture_output=True, check=True),
            "cold": lambda: tree_fingerprint(str(root)),
            "cached": lambda: tree_fingerprint(str(root), cache=HashCache(hashes)),
        }
        first = tree_fingerprint(str(root), cache=HashCache(hashes))  # warms caches, fills ours
        times: dict[str, list[float]] = {name: [] for name in actions}
        for _ in range(options.rounds):  # alternately: load on a shared machine hits both
            for name, action in actions.items():
                start = time.perf_counter()
                action()
                times[name].append(time.perf_counter() - start)
        last = HashCache(hashes)
        if {tree_fingerprint(str(root)), tree_fingerprint(str(root), cache=last)} != {first}:
            sys.exit("the fingerprint of an unchanged tree changed between calls")
    base = min(times["git status"])
    print(
        f"fingerprint of {options.files:,} files vs git status {base * 1e3:.1f} ms "
        f"(best of {options.rounds}, in this process):"
    )
    cold = min(times["cold"])
    print(f"  cold    {cold * 1e3:6.1f} ms  ratio {cold / base:.2f} (every file read: no target)")
    cached = min(times["cached"])
    verdict = "ok" if cached / base <= 3 else "OVER TARGET"
    print(
        f"  cached  {cached * 1e3:6.1f} ms  ratio {cached / base:.2f} "
        f"(the gate's path, target <= 3.0) {verdict}"
    )
    print(f"  cached: {last.hits:,} files reused, {last.helped:,} stat keys checked by the helper")


if __name__ == "__main__":
    main()
