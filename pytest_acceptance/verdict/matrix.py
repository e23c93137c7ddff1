"""The requirement-to-evidence matrix: each requirement of the run's specs with the criteria
that verify it, the tasks that cite it, and what this run found for each.

A requirement is what a spec format says it is (``Spec.requirements``): a Kiro requirement
and its ``1.2``s, an OpenSpec requirement and its scenarios, a user story and its
acceptance criteria, an ``FR-001`` that is its own criterion. Its status:

- ``failing``: a criterion or a citing task failed or could not be verified;
- ``unverified``: a criterion was not selected or did not run, or it has no criterion;
- ``manual``: a criterion waits for a human;
- ``verified``: every criterion passed (and every ticked task citing it).

``runnable`` says whether any of its criteria runs a command (a bash criterion): a
requirement only an agent judges, or that nothing checks, has **no runnable check**.
Pure functions over frozen data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Method, Result, Spec, Status

UNSELECTED = "unselected"  # a criterion of the spec this run did not select
_OPEN = {Status.FAILED.value, Status.ERROR.value}
_UNKNOWN = {UNSELECTED, Status.NOT_RUN.value}


@dataclass(frozen=True)
class Link:
    """A criterion or task of a requirement and its outcome in this run."""

    id: str
    spec: Path
    method: str
    status: str  # a Status value, or UNSELECTED


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    spec: Path
    line: int
    criteria: tuple[Link, ...]
    tasks: tuple[Link, ...]

    @property
    def runnable(self) -> bool:
        return any(link.method == Method.BASH.value for link in self.criteria)

    @property
    def status(self) -> str:
        ticked = [t.status for t in self.tasks if t.status != Status.UNTICKED.value]
        statuses = {link.status for link in self.criteria} | set(ticked)
        if statuses & _OPEN:
            return "failing"
        if not self.criteria or statuses & _UNKNOWN:
            return "unverified"
        if Status.MANUAL.value in statuses:
            return "manual"
        return "verified"


def build(specs: Iterable[Spec], outcomes: Iterable[tuple[Criterion, Result]]) -> tuple[Row, ...]:
    """The rows of every requirement of ``specs`` (paths resolved), in spec order."""
    from pytest_acceptance.verdict.tasks import cited_criteria

    specs = list(specs)
    found = {(c.location.path.resolve(), c.id): r.status.value for c, r in outcomes}
    by_key = {(s.path, c.id): c for s in specs for c in s.criteria}
    tasks = [c for s in specs for c in s.criteria if c.task is not None and c.task.cites]
    cited: dict[tuple[Path, str], list[Link]] = {}
    for task in tasks:
        link = _link(task, found)
        claimed = task.task.cites if task.task is not None else ()
        path = task.location.path.resolve()
        for key in {k for cite in claimed for k in cited_criteria(cite, path, specs)}:
            cited.setdefault(key, []).append(link)
    rows = []
    for spec in specs:
        for requirement in spec.requirements:
            found_keys = [
                (spec.path, ident) for ident in requirement.criteria if (spec.path, ident) in by_key
            ]
            citing = {(t.spec, t.id): t for key in found_keys for t in cited.get(key, ())}
            rows.append(
                Row(
                    requirement.id,
                    requirement.title,
                    spec.path,
                    requirement.location.line,
                    tuple(_link(by_key[key], found) for key in found_keys),
                    tuple(citing.values()),
                )
            )
    return tuple(rows)


def _link(criterion: Criterion, found: dict[tuple[Path, str], str]) -> Link:
    path = criterion.location.path.resolve()
    status = found.get((path, criterion.id), UNSELECTED)
    return Link(criterion.id, path, criterion.method.value, status)


def row_json(row: Row, shown: Callable[[Path], str]) -> dict[str, Any]:
    """A row as verdict.json and report.json hold it: flat values and lists of strings
    (``tasks`` as ``spec::id``; ``shown`` writes a path)."""
    return {
        "id": row.id,
        "title": row.title,
        "spec": shown(row.spec),
        "line": row.line,
        "status": row.status,
        "runnable": row.runnable,
        "criteria": [link.id for link in row.criteria],
        "criteria_status": [link.status for link in row.criteria],
        "tasks": [f"{shown(link.spec)}::{link.id}" for link in row.tasks],
        "tasks_status": [link.status for link in row.tasks],
    }
