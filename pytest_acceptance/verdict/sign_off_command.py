"""``--acceptance-sign-off ID``: a person records a sign-off for a manual criterion.

The run verifies nothing: it finds the criterion among the run's specs, binds the record to
the criterion's text (``signoff.criterion_digest``) and writes it to the sign-offs file.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_acceptance.collect import spec_of_run
from pytest_acceptance.model import Criterion, Method, SpecError
from pytest_acceptance.options import spec_paths
from pytest_acceptance.text import display_path
from pytest_acceptance.verdict.decision import in_agent_session
from pytest_acceptance.verdict.signoff import (
    TEXT_LIMIT,
    SignOff,
    SignOffError,
    criterion_digest,
    load,
    signoffs_path,
    spec_key,
    write,
)


def sign_off_command(config: pytest.Config) -> int:
    """Record a sign-off of each criterion ``--acceptance-sign-off`` names; usage errors say
    what is wrong. Nothing runs."""
    if in_agent_session():
        raise pytest.UsageError(
            "--acceptance-sign-off records a person's check: run it yourself in a terminal, "
            "not through an agent (this run is a Claude Code tool call)"
        )

    specs = spec_paths(config)
    if not specs:
        raise pytest.UsageError("--acceptance-sign-off needs the spec: --acceptance SPEC")
    by = _who(config)
    note = " ".join(str(config.getoption("acceptance_note") or "").split())
    path = signoffs_path(config)
    try:
        current = load(path)
    except SignOffError as error:
        raise pytest.UsageError(f"sign-offs {error}") from None
    at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    records = dict(current.records)
    added = []
    for wanted in config.getoption("acceptance_sign_off"):
        spec, criterion = _find(config, specs, wanted)
        key = spec_key(config, spec)
        record = SignOff(criterion.id, key, criterion_digest(criterion), by, at, note)
        records[(key, criterion.id)] = record
        added.append(record)
    write(path, records)
    shown = display_path(path, config.rootpath)
    for record in added:
        sys.stdout.write(
            f"acceptance: {record.criterion} of {record.spec} signed off by {record.by} on "
            f"{record.day}, in {shown}: commit it with the change\n"
        )
    return 0


def _who(config: pytest.Config) -> str:
    given = " ".join(str(config.getoption("acceptance_by") or "").split())
    if given:
        return given[:TEXT_LIMIT]
    name, email = (
        _git_config(config.rootpath, "user.name"),
        _git_config(config.rootpath, "user.email"),
    )
    if not name:
        raise pytest.UsageError(
            "--acceptance-sign-off needs who signs off: --acceptance-by 'Your Name' (or set "
            "git config user.name)"
        )
    return f"{name} <{email}>" if email else name


def _git_config(folder: Path, key: str) -> str:
    try:
        done = subprocess.run(
            ["git", "config", "--get", key],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _find(config: pytest.Config, specs: list[Path], wanted: str) -> tuple[Path, Criterion]:
    """The manual criterion ``ID`` or ``spec.md::ID`` names among the run's specs."""
    named, _, ident = wanted.rpartition("::")
    base = config.invocation_params.dir
    candidates: list[tuple[Path, Criterion]] = []
    for spec in specs:
        if named and (base / named).resolve() != spec.resolve():
            continue
        try:
            criteria = spec_of_run(config, spec).criteria
        except SpecError as error:
            raise pytest.UsageError(str(error)) from None
        candidates += [(spec, c) for c in criteria if c.id == ident]
    if not candidates:
        raise pytest.UsageError(f"--acceptance-sign-off {wanted}: no such criterion in the specs")
    if len(candidates) > 1:
        where = ", ".join(f"{display_path(s, config.rootpath)}::{ident}" for s, _ in candidates)
        raise pytest.UsageError(f"--acceptance-sign-off {wanted}: name one of {where}")
    spec, criterion = candidates[0]
    if criterion.method is not Method.MANUAL:
        raise pytest.UsageError(
            f"--acceptance-sign-off {wanted}: {criterion.id} is a {criterion.method.value} "
            "criterion; only a manual criterion is signed off (the others are verified by "
            "running them)"
        )
    return spec, criterion
