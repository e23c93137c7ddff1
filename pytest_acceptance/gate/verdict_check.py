"""The gate's verdict as it arrives over its pipe, checked strictly before it is believed.

Any process of the same user can open ``/proc/<pytest pid>/fd/N`` and write into the pipe
the gate reads: a prefix and a suffix around the real verdict turn it into one JSON object
whose top level the writer chose. The verdict pytest-acceptance writes has a known shape
(pytest_acceptance/verdict/decision.py ``to_json``); anything else -- an unknown key, a wrong type,
a criterion twice or never pinned, a status outside the known set -- is tampering, not a verdict.
The real fix is the sandbox or a separate user for the gate (README, Threat model).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_acceptance.gate.pinned_collection import Criterion as Pinned

TAMPERED = "the gate's result channel was tampered with"
STATUSES = {"pass", "fail", "error", "manual", "interrupted"}
CRITERION_STATUSES = {"passed", "flaky", "failed", "error", "manual", "unticked", "not_run"}
_NUMBER = (int, float)
# key -> accepted types (None allowed where the package writes null)
TOP_LEVEL: dict[str, tuple[type, ...]] = {
    "schema": (str,),
    "version": (int,),
    "status": (str,),
    "exit_code": (int,),
    "started_at": (str,),
    "finished_at": (str,),
    "started_at_epoch": _NUMBER,
    "finished_at_epoch": _NUMBER,
    "rootdir": (str,),
    "fingerprint": (str, type(None)),
    "fingerprint_after": (str, type(None)),
    "complete": (bool,),
    "specs": (list,),
    "counts": (dict,),
    "criteria": (list,),
    "problems": (list,),
}
CRITERION: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "title": (str,),
    "spec": (str,),
    "line": (int,),
    "method": (str,),
    "command": (str, type(None)),
    "pass_condition": (str, type(None)),
    "category": (str,),
    "priority": (str,),
    "status": (str,),
    "attempts": (int,),
    "results": (int,),  # how many results it combines (verdict/combine.py)
    "duration": _NUMBER,
    "message": (str,),
    "output": (str,),
    "issues": (list,),
    # Agent criteria: flat objects of numbers and flags (verdict/decision.py).
    "usage": (dict, type(None)),
    "unstable": (bool,),
    "votes": (dict, type(None)),
    # Only with a person's sign-off of a manual criterion (verdict/signoff.py).
    "sign_off": (str,),
    "signed_off_by": (str,),
    "signed_off_at": (str,),
    "sign_off_note": (str,),
}
# Written by extensions through facts.extra (pytest_acceptance.evidence.trail writes "reports").
TOP_LEVEL_OPTIONAL: dict[str, tuple[type, ...]] = {"reports": (list,)}
# Optional keys that hold one flat object (the run's agent totals).
FLAT_OBJECTS = frozenset({"agent"})
# The requirement-to-evidence matrix (pytest_acceptance/verdict/matrix.py ``row_json``): a
# list of flat objects, so the real verdict (an object holding lists of objects) cannot hide
# in it either.
REQUIREMENT_ROW: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "title": (str,),
    "spec": (str,),
    "line": (int,),
    "status": (str,),
    "runnable": (bool,),
    "criteria": (list,),
    "criteria_status": (list,),
    "tasks": (list,),
    "tasks_status": (list,),
}
SPEC_ENTRY: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "criteria_total": (int,),
    "selected": (int,),
}
# Where the spec lies in the project and its digest: what a merge of CI shards compares.
SPEC_ENTRY_OPTIONAL: dict[str, tuple[type, ...]] = {"relative": (str,), "sha256": (str,)}


def parse(
    raw: bytes, pinned_ids: list[str], pinned: Sequence[Pinned] = ()
) -> tuple[dict[str, Any] | None, str | None]:
    """(the verdict, None), (None, None) when nothing arrived, or (None, why it is not
    trusted). Exactly one JSON value, of the known shape, naming pinned ids at most once,
    each criterion run as `pinned` holds it (`unlike_the_pin`)."""
    if not raw.strip():
        return None, None
    try:
        verdict = json.loads(raw)  # one value only: trailing data raises
    except ValueError:
        return None, f"{TAMPERED} (not exactly one JSON value)"
    problem = shape_problem(verdict, pinned_ids)
    if problem is not None:
        return None, f"{TAMPERED} ({problem})"
    unlike = unlike_the_pin(verdict, pinned)
    return (verdict, None) if unlike is None else (None, unlike)


# What a criterion of the verdict must hold exactly as /implement pinned it: how it was
# verified. A run that read the spec otherwise (another runner, another command, another
# condition) verified something else under the same id.
COMPARED = ("method", "command", "pass_condition")


def unlike_the_pin(verdict: dict[str, Any], pinned: Sequence[Pinned]) -> str | None:
    """Why the verdict's criteria are not those pinned, field by field (naming the first
    criterion and field that differ), or None."""
    by_id = {criterion.id: criterion for criterion in pinned}
    for entry in verdict["criteria"]:
        expected = by_id.get(entry["id"])
        if expected is None:
            continue  # shape_problem refuses an id never pinned
        for field in COMPARED:
            if field not in entry:
                return f"the gate's run did not say the {field} of criterion {entry['id']}"
            if entry[field] != getattr(expected, field):
                return (
                    f"the gate's run verified criterion {entry['id']} with {field} "
                    f"{entry[field]!r:.200}, not the {getattr(expected, field)!r:.200} pinned at "
                    "/implement: it read the spec otherwise than /implement did, so its verdict "
                    "is not one on the pinned criteria"
                )
    return None


def shape_problem(verdict: object, pinned_ids: list[str]) -> str | None:
    if not isinstance(verdict, dict):
        return "the verdict is not a JSON object"
    known = {key: verdict[key] for key in verdict if key in TOP_LEVEL}
    problem = _fields(known, TOP_LEVEL, "the verdict", required=True)
    if problem is not None:
        return problem
    for key in sorted(set(verdict) - set(TOP_LEVEL)):
        if key == "requirements":
            problem = _requirements_problem(verdict[key])
            if problem is not None:
                return problem
            continue
        if key in FLAT_OBJECTS and _flat_object(verdict[key]):
            continue
        # A key of another version or extension holds flat values only: the real verdict (an
        # object) nested under a forged top level cannot hide there.
        if not _flat(verdict[key]) or not isinstance(
            verdict[key], TOP_LEVEL_OPTIONAL.get(key, object)
        ):
            return f"the verdict's {key!r} is not a flat value"
    if verdict["status"] not in STATUSES:
        return f"unknown verdict status {verdict['status']!r}"
    for spec in verdict["specs"]:
        problem = _fields(spec, {**SPEC_ENTRY, **SPEC_ENTRY_OPTIONAL}, "a spec entry", False)
        if problem is None and not set(SPEC_ENTRY) <= set(spec):
            problem = f"a spec entry lacks one of {sorted(SPEC_ENTRY)}"
        if problem is not None:
            return problem
    if not all(isinstance(k, str) and type(v) is int for k, v in verdict["counts"].items()):
        return "counts is not a mapping of names to integers"
    if not all(isinstance(p, str) for p in verdict["problems"]):
        return "problems is not a list of strings"
    seen: list[str] = []
    for criterion in verdict["criteria"]:
        problem = _criterion_problem(criterion)
        if problem is not None:
            return problem
        seen.append(criterion["id"])
    # Missing criteria are the judge's to name; a criterion twice or one never pinned is not
    # something pytest-acceptance writes.
    if len(seen) != len(set(seen)) or (pinned_ids and not set(seen) <= set(pinned_ids)):
        return f"criteria {sorted(seen)[:10]} are not the pinned ones, each at most once"
    return None


def _criterion_problem(criterion: object) -> str | None:
    problem = _fields(criterion, CRITERION, "a criterion", required=False)
    if problem is not None or not isinstance(criterion, dict):
        return problem or "a criterion is not an object"
    if not isinstance(criterion.get("id"), str):
        return "a criterion without an id"
    if criterion.get("status") not in CRITERION_STATUSES:
        return f"unknown criterion status {criterion.get('status')!r}"
    for key in ("usage", "votes"):
        if not _flat_object(criterion.get(key)):
            return f"a criterion's {key!r} holds more than flat values"
    for issue in criterion.get("issues") or []:
        if not isinstance(issue, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in issue.items()
        ):
            return "an issue that is not a mapping of strings"
    return None


def _requirements_problem(rows: object) -> str | None:
    if not isinstance(rows, list):
        return "the verdict's 'requirements' is not a list"
    for row in rows:
        problem = _fields(row, REQUIREMENT_ROW, "a requirement", required=True)
        if problem is not None:
            return problem
        if not all(_flat(value) for value in row.values()):
            return "a requirement holds more than flat values"
    return None


def _flat_object(value: object) -> bool:
    """None, or an object of JSON scalars."""
    return value is None or (isinstance(value, dict) and _flat(list(value.values())))


def _flat(value: object) -> bool:
    """A JSON scalar, or a list of scalars: no object anywhere inside."""
    items = value if isinstance(value, list) else [value]
    return all(item is None or isinstance(item, (str, int, float, bool)) for item in items)


def _fields(
    value: object, known: dict[str, tuple[type, ...]], what: str, required: bool
) -> str | None:
    if not isinstance(value, dict):
        return f"{what} is not an object"
    unknown = sorted(set(value) - set(known))
    if unknown:
        return f"{what} has unknown keys {unknown[:5]}"
    for key, types in known.items():
        if key not in value:
            if required:
                return f"{what} lacks {key!r}"
            continue
        item = value[key]
        if isinstance(item, bool) and bool not in types:
            return f"{what}'s {key!r} has the wrong type"
        if not isinstance(item, types):
            return f"{what}'s {key!r} has the wrong type"
    return None
