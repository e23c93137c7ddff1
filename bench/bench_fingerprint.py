"""Issue 8's fingerprint target, measured side by side in one process: fingerprinting a
10,000-file git repository (every file's content read and hashed, git listing what
``.gitignore`` excludes) vs ``git status`` on the same tree (stat data only). Target ratio <= 3.

Both sides run as what a hook pays, alternately in one process, best of N: ``git status`` as
a subprocess, the fingerprint as a fresh ``python3 -S`` (interpreter start-up included).

Usage: python bench/bench_fingerprint.py [--rounds N] [--files N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_acceptance.fingerprint import tree_fingerprint

sys.path.insert(0, str(Path(__file__).parent))
from _compare import compare

REPOSITORY = Path(__file__).resolve().parents[1]


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


# What a hook pays: a fresh `python3 -S` importing the stdlib-only module and fingerprinting.
FINGERPRINT = (
    "import sys; sys.path.insert(0, sys.argv[2]);"
    "from pytest_acceptance.fingerprint import tree_fingerprint;"
    "print(tree_fingerprint(sys.argv[1]))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_repository(root, options.files)
        first = tree_fingerprint(str(root))
        compare(
            f"fingerprint {options.files:,} files",
            ["git", "status", "--porcelain"],
            [sys.executable, "-S", "-c", FINGERPRINT, str(root), str(REPOSITORY)],
            root,
            target=3.0,
            rounds=options.rounds,
        )
        if tree_fingerprint(str(root)) != first:
            sys.exit("the fingerprint of an unchanged tree changed between calls")


if __name__ == "__main__":
    main()
