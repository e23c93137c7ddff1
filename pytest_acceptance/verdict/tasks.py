"""Ticked tasks that cite requirements, decided where every result meets: the controller.

A task's own evidence (its command, its files) is checked where it runs, on any xdist
worker; the requirements it cites are verified by other criteria, which may run on other
workers at the same time. Results already travel to the controller (the recorder), so the
cited part is decided there, by ``settle``: when the task's report arrives if every cited
criterion has reported by then (tasks run last, so under ``-n 0`` they always have), else
at the end of the run. Pure functions over frozen data.

A cite names criteria by, in this order: a requirement of a spec (its criteria), a
criterion's id, or the start of criteria ids (``US1`` → ``US1-AC1``, ``3`` → ``3.1``);
specs in the task list's own folder are searched first. A cite ending in ``/`` names a
folder, relative to the task list's: every criterion of the run's specs under it (an
OpenSpec change's ``specs/``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_acceptance.model import Criterion, Issue, Result, Spec, Status
from pytest_acceptance.text import display_path, spec_location

Key = tuple[Path, str]  # (resolved spec path, criterion id)


def cited_criteria(cite: str, task_spec: Path, specs: Iterable[Spec]) -> list[Key]:
    """The criteria ``cite`` names, as (spec path, id) keys; [] when none does."""
    specs = list(specs)
    folder = task_spec.parent
    if cite.endswith("/"):
        return _by_folder((folder / cite).resolve(), task_spec, specs)
    near = [s for s in specs if s.path.parent == folder and s.path != task_spec]
    far = [s for s in specs if s.path.parent != folder]
    for group in (near, far):
        for match in (_by_requirement, _by_id, _by_prefix):
            found = [key for spec in group for key in match(cite, spec)]
            if found:
                return found
    return []


def _by_folder(folder: Path, task_spec: Path, specs: list[Spec]) -> list[Key]:
    return [
        (spec.path, c.id)
        for spec in specs
        if spec.path != task_spec and spec.path.resolve().is_relative_to(folder)
        for c in spec.criteria
        if not c.task
    ]


def _by_requirement(cite: str, spec: Spec) -> list[Key]:
    wanted = cite.casefold()
    return [
        (spec.path, ident)
        for requirement in spec.requirements
        if requirement.id.casefold() == wanted
        for ident in requirement.criteria
    ]


def _by_id(cite: str, spec: Spec) -> list[Key]:
    wanted = cite.casefold()
    return [(spec.path, c.id) for c in spec.criteria if c.id.casefold() == wanted and not c.task]


def _by_prefix(cite: str, spec: Spec) -> list[Key]:
    starts = (cite.casefold() + "-", cite.casefold() + ".")
    return [
        (spec.path, c.id)
        for c in spec.criteria
        if c.id.casefold().startswith(starts) and not c.task
    ]


def settle(
    task: Criterion,
    own: Result,
    specs: Iterable[Spec],
    selected: Mapping[Key, Criterion],
    results: Mapping[Key, Result],
    final: bool,
    rootdir: Path,
) -> Result | None:
    """The task's result once its cited criteria are known; None while one that was
    selected has not reported yet (and the run is not over: ``final``)."""
    claim = task.task
    if claim is None or not own.status.passed or not claim.decided_later:
        return own
    specs = list(specs)
    failed: list[Issue] = []
    unknown: list[str] = []
    manual: list[str] = []
    passed: list[str] = []
    spec_path = task.location.path.resolve()
    named = [(cite, cited_criteria(cite, spec_path, specs)) for cite in claim.cites]
    named += [(sub, [(spec_path, sub)]) for sub in claim.subtasks]
    advice = ""
    for cite, keys in named:
        if not keys and cite.endswith("/"):
            folder = display_path(spec_path.parent, rootdir)
            unknown.append(f"no spec of this run lies in its change's {cite}")
            advice = f"give the change's folder to --acceptance ({folder}): its {cite} decide them"
        elif not keys:
            unknown.append(f"{cite} is in no spec of this run (give its spec to --acceptance)")
        for key in keys:
            result = results.get(key)
            if key not in selected:
                unknown.append(f"cited {key[1]} was not selected in this run")
            elif result is None and not final:
                return None
            elif result is not None and result.status is Status.UNTICKED:
                failed.append(
                    Issue(
                        spec_location(selected[key], rootdir),
                        f"sub-task {key[1]} done",
                        f"sub-task {key[1]} is not ticked",
                    )
                )
            elif result is None or result.status is Status.NOT_RUN:
                unknown.append(f"cited {key[1]} did not run")
            elif result.status in (Status.FAILED, Status.ERROR):
                where = spec_location(selected[key], rootdir)
                failed.append(
                    Issue(where, f"cited {key[1]} passes", f"{key[1]} {result.status.value}")
                )
            elif result.status is Status.MANUAL:
                manual.append(key[1])
            else:
                passed.append(key[1])
    if advice:
        own = dataclasses.replace(own, extra={**own.extra, "advice": advice})
    return _decided(task, own, failed, unknown, manual, passed)


def _decided(
    task: Criterion,
    own: Result,
    failed: list[Issue],
    unknown: list[str],
    manual: list[str],
    passed: list[str],
) -> Result:
    extra = {**own.extra, "settled": True}
    if failed:
        missing = "; ".join(issue.actual for issue in failed)
        return dataclasses.replace(
            own,
            status=Status.FAILED,
            issues=(*own.issues, *failed),
            message=f"phantom completion: task {task.id} is ticked, but {missing}",
            extra=extra,
        )
    if unknown:
        why = "; ".join(dict.fromkeys(unknown))
        message = f"cannot confirm task {task.id}: {why}"
        return dataclasses.replace(own, status=Status.ERROR, message=message, extra=extra)
    if manual:
        message = (
            f"task {task.id} waits for its cited criteria that need a human: {', '.join(manual)}"
        )
        return dataclasses.replace(own, status=Status.MANUAL, message=message, extra=extra)
    message = f"{own.message}; cited criteria pass: {', '.join(passed)}"
    return dataclasses.replace(own, message=message, extra=extra)
