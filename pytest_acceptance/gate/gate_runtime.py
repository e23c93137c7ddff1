"""The interpreter the gate verifies with, pinned at /implement, and what it is made of.

Found in this order: ``$ACCEPTANCE_GATE_PYTHON``, ``<repo>/.venv/bin/python``,
``<repo>/venv/bin/python``, ``python3`` on PATH -- the first that can run
``pytest_acceptance.gate_probe`` (which also parses the pinned spec and reads the pinned
settings). This stdlib process hashes the interpreter's files itself: a probe running in
a tampered interpreter could lie about them. What the interpreter and the rest of the run
are made of is pinned by the table of pins (pins/table.py), once the probe has answered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_acceptance.gate import gate_bytecode, interpreter_paths, witness
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.gate_process import GateError, clean_env, probe_report
from pytest_acceptance.gate.pinned_collection import Collection, DamagedCollection
from pytest_acceptance.gate.pins import base as pins
from pytest_acceptance.gate.pins import table

__all__ = ["GateError", "clean_env"]  # where the hooks and the gate import them from
# The top-level names the gate has Pythons of the run import its own code and its runner's
# by (its pytest's `-p`, the modules a criterion's pytest loads them through): a project
# module that takes one since /implement is refused like any other that shadows.
GATE_NAMES = frozenset(
    {"pytest_acceptance", "pytest", "_pytest", "xdist", "pluggy", "execnet", witness.PLUGIN_PACKAGE}
)


def candidate_pythons(repo: Path) -> list[str]:
    """Where the gate looks for an interpreter that can import pytest_acceptance."""
    configured = os.environ.get("ACCEPTANCE_GATE_PYTHON", "").strip()
    if configured:
        return [configured]
    found = [str(repo / folder / "bin" / "python") for folder in (".venv", "venv")]
    found = [path for path in found if os.path.isfile(path)]
    return [*found, "python3"]


def probe(
    python: str,
    spec: Path,
    config_dir: Path,
    timeout: float,
    read_as: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Run pytest_acceptance.gate_probe with `python`; its JSON, or GateError. It reads the
    bytecode the gate's last run of `python` read (gate_bytecode.latest), when that is
    exactly as the gate built it, before and after the probe; else it compiles afresh.
    `read_as`: (the project's spec, its rootdir) when `spec` is a copy, read as the gate's
    run reads it (`--acceptance-spec-origin`, `--rootdir`)."""
    words = ["--origin", read_as[0], "--rootdir", read_as[1]] if read_as else []
    arguments = ["-m", "pytest_acceptance.gate_probe", "--config-dir", str(config_dir)]
    arguments += [*words, str(spec)]
    kept = gate_bytecode.latest(python)
    with interpreter_paths.private_pycache() as pycache:
        if kept is not None:
            try:
                report = _probe(python, arguments, config_dir, timeout, pycache, str(kept.path))
            except GateError:
                report = None  # said again below, by the probe that compiles afresh
            if report is not None and kept.untouched():
                return report
        return _probe(python, arguments, config_dir, timeout, pycache)


def _probe(
    python: str,
    arguments: list[str],
    config_dir: Path,
    timeout: float,
    pycache: str,
    bytecode: str = "",
) -> dict[str, Any]:
    report = probe_report(python, arguments, pycache, timeout, str(config_dir), bytecode)
    if not isinstance(report.get("criteria"), list):
        raise GateError(f"{python}: pytest_acceptance.gate_probe answered {report!r:.200}")
    return report


def discover(
    repo: Path, spec: Path, config_dir: Path, timeout: float, origin: str | None = None
) -> dict[str, Any]:
    """The probe of the first candidate interpreter that can run it (`spec`, a copy of the
    project's `origin`, read as the origin)."""
    failures = []
    read_as = (origin, str(repo)) if origin else None
    for python in candidate_pythons(repo):
        try:
            return {**probe(python, spec, config_dir, timeout, read_as), "python": python}
        except GateError as error:
            failures.append(str(error))
    raise GateError(
        "no Python interpreter that can import pytest_acceptance was found ("
        + "; ".join(failures)
        + "). Install the package into the project's .venv, or set ACCEPTANCE_GATE_PYTHON."
    )


def never_pinned(flow: Flow) -> str | None:
    """Why the gate cannot verify this flow at all: no interpreter could run
    pytest_acceptance when /implement started. Pinning one later would pin whatever the
    agent planted meanwhile (a .venv whose .pth sets PYTEST_ADDOPTS), so it never is."""
    if flow.collection is not None:
        return None
    return (
        "no Python interpreter could run pytest_acceptance when /implement started "
        f"({(flow.pin_pending or 'not recorded')[:300]}), and the gate never pins "
        "one later (the agent could have planted it). /pytest-acceptance:done cannot be "
        "verified in this flow: call /pytest-acceptance:escalate, or install the package "
        "(into the project's .venv, or set ACCEPTANCE_GATE_PYTHON) and start a new /implement"
    )


def complete_pin(flow: Flow, timeout: float) -> None:
    """Parse the pinned spec and pin the interpreter: at /implement only (pin.py)."""
    if flow.collection is not None:
        return
    report = discover(Path(flow.repo), flow.spec_copy, flow.config_folder, timeout, flow.spec_path)
    python = interpreter_paths.absolute_python(str(report["python"]))
    try:
        flow.pin_collection(Collection.from_probe(report, python))
    except DamagedCollection as error:
        raise GateError(f"{python}: pytest_acceptance.gate_probe answered {error}") from None
    taking = pins.Taking(report, GATE_NAMES, lambda: _collect(flow))
    table.take_all(flow, taking)
    flow.save()


def _collect(flow: Flow) -> pins.Collected:
    """The witness's pin: the criteria's pytest collecting at /implement."""
    found = witness.pin(flow, flow.python, clean_env)
    interpreters = {s.prefix: s.python for s in found.values() if s.prefix and s.python}
    witnessed = tuple(sorted(criterion.id for criterion in witness.witnessed_criteria(flow)))
    seen = {key for session in found.values() for key in session.distributions}
    return pins.Collected(
        tuple(sorted(interpreters.items())),
        frozenset(witness.missed_by_environment(flow, found)),
        witnessed,
        tuple(sorted(seen)) if witnessed else None,
    )
