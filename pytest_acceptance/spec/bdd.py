"""Which runner runs a Gherkin scenario in this project: its pytest-bdd, its behave, or
(neither) an agent.

Decided where a spec is loaded for a run (``collect.load_spec``), because it depends on
the project, not on the feature file's text:

- **behave**, when the feature lies under a ``features/`` folder that holds a ``steps/``
  folder of Python files (behave's layout) and behave is installed: the criterion runs
  ``python -m behave FILE:LINE`` (the scenario's line, or the example row's) and passes
  when behave reports one passed scenario and no failed one;
- **pytest-bdd**, when it is installed and a Python file of the project imports it: the
  criterion runs the project's pytest with only the tests bound to that scenario (and that
  example row) selected (``bdd_select``); a scenario no test binds is a failure saying so;
- otherwise the criterion stays an agent judging the steps.

The collection line says which (``Criterion.how``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

from pytest_acceptance.model import Criterion, Method, Spec

SCAN_LIMIT = 5_000  # Python files read to find an import of pytest_bdd
_SKIP = frozenset({"node_modules", "venv", ".venv", "site-packages", "__pycache__", "build"})
BEHAVE_PASSED = "output matches '^[1-9][0-9]* scenarios? passed, 0 failed'"


def bound(spec: Spec, rootdir: Path) -> Spec:
    """``spec`` with its Gherkin scenarios bound to the project's runner, if any: decided
    where the spec's criteria lie (for a copy, read as its origin: ``load.parse_spec_as``)."""
    if not any(criterion.scenario is not None for criterion in spec.criteria):
        return spec
    return dataclasses.replace(spec, criteria=bind(spec.criteria, rootdir))


def bind(criteria: Iterable[Criterion], rootdir: Path) -> tuple[Criterion, ...]:
    """The criteria with each Gherkin scenario bound to the project's runner, if any."""
    return tuple(_bound(c, rootdir) if c.scenario is not None else c for c in criteria)


def _bound(criterion: Criterion, rootdir: Path) -> Criterion:
    feature = criterion.location.path.resolve()
    scenario = criterion.scenario
    assert scenario is not None
    python = shlex.quote(sys.executable)
    if _behave_project(feature) and _installed("behave"):
        line = scenario.example_line or scenario.line
        where = shlex.quote(f"{_relative(feature, rootdir)}:{line}")
        command = f"{python} -m behave --no-color --format progress {where}"
        return _as_bash(criterion, command, BEHAVE_PASSED, "bash: behave runs this scenario")
    if _installed("pytest_bdd") and _imports_pytest_bdd(rootdir.resolve()):
        arguments = [
            f"--acceptance-bdd-feature={feature}",
            f"--acceptance-bdd-scenario={scenario.name}",
        ]
        if scenario.example:
            arguments.append(f"--acceptance-bdd-example={scenario.example}")
        quoted = " ".join(shlex.quote(a) for a in arguments)
        command = (
            f"{python} -m pytest -p pytest_acceptance.spec.bdd_select {quoted} "
            "-p no:cacheprovider -q"
        )
        return _as_bash(criterion, command, None, "bash: pytest-bdd runs this scenario")
    return criterion


def _as_bash(criterion: Criterion, command: str, condition: str | None, how: str) -> Criterion:
    return dataclasses.replace(
        criterion, method=Method.BASH, command=command, pass_condition=condition, how=how, checks=()
    )


def _relative(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir.resolve()).as_posix()
    except ValueError:
        return str(path)


def _behave_project(feature: Path) -> bool:
    """behave's layout: a ``features`` folder above the file with a ``steps`` folder."""
    for folder in (feature.parent, *feature.parents):
        steps = folder / "steps"
        if steps.is_dir() and any(steps.glob("*.py")):
            return True
        if folder.name == "features":
            return False
    return False


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@functools.cache
def _imports_pytest_bdd(rootdir: Path) -> bool:
    """Whether a Python file of the project (hidden folders and virtualenvs left out, at
    most ``SCAN_LIMIT`` files) imports pytest_bdd."""
    seen = 0
    for root, dirs, files in os.walk(rootdir):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP]
        for name in files:
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > SCAN_LIMIT:
                return False
            try:
                with open(os.path.join(root, name), "rb") as handle:
                    if b"pytest_bdd" in handle.read(256 * 1024):
                        return True
            except OSError:
                continue
    return False
