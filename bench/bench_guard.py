"""Benchmark: the guard that runs before every tool call, inside an /implement flow and outside
one, against a baseline checkout of the plugin (side by side, alternating).

    .venv/bin/python bench/bench_guard.py [--baseline main] [--runs 40] [--megabytes 5]

The baseline is the plugin as it is at a git revision (`git archive` of it into a temp dir);
the candidate is this worktree. For each, in a temp dir: a real git repository with a spec,
a transcript in the CLI 2.1.328 shape, and the plugin's own state folder. Inside a flow the
user's /implement was pinned by that plugin's own prompt hook (as the CLI runs it). The
transcript then grows to ``--megabytes`` of tool calls (an overnight session's is larger).
Each call is the hooks.json command run through /bin/sh and `hooks/python3`
(``python3 -E -S``), payload on stdin:

- a Bash call (`ls`): only the protect hook matches, as for every Write, Edit or Bash;
- a Skill call (`/pytest-acceptance:verify`): both PreToolUse hooks, as the CLI starts them
  (in parallel).

Between two calls the transcript grows by one tool call, as in a session. Prints medians of
N, wall and CPU time (a shared machine moves wall times; the median of many short calls is
the steady state), and the ratios candidate / baseline. Target: a median of 50 ms a call.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "hooks"))
sys.path.insert(0, str(REPO_ROOT / "tests"))

from hook_transcripts import (  # noqa: E402
    PLUGIN,
    SESSION_ID,
    SPEC_TEXT,
    TranscriptBuilder,
    expansion_payload,
    hook_command,
    make_repo,
)

SPEC = "specs/feature.md"
TARGET_MS = 50.0


class Setup:
    """One plugin root, its repository, transcript and state, inside or outside a flow."""

    def __init__(self, root: Path, workdir: Path, flow: bool, megabytes: int) -> None:
        self.root = root
        self.repo = make_repo(workdir / "repo", SPEC_TEXT)
        self.transcript = workdir / "session.jsonl"
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_HOOK_", "CLAUDE"))
        }
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's hooks keep their bytecode
        self.env.update(
            CLAUDE_PLUGIN_ROOT=str(root),
            CLAUDE_PLUGIN_DATA=str(workdir / "plugin-data"),
            CLAUDE_PROJECT_DIR=str(self.repo),
            ACCEPTANCE_GATE_PYTHON=sys.executable,
        )
        self.builder = TranscriptBuilder(self.repo, session_id=SESSION_ID)
        self.tool_use_id = ""
        if flow:
            self._implement()
        else:
            self.builder.prompt("Tidy the README.")
            self.builder.write(self.transcript)
        self._grow(megabytes * 1_000_000)

    def _implement(self) -> None:
        prompt_id = str(uuid.uuid4())
        payload = expansion_payload(self.repo, SPEC, prompt_id)
        payload["transcript_path"] = str(self.transcript)
        self.builder.write(self.transcript)
        done = self.run(hook_command("UserPromptExpansion"), payload)
        if "block" in done:
            sys.exit(f"/implement was refused under {self.root}: {done}")
        self.builder.command(f"{PLUGIN}:implement", SPEC, prompt_id=prompt_id)
        self.builder.text("Working on it.")
        self.builder.write(self.transcript)

    def _grow(self, target: int) -> None:
        while self.transcript.stat().st_size < target:
            for _ in range(50):
                self.step()

    def step(self) -> None:
        """One more tool call in the transcript, appended as the CLI appends."""
        self.builder.lines.clear()
        self.tool_use_id = self.builder.tool("Bash", {"command": "ls"}, "app.py\nspecs\n" * 200)
        with self.transcript.open("a", encoding="utf-8") as handle:
            for line in self.builder.lines:
                handle.write(json.dumps(line, separators=(",", ":")) + "\n")

    def payload(self, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return {
            "session_id": SESSION_ID,
            "transcript_path": str(self.transcript),
            "cwd": str(self.repo),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": self.tool_use_id,  # the CLI's; the hooks wait for its line
        }

    def run(self, command: str, payload: dict[str, Any]) -> str:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=self.env,
            check=False,
        )
        if done.returncode != 0 or b"Traceback" in done.stderr:
            sys.exit(f"{command} exited {done.returncode}: {done.stderr.decode()}")
        return done.stdout.decode()

    def bash_call(self) -> str:
        return self.run(protect_command(), self.payload("Bash", {"command": "ls"}))

    def skill_call(self) -> str:
        """Both PreToolUse hooks at once, as the CLI runs the hooks one call matches."""
        payload = json.dumps(self.payload("Skill", {"skill": f"{PLUGIN}:verify", "args": SPEC}))
        running = [
            subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
            )
            for command in pretool_commands()
        ]
        answers = []
        for process in running:
            out, err = process.communicate(payload.encode())
            if process.returncode != 0 or b"Traceback" in err:
                sys.exit(f"a PreToolUse hook exited {process.returncode}: {err.decode()}")
            answers.append(out.decode())
        return "".join(answers)


def pretool_commands() -> list[str]:
    config = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    return [hook["command"] for group in config["hooks"]["PreToolUse"] for hook in group["hooks"]]


def protect_command() -> str:
    return next(command for command in pretool_commands() if "pretool_protect_hook" in command)


def export(revision: str, into: Path) -> Path:
    """The plugin as it is at ``revision``, in a folder of its own."""
    archive = into / "baseline.tar"
    with archive.open("wb") as handle:
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", revision, "hooks", "pytest_acceptance"],
            stdout=handle,
            check=True,
        )
    root = into / "baseline"
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


Times = dict[str, tuple[list[float], list[float]]]  # per setup: wall times, CPU times


def measure(setups: dict[str, Setup], call: Callable[[Setup], str], runs: int) -> Times:
    times: Times = {name: ([], []) for name in setups}
    for setup in setups.values():
        call(setup)  # bytecode written, page cache warm
    for _ in range(runs):
        for name, setup in setups.items():  # alternating: both see the same neighbours
            setup.step()
            started, cpu = time.perf_counter(), _children_cpu()
            answer = call(setup)
            times[name][0].append(time.perf_counter() - started)
            times[name][1].append(_children_cpu() - cpu)
            if "deny" in answer:
                sys.exit(f"the {name} guard denied an honest call: {answer}")
    return times


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(label: str, times: Times) -> None:
    """Medians, wall and CPU (user + system of the call's processes: on a loaded machine
    the wall time mostly measures the neighbours)."""
    (base, base_cpu), (cand, cand_cpu) = times["baseline"], times["candidate"]
    wall = statistics.median(cand) * 1000
    verdict = "ok" if wall <= TARGET_MS else "OVER TARGET"
    print(
        f"{label}: median baseline {statistics.median(base) * 1000:.1f} ms, candidate "
        f"{wall:.1f} ms, ratio {statistics.median(cand) / statistics.median(base):.3f} "
        f"(target <= {TARGET_MS:.0f} ms) {verdict}; CPU median baseline "
        f"{statistics.median(base_cpu) * 1000:.1f} ms, candidate "
        f"{statistics.median(cand_cpu) * 1000:.1f} ms, ratio "
        f"{statistics.median(cand_cpu) / statistics.median(base_cpu):.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision of the baseline")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--megabytes", type=int, default=5, help="transcript size")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as temp:
        workdir = Path(temp)
        roots = {"baseline": export(options.baseline, workdir), "candidate": REPO_ROOT}
        for flow in (True, False):
            where = "inside a flow" if flow else "outside a flow"
            setups = {
                name: Setup(root, workdir / f"{name}-{flow}", flow, options.megabytes)
                for name, root in roots.items()
            }
            report(f"Bash call, {where}", measure(setups, Setup.bash_call, options.runs))
            report(f"Skill call, {where}", measure(setups, Setup.skill_call, options.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
