"""A spec file is parsed at most once per process of a run: the controller's recorder and
evidence reporter, the collector and the fragment writer share one parse, and with the
parse cache on the xdist workers load what the controller stored instead of parsing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.runs import BASE, project
from support.specs import bash, spec

# A plugin of the project under test: counts the parses of the process it runs in and
# writes the count, one file per process, when pytest unconfigures.
COUNTER = """
import os
from pathlib import Path

import pytest_acceptance.spec.load as load

_parse = load.parse_spec_text
PARSES = []


def counting(*args, **kwargs):
    PARSES.append(args[1])
    return _parse(*args, **kwargs)


load.parse_spec_text = counting


def pytest_unconfigure(config):
    name = getattr(config, "workerinput", {}).get("workerid", "controller")
    Path(os.environ["PARSE_COUNTS"], name).write_text(str(len(PARSES)))
"""


def parse_counts(root: Path, *args: str, parse_cache: bool) -> dict[str, int]:
    counts = root / "counts"
    counts.mkdir()
    env = {**os.environ, "PARSE_COUNTS": str(counts), "PYTHONPATH": str(root)}
    if not parse_cache:
        env["ACCEPTANCE_PARSE_CACHE"] = "0"
    done = subprocess.run(
        [*BASE, "-p", "count_parses", "--acceptance", "spec.md", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {path.name: int(path.read_text()) for path in counts.iterdir()}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = project(tmp_path / "project", spec(bash("AC-1", "true"), bash("AC-2", "true")))
    (root / "count_parses.py").write_text(COUNTER)
    return root


@pytest.mark.parametrize("parse_cache", [False, True])
def test_a_single_process_parses_the_spec_once(root: Path, parse_cache: bool) -> None:
    assert parse_counts(root, "-n", "0", parse_cache=parse_cache) == {"controller": 1}


def test_with_the_parse_cache_off_each_xdist_process_parses_the_spec_once(root: Path) -> None:
    counts = parse_counts(root, "-n", "2", parse_cache=False)
    assert counts == {"controller": 1, "gw0": 1, "gw1": 1}


def test_with_the_parse_cache_on_only_the_controller_parses(root: Path) -> None:
    counts = parse_counts(root, "-n", "2", parse_cache=True)
    assert counts == {"controller": 1, "gw0": 0, "gw1": 0}
