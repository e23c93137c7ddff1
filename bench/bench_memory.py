"""Issue 10's memory target, measured side by side in one run: the peak RSS of pytest running
one bash criterion that prints 1 GB (passing, then failing) against a run of one criterion
that prints nothing (target: under 100 MB above it).

The peak is the child's ``ru_maxrss`` (pytest is the only child of each measurement: a
``bash`` command's own RSS is not pytest's). Output goes to a memfd, which holds pages
outside any RSS: only what pytest reads back counts.

Usage: python bench/bench_memory.py [--megabytes N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _compare import ENV, PYTEST
from bench_core import criterion

TARGET_MB = 100


def spec(command: str, condition: str) -> str:
    block = criterion(1, command).replace('"exit code 0"', f'"{condition}"')
    return f"# Bench\n\n## Acceptance Criteria\n\n### Category: Bench\n\n{block}"


def peak_rss_mb(root: Path, name: str) -> float:
    """Run pytest in a fresh child (via a tiny wrapper, so ``RUSAGE_CHILDREN`` holds only
    this run) and return its peak RSS in MB."""
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=False, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    args = [sys.executable, "-c", probe, *PYTEST, "-n", "0", "--acceptance", name]
    done = subprocess.run(args, cwd=root, env=ENV, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024  # KB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=1024)
    size = parser.parse_args().megabytes * 1024 * 1024
    print_big = f"head -c {size} /dev/zero | tr '\\\\0' y | fold -w 99"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "empty.md").write_text(spec("true", "exit code 0"))
        (root / "big-pass.md").write_text(spec(print_big, "exit code 0"))
        (root / "big-fail.md").write_text(spec(print_big, "output contains never-printed"))
        empty = peak_rss_mb(root, "empty.md")
        worst = 0.0
        for name in ("big-pass.md", "big-fail.md"):
            peak = peak_rss_mb(root, name)
            worst = max(worst, peak - empty)
            print(
                f"{name}: peak RSS {peak:.1f} MB vs {empty:.1f} MB for an empty run: "
                f"+{peak - empty:.1f} MB (target < {TARGET_MB} MB)"
            )
    sys.exit(0 if worst < TARGET_MB else 1)


if __name__ == "__main__":
    main()
