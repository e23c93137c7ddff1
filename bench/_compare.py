"""Side-by-side timing: run a baseline and a candidate alternately in one process, several
rounds, and report the ratio of their best times (machines are shared and noisy)."""

from __future__ import annotations

import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# Compare like with like: pytest's modules carry bytecode from their install, so ours must
# too (an editable install under PYTHONDONTWRITEBYTECODE would recompile them every run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
compileall.compile_dir(Path(__file__).resolve().parents[1] / "pytest_acceptance", quiet=1)


def timed(
    args: Sequence[str], cwd: Path, ok: Sequence[int] = (0,), env: dict[str, str] | None = None
) -> float:
    """Wall time of one run; its CPU time (user + system, all its processes) goes to
    ``CPU_TIMES``: on a loaded machine wall time mostly measures the neighbours."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(
        args, cwd=cwd, env=env or ENV, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    CPU_TIMES.append(_children_cpu() - cpu)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr}")
    return elapsed


CPU_TIMES: list[float] = []


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare(
    name: str,
    baseline: Sequence[str],
    candidate: Sequence[str],
    cwd: Path,
    target: float,
    rounds: int = 5,
    env: dict[str, str] | None = None,
) -> float:
    """``env``: extra environment for the candidate only."""
    base_times, cand_times = [], []
    cand_env = {**ENV, **(env or {})}
    timed(baseline, cwd), timed(candidate, cwd, env=cand_env)  # warm caches (imports, bytecode)
    base_cpu, cand_cpu = [], []
    for _ in range(rounds):
        base_times.append(timed(baseline, cwd))
        base_cpu.append(CPU_TIMES[-1])
        cand_times.append(timed(candidate, cwd, env=cand_env))
        cand_cpu.append(CPU_TIMES[-1])
    ratio, line = ratio_line(name, base_times, cand_times, target)
    print(
        f"{line}; CPU time ratio {min(cand_cpu) / min(base_cpu):.3f} (median "
        f"{statistics.median(cand_cpu) / statistics.median(base_cpu):.3f})"
    )
    return ratio


def ratio_line(
    name: str, base_times: Sequence[float], cand_times: Sequence[float], target: float
) -> tuple[float, str]:
    """(ratio, its line). Noise on a shared machine only ever adds time: the best of N
    estimates the cost (as timeit recommends); medians are printed beside it."""
    base, cand = min(base_times), min(cand_times)
    ratio = cand / base
    median_ratio = statistics.median(cand_times) / statistics.median(base_times)
    verdict = "ok" if ratio <= target else "OVER TARGET"
    return ratio, (
        f"{name}: baseline {base:.3f}s, pytest-acceptance {cand:.3f}s (best of "
        f"{len(cand_times)}), ratio {ratio:.3f} (target <= {target}) {verdict}; median ratio "
        f"{median_ratio:.3f}"
    )


PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
