"""A spec of criteria that each take 1 s, on remote xdist workers: three loopback execnet
socket servers (each in a folder of its own, the project sent with --rsyncdir) against one,
side by side. With the cores for it the ratio is about 1/3 plus the fixed cost of starting
and syncing the workers; a criterion that sleeps needs no core, so even a 2-core machine
shows the spread.

Each timed run gets fresh servers (a server keeps the interpreter a worker ran in), started
and stopped outside the timing.

Usage: python bench/bench_remote.py [--rounds N] [--criteria N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.execnet_servers import socket_servers

INI = "[pytest]\nfilterwarnings =\n    ignore:The --rsyncdir:DeprecationWarning\n"
RUN = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]


def spec(count: int) -> str:
    blocks = "".join(
        f"#### AC-{n}: one second\n**Description:** takes a second.\n\n**Verification:**\n"
        '```yaml\nmethod: bash\ncommand: "sleep 1"\n```\n\n'
        for n in range(1, count + 1)
    )
    return f"# Bench\n\n## Acceptance Criteria\n\n### Category: Bench\n\n{blocks}"


def timed_run(project: Path, machines: Path, workers: int) -> float:
    with socket_servers(machines, workers) as servers:
        txs = [f"--tx={server.tx}" for server in servers]
        start = time.perf_counter()
        done = subprocess.run(
            [*RUN, "--acceptance", "spec.md", "-d", "--rsyncdir", ".", *txs],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the run with {workers} worker(s) exited {done.returncode}:\n{done.stdout}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--criteria", type=int, default=30)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pytest.ini").write_text(INI)
        (project / "spec.md").write_text(spec(options.criteria))
        one, three = [], []
        for number in range(options.rounds):
            one.append(timed_run(project, Path(tmp) / f"one-{number}", 1))
            three.append(timed_run(project, Path(tmp) / f"three-{number}", 3))
    ratio = min(three) / min(one)
    print(
        f"{options.criteria} criteria of 1 s on loopback socket workers: 1 worker "
        f"{min(one):.2f}s, 3 workers {min(three):.2f}s (best of {options.rounds}), ratio "
        f"{ratio:.3f} (ideal 0.333 plus start-up; median ratio "
        f"{statistics.median(three) / statistics.median(one):.3f})"
    )


if __name__ == "__main__":
    main()
