"""Benchmark: what the gate adds to an honest flow -- its own verification run at /done --
side by side with the agent's own /verify run of the same spec.

    .venv/bin/python bench/bench_gate.py [--criteria 20] [--pytest 0] [--rounds 5]

Builds, in a temp dir, a real git repository with a spec of N passing bash criteria (the
first --pytest of them run `python -m pytest` on a test file of their own, which the gate
witnesses), pins
it the way /implement does (the prompt hook, with this interpreter as the gate's Python),
and times the next sessions' /implement beside a plain `pytest --collect-only` of the same
project (the environment's digests kept, as from one session to the next). Then it times
alternately, best of N:

- baseline: the agent's /verify command, `python -m pytest --acceptance spec.md`;
- candidate: one gate run as the /done PreToolUse hook makes it (`gate.run`: the check of
  the pinned interpreter's files, the fingerprint before and after, `pytest --acceptance`
  on the pinned spec in a clean environment with the verdict over a pipe). Its stored
  result is removed before each round, so every round is a real run, as on a new tree.

An honest flow pays this once per /done on a new tree. Then, the Stop hook after that
/done (`--stop`):

- baseline: the stop reusing /done's stored result (nothing of the session acted beside
  the main conversation: the reuse key read by content, no stat keys);
- candidate: the stop running the gate again, as it does after a tool call that followed
  /done, a background task or a subagent of the session.

Prints the ratios; no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _compare import ENV, compare, timed  # noqa: E402

CRITERION = """
#### AC-{0}: file {0} exists
**Verification:**
```yaml
method: bash
command: "test -f files/f{0}.txt"
```
"""
GATE_ONCE = """
import shutil, sys, time
sys.path.insert(0, {root!r})
from pytest_acceptance.gate import flow_state, gate
flow = flow_state.Flow.load("bench-session")
shutil.rmtree(flow.results_folder, ignore_errors=True)
result = gate.run(flow, time.monotonic() + 600)
sys.exit(0 if gate.done_problem(flow, result) is None else 1)
"""

# The Stop hook's gate call after an accepted /done; {reuse}: nothing of the session acted
# since, so /done's stored result may stand (the terminal is noted for the latest run).
STOP_ONCE = """
import sys, time
sys.path.insert(0, {root!r})
from pytest_acceptance.gate import flow_state, gate
flow = flow_state.Flow.load("bench-session")
flow.note_terminal("done", None)
runs = flow.get("gate_runs")
result = gate.run(flow, time.monotonic() + 600, reuse={reuse})
if {reuse} and flow.get("gate_runs") != runs:
    sys.exit("the stored result was not reused")
sys.exit(0 if gate.done_problem(flow, result) is None else 1)
"""


PYTEST_CRITERION = """
#### AC-{0}: test {0} passes
**Verification:**
```yaml
method: bash
command: "python -m pytest -q -p no:randomly tests/test_f{0}.py"
```
"""
TEST = "def test_f{0}():\n    assert {0} == {0}\n"
IMPLEMENT_TARGET = 2.0  # seconds: a person waits for each /implement


def build(root: Path, criteria: int, pytest_criteria: int = 0) -> Path:
    repo = root / "repo"
    (repo / "files").mkdir(parents=True)
    (repo / "tests").mkdir()
    for index in range(1, criteria + 1):
        (repo / "files" / f"f{index}.txt").write_text(f"{index}\n")
        (repo / "tests" / f"test_f{index}.py").write_text(TEST.format(index))
    spec = "# Spec\n\n## Acceptance Criteria\n" + "".join(
        (PYTEST_CRITERION if index <= pytest_criteria else CRITERION).format(index)
        for index in range(1, criteria + 1)
    )
    (repo / "spec.md").write_text(spec)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-q", "-m", "spec"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def pin(repo: Path, session: str) -> float:
    """/implement of the spec in a new session; the seconds it took."""
    payload = {
        "session_id": session,
        "cwd": str(repo),
        "prompt_id": "bench-prompt",
        "hook_event_name": "UserPromptExpansion",
        "command_name": "pytest-acceptance:implement",
        "command_args": "spec.md",
        "command_source": "plugin",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-S", str(REPO_ROOT / "hooks" / "prompt_hook.py")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    if done.returncode != 0 or done.stdout.strip():
        sys.exit(f"pinning failed: {done.stdout}{done.stderr}")
    return time.perf_counter() - started


def implement_beside_collection(repo: Path, rounds: int) -> None:
    """The wait a person has at each later /implement (a new session, the environment's
    digests kept), beside a plain `pytest --collect-only` of the same project in the same
    environment, alternately, best of `rounds`."""
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    collections, implements = [], []
    for round_ in range(rounds):
        collections.append(timed(collect, repo))
        implements.append(pin(repo, f"bench-session-{round_ + 2}"))
    best = min(implements)
    print(
        f"/implement, digests kept: {best:.2f} s (best of {rounds}; target <= "
        f"{IMPLEMENT_TARGET:.0f} s), {best / min(collections):.2f} times a plain "
        f"`pytest --collect-only` here ({min(collections):.2f} s)"
    )


def cold_pin(repo: Path) -> float:
    """/implement in a new session right after the kernel dropped its page cache: what a
    person waits for after a reboot, or when the environment's files were pushed out."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    return pin(repo, "bench-session-cold")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--criteria", type=int, default=20)
    parser.add_argument("--pytest", type=int, default=0, help="criteria that run pytest")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stop", action="store_true", help="also time the stop after /done")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="also time one /implement after dropping the page cache (needs root)",
    )
    arguments = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-gate-"))
    try:
        repo = build(root, arguments.criteria, arguments.pytest)
        ENV["CLAUDE_PLUGIN_DATA"] = str(root / "data")
        ENV["ACCEPTANCE_GATE_PYTHON"] = sys.executable
        first = pin(repo, "bench-session")
        pinned = json.loads(next((root / "data").rglob("closure.json")).read_text())
        print(
            f"pin at /implement: {first:.2f} s, of which the interpreter's environment is "
            f"{len(pinned):,} files"
        )
        implement_beside_collection(repo, arguments.rounds)
        if arguments.cold:
            print(f"/implement on a cold page cache, digests kept: {cold_pin(repo):.2f} s")
        verify = [sys.executable, "-m", "pytest", "--acceptance", "spec.md"]
        verify += ["-p", "no:cacheprovider", "-q"]
        gate_run = [sys.executable, "-S", "-c", GATE_ONCE.format(root=str(REPO_ROOT))]
        compare(
            f"gate run at /done vs the agent's /verify ({arguments.criteria} bash criteria, "
            f"{arguments.pytest} of them pytest)",
            verify,
            gate_run,
            repo,
            target=1.3,
            rounds=arguments.rounds,
        )
        if arguments.stop:
            stop = [sys.executable, "-S", "-c"]
            compare(
                "the stop after /done: reused vs run again",
                [*stop, STOP_ONCE.format(root=str(REPO_ROOT), reuse=True)],
                [*stop, STOP_ONCE.format(root=str(REPO_ROOT), reuse=False)],
                repo,
                target=float("inf"),
                rounds=arguments.rounds,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
