"""Beside pytest-sugar, which replaces pytest's terminal progress: the same verdict, exit
code and verdict line as without it, alone and under xdist.

pytest-sugar is not in the test extra (it would change every nested run's terminal), so
it is installed here into a folder of its own, put on the runs' ``PYTHONPATH``: pytest
finds its entry point there, and the test venv stays as it is. Real runs (subprocesses),
pip from the registry (its cache when warm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import bash, manual, spec

SUGAR = ("pytest-sugar==1.1.1", "termcolor==3.3.0")
SPEC = spec(bash("AC-1", "true"), bash("AC-2", "exit 3"), manual("AC-3"))


@pytest.fixture(scope="module")
def sugar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("sugar")
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    done = subprocess.run(
        [*install, str(target), *SUGAR], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"pip could not install {SUGAR}: {done.stderr[-2000:]}"
    return target


def _run(project: Path, sugar: Path | None, *args: str) -> tuple[int, str, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(sugar) if sugar else ""}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--acceptance"]
    done = subprocess.run(
        [*command, "spec.md", *args], cwd=project, env=env, capture_output=True, text=True
    )
    verdict = json.loads((project / ".acceptance" / "verdict.json").read_text())
    return done.returncode, done.stdout, verdict


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_the_verdict_is_the_same_beside_pytest_sugar(
    tmp_path: Path, sugar: Path, workers: tuple[str, ...]
) -> None:
    (tmp_path / "spec.md").write_text(SPEC)
    code, out, verdict = _run(tmp_path, sugar, *workers)
    assert "sugar-1.1.1" in out, out  # it was loaded
    plain_code, plain_out, plain = _run(tmp_path, None, *workers)
    assert "sugar" not in plain_out
    assert code == plain_code == verdict["exit_code"] == 1, out
    assert verdict["status"] == plain["status"] == "fail"
    assert verdict["counts"] == plain["counts"]
    line = "verdict: FAIL (exit code 1), written to .acceptance/verdict.json"
    assert line in out and line in plain_out, out
