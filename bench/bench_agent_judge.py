"""The agent judge's targets, in one run, against the Messages API stand-in (offline):

1. 10 agent criteria judged by the real Claude Code CLI bundled in claude-agent-sdk, at
   wave 5, the model taking 2 s per answer, against a bare script making the same 10 CLI
   calls (same flags) 5 at a time: target ratio <= 1.2, whole run, start-up included.
2. A `-k` run selecting one of those criteria against the same run with `-n 0`:
   target ratio <= 1.2 (no worker is started for one criterion).

Printed: each round, then the best of N and the median, as ratios.

Usage: python bench/bench_agent_judge.py [--rounds N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO), str(REPO / "bench")]

from _compare import ratio_line  # noqa: E402
from support.claude_cli import installed_claude  # noqa: E402
from support.claude_harness import MessagesStandIn, claude_env, reply, structured  # noqa: E402

from pytest_acceptance.agent.backends import ClaudeBackend, Dispatch  # noqa: E402

CRITERIA = 10
WAVE = 5
ANSWER_SECONDS = 2.0
TARGET = 1.2
PASS = {"status": "pass", "summary": "holds", "issues": []}


def spec() -> str:
    blocks = "".join(
        f"#### AC-{n}: agent check {n}\n**Description:** check {n} holds.\n\n"
        f'**Verification:**\n```yaml\nmethod: subagent\nchecks:\n  - "check {n}"\n```\n\n'
        for n in range(1, CRITERIA + 1)
    )
    return f"# Bench\n\n## Acceptance Criteria\n\n### Category: Bench\n\n{blocks}"


def pytest_run(root: Path, env: dict[str, str], *args: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["--acceptance", "spec.md", "--acceptance-wave", str(WAVE), *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return elapsed


def bare_run(root: Path, env: dict[str, str], binary: Path) -> float:
    """The same CLI calls the plugin makes, 5 at a time, from a thread pool."""
    backend = ClaudeBackend(binary)
    argv = [backend.command(Dispatch(f"check {n} of {root}", root, 60)) for n in range(CRITERIA)]
    started = time.perf_counter()
    with ThreadPoolExecutor(WAVE) as pool:
        codes = list(
            pool.map(
                lambda words: subprocess.run(words, cwd=root, env=env, capture_output=True),
                argv,
            )
        )
    elapsed = time.perf_counter() - started
    bad = [c for c in codes if c.returncode != 0 or "structured_output" not in c.stdout.decode()]
    if bad:
        sys.exit(f"a bare CLI call failed: {bad[0].stdout[-2000:]!r} {bad[0].stderr[-2000:]!r}")
    return elapsed


def report(name: str, baseline: list[float], candidate: list[float], target: float) -> None:
    print(ratio_line(name, baseline, candidate, target)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    binary = installed_claude()
    script = lambda request: reply(structured(PASS), delay=ANSWER_SECONDS)  # noqa: E731
    with (
        tempfile.TemporaryDirectory() as project,
        tempfile.TemporaryDirectory() as home,
        MessagesStandIn(script) as api,
    ):
        root = Path(project)
        (root / "spec.md").write_text(spec())
        (root / "pytest.ini").write_text("[pytest]\n")
        env = claude_env(Path(home), api.url, binary)
        env["PATH"] = "/usr/bin:/bin"  # the bundled CLI, not a `claude` on PATH
        wave_base, wave_run, one_base, one_run = [], [], [], []
        for number in range(1, args.rounds + 1):
            wave_base.append(bare_run(root, env, binary))
            wave_run.append(pytest_run(root, env))
            one_base.append(pytest_run(root, env, "-k", "AC-3", "-n", "0"))
            one_run.append(pytest_run(root, env, "-k", "AC-3"))
            print(
                f"round {number}: bare {wave_base[-1]:.3f}s, pytest {wave_run[-1]:.3f}s; "
                f"-k one with -n 0 {one_base[-1]:.3f}s, without {one_run[-1]:.3f}s"
            )
        if api.errors:
            sys.exit("stand-in: " + "\n".join(api.errors))
    report(
        f"{CRITERIA} agent criteria, real CLI, wave {WAVE}, {ANSWER_SECONDS:g}s answers "
        "(vs the same calls from a bare thread pool)",
        wave_base,
        wave_run,
        TARGET,
    )
    report("one criterion selected with -k (vs the same run with -n 0)", one_base, one_run, TARGET)


if __name__ == "__main__":
    main()
