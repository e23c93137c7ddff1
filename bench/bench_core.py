"""Issue 2's speed targets, measured side by side in one run:

1. collecting a 5,000-criterion spec vs pytest collecting 5,000 parametrized Python tests
   (target ratio <= 1.25);
2. running 300 bash criteria serially vs a hand-written parametrized test running the same
   commands through subprocess (target ratio <= 1.15), with every command contained
   (containment.py) the best way this machine allows; where that is a cgroup, once more
   with tracking (what a machine without a writable cgroup v2 gets), for information.

Usage: python bench/bench_core.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _compare import PYTEST, compare

from pytest_acceptance.run import containment


def criterion(n: int, command: str) -> str:
    return (
        f"#### AC-{n}: criterion number {n}\n"
        f"**Description:** criterion {n} holds.\n\n**Verification:**\n"
        f'```yaml\nmethod: bash\ncommand: "{command}"\npass_condition: "exit code 0"\n```\n\n'
    )


def spec(count: int, command: str) -> str:
    blocks = "".join(criterion(n, command) for n in range(1, count + 1))
    return f"# Bench\n\n## Acceptance Criteria\n\n### Category: Bench\n\n{blocks}"


PARAMETRIZED = """
import subprocess
import pytest

@pytest.mark.parametrize("n", range(1, {count} + 1))
def test_command(n):
    done = subprocess.run(["bash", "-c", {command!r}], capture_output=True, cwd={cwd!r})
    assert done.returncode == 0
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "big.md").write_text(spec(5000, "true"))
        (root / "test_big.py").write_text(PARAMETRIZED.format(count=5000, command="true", cwd=tmp))
        (root / "run.md").write_text(spec(300, "true"))
        (root / "test_run.py").write_text(PARAMETRIZED.format(count=300, command="true", cwd=tmp))
        collect = compare(
            "collect 5,000",
            [*PYTEST, "--collect-only", "test_big.py"],
            [*PYTEST, "--collect-only", "--acceptance", "big.md"],
            root,
            target=1.25,
            rounds=rounds,
        )
        runs = {"run 300 bash serially": {}}
        if containment.own_cgroup() is not None:  # and for information, as elsewhere:
            tracking = {containment.MODE_VARIABLE: "tracking"}
            runs["run 300 bash serially, tracking instead of a cgroup"] = tracking
        run, *_ = [
            compare(
                name,
                [*PYTEST, "test_run.py"],
                [*PYTEST, "--acceptance", "run.md"],
                root,
                target=1.15,
                rounds=rounds,
                env=env,
            )
            for name, env in runs.items()
        ]
    sys.exit(0 if collect <= 1.25 and run <= 1.15 else 1)


if __name__ == "__main__":
    main()
