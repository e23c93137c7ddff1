"""Issue 8's fingerprint target, measured side by side in one process: fingerprinting a
10,000-file git repository (every file's content read and hashed, git listing what
``.gitignore`` excludes) vs ``git status`` on the same tree (stat data only). Target ratio <= 3.

Both sides include what a hook pays: ``git status`` runs as a subprocess, the fingerprint is
one in-process call (which itself runs two git listings).

Usage: python bench/bench_fingerprint.py [--rounds N] [--files N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_acceptance.fingerprint import tree_fingerprint

TARGET = 3.0


def build_repository(root: Path, files: int) -> None:
    """``files`` small source files in 100 packages of two levels, committed, plus a
    .gitignore'd build directory and a few untracked files (what a working tree looks like)."""
    for number in range(files):
        package = root / f"pkg{number % 100}" / ("sub" if number % 2 else "")
        package.mkdir(parents=True, exist_ok=True)
        body = f"# module {number}\n" + "value = 1\n" * (number % 40)
        (package / f"module{number}.py").write_text(body)
    (root / ".gitignore").write_text("build/\n")
    git = ["git", "-c", "user.email=bench@example.invalid", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], cwd=root, check=True)
    (root / "build").mkdir()
    for number in range(200):
        (root / "build" / f"out{number}.o").write_bytes(b"\0" * 512)
    for number in range(10):
        (root / f"untracked{number}.py").write_text("pass\n")


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def git_status(root: Path) -> None:
    subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_repository(root, options.files)
        first = tree_fingerprint(str(root))
        git_status(root)  # warm both (page cache, git's index refresh)
        base_times, cand_times = [], []
        for _ in range(options.rounds):
            base_times.append(timed(lambda: git_status(root)))
            cand_times.append(timed(lambda: tree_fingerprint(str(root))))
        if tree_fingerprint(str(root)) != first:
            sys.exit("the fingerprint of an unchanged tree changed between calls")
    # Noise on a shared machine only ever adds time: compare the best of N (medians beside).
    base, cand = min(base_times), min(cand_times)
    ratio = cand / base
    median_ratio = statistics.median(cand_times) / statistics.median(base_times)
    verdict = "ok" if ratio <= TARGET else "OVER TARGET"
    print(
        f"fingerprint {options.files:,} files: git status {base * 1000:.1f} ms, "
        f"tree_fingerprint {cand * 1000:.1f} ms (best of {options.rounds}), ratio {ratio:.2f} "
        f"(target <= {TARGET}) {verdict}; median ratio {median_ratio:.2f}; cpus {os.cpu_count()}"
    )


if __name__ == "__main__":
    main()
