"""Speed at scale, every figure in one run as a ratio against plain pytest: N ``true`` bash
criteria against a parametrized test making the same subprocess call, the two run side by
side and interleaved (baseline, candidate, baseline, ...), medians of 3.

Figures (targets in brackets):

- run, ``-n 0`` and ``-n 2``: wall time [-n 2 <= 1.15] and CPU time of all processes
  [-n 2 <= 1.25];
- collection (``--collect-only``), the parse cache warm and cold [cold <= 1.25 at the largest
  N];
- peak RSS of the largest process at N = 5,000 (``--rss-n``), ``-n 0`` and ``-n 2`` [<= 1.3].

For each figure measured at several N, a least-squares line ``time = start + N * per_item``
tells start-up cost and per-criterion cost apart. Each run is one child process waited with
``wait4``: its rusage covers it and every descendant it waited for (the xdist workers, the
bash commands), and ``ru_maxrss`` is the largest of them.

Usage: python bench/bench_scale.py [--quick] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _compare import ENV, PYTEST
from bench_core import PARAMETRIZED, spec

FULL_NS = (100, 1000, 3000)
QUICK_NS = (50, 200, 500)
TARGETS = {"run -n 2": 1.15, "cpu -n 2": 1.25, "collect cold": 1.25, "rss": 1.3}


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    max_rss_kb: int


@dataclass(frozen=True)
class Figure:
    """One pair of commands to compare at one N."""

    name: str
    count: int
    baseline: tuple[str, ...]
    candidate: tuple[str, ...]
    before_candidate: Path | None = None  # removed before each candidate run (a cold cache)


def sample(args: Sequence[str], cwd: Path) -> Sample:
    """Run ``args`` once; its wall time, CPU time and largest process, descendants included."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, env=ENV, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            out.seek(0)
            text = out.read().decode(errors="replace")
            sys.exit(f"{' '.join(args)} exited {proc.returncode}:\n{text[-3000:]}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


Pairs = tuple[list[Sample], list[Sample]]  # (baseline, candidate)


def measure(figures: Sequence[Figure], root: Path, rounds: int) -> dict[Figure, Pairs]:
    """Interleaved: every round runs every figure's baseline and candidate, alternating which
    goes first, after one warm-up round (imports, bytecode, the warm parse cache)."""
    results: dict[Figure, Pairs] = {f: ([], []) for f in figures}
    for round_ in range(rounds + 1):
        for figure in figures:
            pair = []
            for side in (0, 1) if round_ % 2 else (1, 0):
                if side == 1 and figure.before_candidate is not None:
                    shutil.rmtree(figure.before_candidate, ignore_errors=True)
                args = figure.candidate if side else figure.baseline
                pair.append((side, sample(args, root)))
            if round_:  # round 0 warms up
                for side, one in pair:
                    results[figure][side].append(one)
    return results


def fit(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """Least squares ``y = start + n * per_item``: (start, per_item)."""
    ns, ys = [n for n, _ in points], [y for _, y in points]
    mean_n, mean_y = statistics.fmean(ns), statistics.fmean(ys)
    spread = sum((n - mean_n) ** 2 for n in ns)
    per_item = sum((n - mean_n) * (y - mean_y) for n, y in points) / spread
    return mean_y - per_item * mean_n, per_item


def median(samples: Sequence[Sample], what: str) -> float:
    return float(statistics.median(getattr(s, what) for s in samples))


def ratio_text(base: Sequence[Sample], cand: Sequence[Sample], what: str) -> str:
    """Ratio of the medians, and the range of the pairwise ratios (the noise)."""
    pairs = sorted(getattr(c, what) / getattr(b, what) for b, c in zip(base, cand, strict=True))
    ratio = median(cand, what) / median(base, what)
    return f"{ratio:.2f} [{pairs[0]:.2f}-{pairs[-1]:.2f}]"


def report(name: str, by_n: dict[int, Pairs]) -> None:
    print(f"\n{name}")
    for count, (base, cand) in sorted(by_n.items()):
        print(
            f"  N={count:>5}: wall {median(base, 'wall'):6.2f}s vs {median(cand, 'wall'):6.2f}s "
            f"ratio {ratio_text(base, cand, 'wall')}; CPU {median(base, 'cpu'):6.2f}s vs "
            f"{median(cand, 'cpu'):6.2f}s ratio {ratio_text(base, cand, 'cpu')}; "
            f"peak RSS ratio {ratio_text(base, cand, 'max_rss_kb')}"
        )
    if len(by_n) < 2:
        return
    for what, unit, scale in (("wall", "ms", 1e3), ("cpu", "ms", 1e3)):
        base_fit = fit([(n, median(b, what)) for n, (b, _) in by_n.items()])
        cand_fit = fit([(n, median(c, what)) for n, (_, c) in by_n.items()])
        print(
            f"  fit {what}: start {base_fit[0]:.2f}s vs {cand_fit[0]:.2f}s; per criterion "
            f"{base_fit[1] * scale:.3f} vs {cand_fit[1] * scale:.3f} {unit} "
            f"(+{(cand_fit[1] - base_fit[1]) * scale:.3f} {unit}, ratio "
            f"{cand_fit[1] / base_fit[1]:.2f})"
        )


def rss_report(by_path: dict[str, Pairs], count: int) -> None:
    print(f"\npeak RSS, largest process, N={count} [target <= {TARGETS['rss']}]")
    for path, (base, cand) in by_path.items():
        base_kb, cand_kb = median(base, "max_rss_kb"), median(cand, "max_rss_kb")
        print(
            f"  {path}: {base_kb / 1024:.1f} MB vs {cand_kb / 1024:.1f} MB, ratio "
            f"{ratio_text(base, cand, 'max_rss_kb')}; +{(cand_kb - base_kb) / count:.1f} KB "
            "per criterion"
        )


def write_inputs(root: Path, counts: Sequence[int]) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    for count in counts:
        (root / f"run{count}.md").write_text(spec(count, "true"))
        test = PARAMETRIZED.format(count=count, command="true", cwd=str(root))
        (root / f"test_run{count}.py").write_text(test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"N = {QUICK_NS}, RSS at 1,000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("run", "collect", "rss"), action="append")
    options = parser.parse_args()
    counts, rss_n = (QUICK_NS, 1000) if options.quick else (FULL_NS, 5000)
    parts = options.only or ["run", "collect", "rss"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_inputs(root, sorted({*counts, rss_n}))
        cache = root / ".acceptance" / "parse-cache"
        figures = []
        for count in counts:
            base, cand = [*PYTEST, f"test_run{count}.py"], [*PYTEST, "--acceptance"]
            cand = [*cand, f"run{count}.md"]
            if "run" in parts:
                for workers in ("0", "2"):
                    name = f"run -n {workers}"
                    figures.append(
                        Figure(name, count, (*base, "-n", workers), (*cand, "-n", workers))
                    )
            if "collect" in parts:
                collect_base, collect_cand = (*base, "--collect-only"), (*cand, "--collect-only")
                figures.append(Figure("collect warm", count, collect_base, collect_cand))
                figures.append(Figure("collect cold", count, collect_base, collect_cand, cache))
        if "rss" in parts:
            base, cand = (
                [*PYTEST, f"test_run{rss_n}.py"],
                [*PYTEST, "--acceptance", f"run{rss_n}.md"],
            )
            for workers in ("0", "2"):
                name = f"rss -n {workers}"
                figures.append(Figure(name, rss_n, (*base, "-n", workers), (*cand, "-n", workers)))
        print(
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; medians of "
            f"{options.rounds}, [min-max] of the pairwise ratios"
        )
        results = measure(figures, root, options.rounds)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        names = dict.fromkeys(f.name for f in figures if not f.name.startswith("rss"))
        for name in names:
            label = f"{name} [target <= {TARGETS[name]}]" if name in TARGETS else name
            if name == "run -n 2":
                label += f" (CPU <= {TARGETS['cpu -n 2']})"
            report(label, {f.count: results[f] for f in figures if f.name == name})
        rss = {f.name[4:]: results[f] for f in figures if f.name.startswith("rss")}
        if rss:
            rss_report(rss, rss_n)


if __name__ == "__main__":
    main()
