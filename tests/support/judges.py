"""Shared test helpers."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from support import gate_python


class Judge:
    """The scripted judge on disk, outside the tree under verification."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.script = directory / "judge.py"
        self.script.write_text(JUDGE_SOURCE)
        self.plan({})

    @property
    def command(self) -> str:
        return f"{gate_python.EXECUTABLE} {self.script}"

    def plan(self, steps: dict[str, list[str]]) -> None:
        (self.directory / "plan.json").write_text(json.dumps(steps))

    def calls(self, ident: str | None = None) -> list[list[str]]:
        log = self.directory / "calls.log"
        lines = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
        return [w for w in lines if w[1] == "start" and (ident is None or w[0] == ident)]

    def intervals(self) -> list[tuple[float, float]]:
        lines = [line.split() for line in (self.directory / "calls.log").read_text().splitlines()]
        starts = {w[0]: float(w[2]) for w in lines if w[1] == "start"}
        return [(starts[w[0]], float(w[2])) for w in lines if w[1] == "end"]

    def prompt(self, ident: str, dispatch: int = 1) -> str:
        return (self.directory / f"prompt-{ident}-{dispatch}.txt").read_text()


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most judges that ran at one moment. A plan step `meet:N` makes N judges wait for
    each other, so N at once is proven by a barrier, not hoped for from timing."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


JUDGE_SOURCE = textwrap.dedent(
    """
    import json, os, re, subprocess, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    prompt = sys.stdin.read()
    ident = re.search(r"## Criterion (\\S+):", prompt).group(1)
    with open(os.path.join(here, "calls.log"), "a") as log:
        log.write(f"{ident} start {time.time()} {os.getcwd()}\\n")
    with open(os.path.join(here, "calls.log")) as log:
        count = sum(1 for line in log if line.startswith(ident + " start"))
    with open(os.path.join(here, f"prompt-{ident}-{count}.txt"), "w") as kept:
        kept.write(prompt)
    plan = json.load(open(os.path.join(here, "plan.json")))
    steps = plan.get(ident, plan.get("*", ["pass"]))
    step = steps[min(count, len(steps)) - 1]
    if step.startswith("sleep:"):
        time.sleep(float(step.split(":")[1]))
        step = "pass"
    if step.startswith("meet:"):  # wait (60 s at most) until N judges have started
        with open(os.path.join(here, "arrivals.log"), "a") as arrivals:
            arrivals.write(ident + "\\n")
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(os.path.join(here, "arrivals.log")) as arrivals:
                if sum(1 for _ in arrivals) >= int(step.split(":")[1]):
                    break
            time.sleep(0.05)
        step = "pass"
    if step == "hang":
        child = subprocess.Popen(["sleep", "300"])
        with open(os.path.join(here, "pids.log"), "a") as pids:
            pids.write(f"{os.getpid()} {child.pid}\\n")
        time.sleep(300)
    if step == "crash":
        print("Traceback: judge exploded", file=sys.stderr)
        sys.exit(3)
    answers = {
        "pass": {"status": "pass", "summary": f"{ident} holds", "issues": []},
        "fail": {"status": "fail", "summary": f"{ident} does not hold", "issues": [
            {"location": "src/app.py:3", "expected": "AppError", "actual": "Error()"}]},
        "fail-without-issues": {"status": "fail", "summary": "bad", "issues": []},
    }
    print(json.dumps(answers[step]) if step in answers else "Looks fine to me!")
    with open(os.path.join(here, "calls.log"), "a") as log:
        log.write(f"{ident} end {time.time()}\\n")
    """
)
