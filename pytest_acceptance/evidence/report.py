"""Assembly: the evidence on disk → report.json + report.md, deterministically.

Model → tool → model: the controller appends one fragment per result to the spec's evidence
file (fragments.py); this module — no judgement, only counting and sorting — reads that file
once and turns it into one report per spec, in spec order, with the same bytes for the same
fragments. A selected criterion without a fragment becomes an error entry (never a silent
gap); a fragment that fails validation stops the assembly (``FragmentError``, naming the
file and line).

Gap classes (MoSCoW priority against status; no test-coverage field exists here, so
"partial with/without tests" collapse into one "partial"):

- a gap is a ``failed`` or ``error`` criterion (an error could not be verified: it counts
  as fully open); ``passed``/``flaky`` are met, ``manual`` waits for a human;
- it is *partial* when it failed with issues and either fewer issues than in the previous
  report, or (agent criteria) fewer issues than it has checks — some checks held;
- High = MUST open; Medium = MUST partial, or SHOULD open; Low = SHOULD partial, COULD or
  WONT any gap. Priority never changes the verdict; it ranks the gaps.

Resolutions against a previous report, per criterion id (manual criteria take no part):
fixed, regressed, still_failing, partially_fixed (fewer issues than before), new (no
automated result in the previous report), unchanged (passed then and now), not_run
(selected but never run: -x stopped the run first; nothing is known, so no delta); ids in
the previous report that the spec no longer has are listed as removed.

A report is ``complete`` when every criterion of the spec was selected and ran: only such a
report becomes the baseline of later runs (evidence.py keeps it as ``baseline.json``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_acceptance.evidence.fragments import (
    FragmentError,
    build_fragment,
    evidence_path,
    read_evidence,
)
from pytest_acceptance.model import Criterion, Method, Priority, Result, Spec, Status
from pytest_acceptance.text import display_path
from pytest_acceptance.verdict.decision import agent_line, message_beyond_issues, plural

SCHEMA = "pytest-acceptance/report"
SCHEMA_VERSION = 1
GAP_CLASSES = ("high", "medium", "low")
RESOLUTIONS = (
    "fixed",
    "regressed",
    "still_failing",
    "partially_fixed",
    "new",
    "signed_off",  # a manual criterion a person signed off since
    "sign_off_void",  # a sign-off that stood before no longer does: the criterion changed
    "unchanged",
    "not_run",
)
# What each gap class means, said wherever a class is shown: no reader needs a legend.
GAP_MEANING = {
    "high": "a MUST not met",
    "medium": "a MUST partly met, or a SHOULD not met",
    "low": "a SHOULD partly met, or a COULD or WONT not met",
}
_RANK = {Priority.MUST.value: 0, Priority.SHOULD.value: 1}  # COULD, WONT: 2
_MET = {Status.PASSED.value, Status.FLAKY.value}
_OPEN = {Status.FAILED.value, Status.ERROR.value}


@dataclass(frozen=True)
class Expected:
    """A selected criterion: where it sits in its spec, and what the run recorded for it."""

    index: int
    criterion: Criterion
    recorded: Result


@dataclass(frozen=True)
class Previous:
    """An earlier report (the baseline of the deltas), or why it could not be used."""

    source: str
    report: dict[str, Any] | None
    reason: str = ""


def assemble(
    spec: Spec,
    expected: list[Expected],
    rootdir: Path,
    previous: Previous | None = None,
    fingerprint: str = "",
) -> dict[str, Any]:
    """The report of one spec from its evidence file on disk, read once. Raises
    ``FragmentError``."""
    problems: list[str] = []
    before = _previous_entries(previous)
    entries = []
    path = evidence_path(rootdir, spec.path)
    items = sorted(expected, key=lambda e: e.index)
    found = on_disk(spec, path, {item.index: item for item in items}, rootdir)
    where = display_path(path, rootdir)
    for item in items:
        entry = _entry(item, rootdir, problems, found.pop(item.index, None), where)
        _classify(entry, before)
        entries.append(entry)
    ids = {criterion.id for criterion in spec.criteria}
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "spec": display_path(spec.path, rootdir),
        "title": spec.title,
        "fingerprint": fingerprint,
        "criteria_total": len(spec.criteria),
        "selected": len(entries),
        "not_run": sum(e["status"] == Status.NOT_RUN.value for e in entries),
        "complete": len(entries) == len(spec.criteria)
        and all(e["status"] != Status.NOT_RUN.value for e in entries),
        "counts": {s.value: sum(e["status"] == s.value for e in entries) for s in Status},
        "gaps": {c: [e["id"] for e in entries if e["gap"] == c] for c in GAP_CLASSES},
        "previous": _previous_summary(previous),
        "resolutions": None if before is None else _resolutions(entries),
        "removed": [] if before is None else _removed(before, ids),
        "problems": problems,
        "ran_in": _ran_in(expected, rootdir),
        "criteria": entries,
        "requirements": [],  # the matrix rows of the spec's requirements (trail.py)
    }


def _ran_in(expected: list[Expected], rootdir: Path) -> list[dict[str, Any]]:
    """Where the bash commands ran: ``[{"folder": absolute, "criteria": [ids]}]``, the
    rootdir's first (a ``cwd:`` puts a command elsewhere)."""
    folders: dict[str, list[str]] = {}
    for item in sorted(expected, key=lambda e: e.index):
        if item.criterion.method is Method.BASH and item.recorded.status is not Status.NOT_RUN:
            relative = item.recorded.extra.get("cwd")
            folder = os.path.normpath(rootdir / relative) if isinstance(relative, str) else ""
            folders.setdefault(folder or str(rootdir), []).append(item.criterion.id)
    return [{"folder": folder, "criteria": ids} for folder, ids in folders.items()]


def on_disk(
    spec: Spec, path: Path, expected: dict[int, Expected], rootdir: Path
) -> dict[int, dict[str, Any]]:
    """The fragments in the spec's evidence file of the ``expected`` criteria, by their
    place in the spec (a criterion run again, as pytest-rerunfailures does, is its last
    line), in one pass over the file. A fragment that names no criterion of the spec at its
    place stops the assembly.

    A fragment equal to the one the run's own result gives is that one, built in memory:
    its strings are the run's, not thousands of copies decoded from the file."""
    found: dict[int, dict[str, Any]] = {}
    criteria = spec.criteria
    for line, fragment in read_evidence(path):
        index, ident = fragment["index"], fragment["id"]
        if index >= len(criteria) or criteria[index].id != ident:
            held = f"holds {criteria[index].id}" if index < len(criteria) else "has none"
            raise FragmentError(
                path,
                f"it names {ident} at index {index}, but the spec's place {index} {held}",
                line,
            )
        if (item := expected.get(index)) is not None:
            ours = build_fragment(item.criterion, index, item.recorded, rootdir)
            found[index] = ours if ours == fragment else fragment
    return found


def _entry(
    item: Expected,
    rootdir: Path,
    problems: list[str],
    fragment: dict[str, Any] | None,
    where: str,
) -> dict[str, Any]:
    criterion = item.criterion
    if fragment is None:
        return _missing(item, where, rootdir, problems)
    if item.recorded.extra.get("settled"):
        # A task whose cited criteria the controller checked (verdict/tasks.py): the worker's
        # fragment holds its own checks only; the settled result is the controller's fact.
        return _strip(build_fragment(criterion, item.index, item.recorded, rootdir))
    if fragment["status"] != item.recorded.status.value:
        problems.append(
            f"{criterion.id}: the fragment says {fragment['status']} but the run recorded "
            f"{item.recorded.status.value} ({where})"
        )
    return _strip(fragment)


def _missing(item: Expected, where: str, rootdir: Path, problems: list[str]) -> dict[str, Any]:
    recorded = item.recorded
    if recorded.status is Status.NOT_RUN:  # never ran, so it never left a fragment
        return _strip(build_fragment(item.criterion, item.index, recorded, rootdir))
    if recorded.status is not Status.ERROR:
        problems.append(
            f"{item.criterion.id}: the run recorded {recorded.status.value} but no evidence "
            f"fragment reached disk ({where})"
        )
    message = f"no evidence fragment on disk ({where})"
    if recorded.message:
        message += f"; the run recorded: {recorded.message}"
    result = Result(Status.ERROR, attempts=recorded.attempts, message=message)
    return _strip(build_fragment(item.criterion, item.index, result, rootdir))


def _strip(fragment: dict[str, Any]) -> dict[str, Any]:
    """The fragment as a report entry, in place (thousands of them: no copies)."""
    for key in ("schema", "version", "spec"):
        del fragment[key]
    return fragment


# --- gaps and resolutions ------------------------------------------------------------------


def _classify(entry: dict[str, Any], baseline: dict[str, dict[str, Any]] | None) -> None:
    """Add gap, partial, resolution and the previous status/issue count to an entry."""
    before = None if baseline is None else baseline.get(entry["id"])
    count = len(entry["issues"])
    earlier = len(before["issues"]) if before is not None else None
    fewer_than_before = (
        earlier is not None
        and before is not None
        and (before["status"] in _OPEN and 0 < count < earlier)
    )
    fewer_than_checks = 0 < count < entry["checks"]
    entry["partial"] = entry["status"] == Status.FAILED.value and (
        fewer_than_before or fewer_than_checks
    )
    entry["gap"] = gap_class(entry["priority"], entry["status"], entry["partial"])
    entry["previous_status"] = before["status"] if before is not None else None
    entry["previous_issues"] = earlier
    entry["resolution"] = None if baseline is None else _resolution_of(entry, count, before)


def _resolution_of(entry: dict[str, Any], issues: int, before: dict[str, Any] | None) -> str | None:
    """A sign-off made or voided since the previous report is said as such; else
    ``resolution``."""
    sign_off = entry.get("sign_off")
    state = sign_off.get("state") if isinstance(sign_off, dict) else None
    was_met = before is not None and before["status"] in _MET
    if state == "void" and was_met:
        return "sign_off_void"
    if state == "signed off" and not was_met:
        return "signed_off"
    return resolution(entry["status"], issues, before)


def gap_class(priority: str, status: str, partial: bool) -> str | None:
    if status not in _OPEN:
        return None
    return GAP_CLASSES[min(_RANK.get(priority, 2) + int(partial), 2)]


def resolution(status: str, issues: int, before: dict[str, Any] | None) -> str | None:
    """How a criterion moved since the previous report (``before``: its entry there)."""
    if status in (Status.MANUAL.value, Status.UNTICKED.value):  # nothing was verified
        return None
    if status == Status.NOT_RUN.value:
        return "not_run"
    if before is None or before["status"] == Status.MANUAL.value:
        return "new"
    was_met = before["status"] in _MET
    if status in _MET:
        return "unchanged" if was_met else "fixed"
    if was_met:
        return "regressed"
    if 0 < issues < len(before["issues"]):
        return "partially_fixed"
    return "still_failing"


def _resolutions(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {kind: [e["id"] for e in entries if e["resolution"] == kind] for kind in RESOLUTIONS}


def _removed(before: dict[str, dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    return [
        {"id": ident, "title": entry["title"], "previous_status": entry["status"]}
        for ident, entry in before.items()
        if ident not in ids
    ]


# --- the previous report --------------------------------------------------------------------


def load_previous(path: Path, rootdir: Path) -> Previous:
    """Read an earlier report.json; an unusable one means no deltas, and says why."""
    source = display_path(path, rootdir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_hook=_what_deltas_read)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return Previous(source, None, f"cannot be read as JSON ({error})")
    reason = _previous_problem(data)
    return Previous(source, None, reason) if reason else Previous(source, data)


def _what_deltas_read(value: dict[str, Any]) -> dict[str, Any]:
    """A criterion of an earlier report as the deltas read it (id, title, status, issues):
    a report of thousands of criteria is not held whole while the next one is built."""
    if "id" in value and "status" in value and "issues" in value:
        return {key: value[key] for key in _DELTA_KEYS if key in value}
    return value


_DELTA_KEYS = ("id", "title", "status", "issues")


def _previous_problem(data: Any) -> str:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return f'not a pytest-acceptance report (schema "{SCHEMA}")'
    criteria = data.get("criteria")
    if not isinstance(criteria, list) or not all(
        isinstance(c, dict)
        and isinstance(c.get("id"), str)
        and isinstance(c.get("status"), str)
        and isinstance(c.get("issues"), list)
        for c in criteria
    ):
        return "its criteria are not a list of objects with id, status and issues"
    return ""


def _previous_entries(previous: Previous | None) -> dict[str, dict[str, Any]] | None:
    if previous is None or previous.report is None:
        return None
    entries = {c["id"]: c for c in previous.report["criteria"]}
    return {ident: {"title": "", **entry} for ident, entry in entries.items()}


def _previous_summary(previous: Previous | None) -> dict[str, Any] | None:
    if previous is None:
        return None
    return {
        "source": previous.source,
        "usable": previous.report is not None,
        "reason": previous.reason,
    }


# --- the requirement-to-evidence matrix ----------------------------------------------------


def requirement_rows(verdict: Any, spec_path: Path, rootdir: Path) -> list[dict[str, Any]]:
    """The matrix rows (verdict/matrix.py) of the requirements ``spec_path`` defines."""
    from pytest_acceptance.verdict.matrix import row_json

    if verdict is None:
        return []
    wanted = spec_path.resolve()
    return [
        row_json(row, lambda path: display_path(path, rootdir))
        for row in verdict.requirements
        if row.spec == wanted
    ]


def _requirement_lines(report: dict[str, Any]) -> list[str]:
    rows = report.get("requirements") or []
    if not rows:
        return []
    lines = [
        "## Requirements and their evidence",
        "",
        "| Requirement | Status | Runnable check | Criteria | Tasks |",
        "|-------------|--------|----------------|----------|-------|",
    ]
    for row in rows:
        criteria = ", ".join(
            f"{ident} ({status})"
            for ident, status in zip(row["criteria"], row["criteria_status"], strict=True)
        )
        tasks = ", ".join(
            f"{ident} ({status})"
            for ident, status in zip(row["tasks"], row["tasks_status"], strict=True)
        )
        cells = [
            f"{row['id']}: {row['title']}",
            row["status"],
            "yes" if row["runnable"] else "**no**",
            criteria or "none",
            tasks,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    unchecked = [row["id"] for row in rows if not row["runnable"]]
    if unchecked:
        lines += ["", f"No runnable check ({len(unchecked)}): {', '.join(unchecked)}"]
    return [*lines, ""]


def report_json(report: dict[str, Any]) -> str:
    # Compact (json's C encoder only runs without indent); deterministic by construction:
    # the same fragments build the same dicts in the same order. report.md is for reading.
    return json.dumps(report, ensure_ascii=False, separators=(",", ":")) + "\n"


# --- report.md ------------------------------------------------------------------------------


def render_markdown(report: dict[str, Any]) -> str:
    """report.md: gaps by class, changes since the previous report, every criterion."""
    lines = [f"# Verification report: {report['title'] or report['spec']}", ""]
    lines += _header(report)
    lines += _gap_lines(report)
    lines += _delta_lines(report)
    if report["problems"]:
        lines += ["## Problems", "", *[f"- {p}" for p in report["problems"]], ""]
    lines += _table(report["criteria"])
    lines += _requirement_lines(report)
    lines += _sign_off_lines(report["criteria"])
    lines += _details(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _header(report: dict[str, Any]) -> list[str]:
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in report["counts"].items())
    lines = [f"- Spec: `{report['spec']}`: {report_scope(report)}", f"- Results: {counts}"]
    if ran_in := report.get("ran_in"):
        places = [f"`{place['folder']}` ({_some(place['criteria'])})" for place in ran_in]
        lines.append(f"- Commands ran in: {'; '.join(places)}")
    if report["fingerprint"]:
        lines.append(f"- Tree: `{report['fingerprint']}`")
    if spent := agent_spending(report["criteria"]):
        lines.append(f"- Agents: {spent}")
    return [*lines, ""]


def _some(ids: list[str], shown: int = 10) -> str:
    return ", ".join(ids[:shown]) + (f", … (+{len(ids) - shown})" if len(ids) > shown else "")


def agent_spending(entries: list[dict[str, Any]]) -> str:
    """What the agent criteria of these entries cost together ("" when none was judged)."""
    usages = [e["usage"] for e in entries if e.get("usage")]
    if not usages:
        return ""
    totals: dict[str, Any] = {
        key: sum(u[key] for u in usages)
        for key in ("calls", "cached", "cost_usd", "input_tokens", "output_tokens", "turns")
    }
    totals["duration"] = sum(u["duration"] for u in usages)
    totals["criteria"] = len(usages)
    totals["unstable"] = sum(bool(e.get("unstable")) for e in entries)
    return agent_line(totals)


def usage_words(usage: dict[str, Any] | None) -> str:
    """One agent criterion's cost: ``$0.0123, 900 input and 80 output tokens, 2 turns, …``."""
    if not usage:
        return ""
    if usage.get("cached"):
        return "cached pass: no agent call"
    return (
        f"${usage['cost_usd']:.4f}, {usage['input_tokens']:,} input and "
        f"{usage['output_tokens']:,} output tokens, {plural(usage['turns'], 'turn')}, "
        f"{plural(usage['calls'], 'call')}, {usage['duration']:.1f} s"
    )


def report_scope(report: dict[str, Any]) -> str:
    """``22 criteria, all ran`` or ``1 of 22 criteria selected, …: a partial run …``."""
    total, selected = report["criteria_total"], report["selected"]
    if report["complete"]:
        return f"{_criteria(total)}, all ran" if total != 1 else "1 criterion, which ran"
    scope = f"{selected} of {_criteria(total)} selected"
    if not_run := report.get("not_run", 0):
        scope += f", {selected - not_run} ran, {not_run} not run"
    return scope + ": a partial run, not a verification of the spec"


def gap_words(gap: str) -> str:
    """``high: a MUST not met``: a gap class with what it means."""
    return f"{gap}: {GAP_MEANING[gap]}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def resolution_words(kind: str) -> str:
    """A resolution as shown to people: ``still_failing`` also covers a criterion that
    ended as an error, so it reads "still open"."""
    words = {"still_failing": "still open", "sign_off_void": "sign-off void"}
    return words.get(kind, kind.replace("_", " "))


def _criteria(count: int) -> str:
    return plural(count, "criterion")


def _gap_lines(report: dict[str, Any]) -> list[str]:
    lines = ["## Gaps by priority", ""]
    entries = {e["id"]: e for e in report["criteria"]}
    if not any(report["gaps"].values()):
        return [*lines, "No gaps.", ""]
    for gap in GAP_CLASSES:
        ids = report["gaps"][gap]
        lines.append(f"### {_capital(gap_words(gap))} ({len(ids)})")
        lines += [_gap_line(entries[ident], report["spec"]) for ident in ids]
        lines.append("")
    return lines


def _gap_line(entry: dict[str, Any], spec: str) -> str:
    state = entry["status"] + (" (partial)" if entry["partial"] else "")
    line = f"- {entry['id']} [{entry['priority']}] {state}: {_cell(entry['title'])}"
    line += f" ({spec}:{entry['line']})"
    if entry["resolution"]:
        line += f", {resolution_words(entry['resolution'])}"
    return line


def _delta_lines(report: dict[str, Any]) -> list[str]:
    lines = ["## Changes since the previous report", ""]
    previous = report["previous"]
    if previous is None:
        return [*lines, f"No previous complete report. {_baseline_note(report)}", ""]
    if not previous["usable"]:
        return [
            *lines,
            f"Previous report `{previous['source']}` unusable: {previous['reason']}",
            "",
        ]
    lines.append(f"Compared with `{previous['source']}`. {_baseline_note(report)}")
    lines.append("")
    for kind, ids in report["resolutions"].items():
        if ids:
            lines.append(f"- {resolution_words(kind)} ({len(ids)}): {', '.join(ids)}")
    for removed in report["removed"]:
        lines.append(f"- removed: {removed['id']} (was {removed['previous_status']})")
    return [*lines, ""]


def _baseline_note(report: dict[str, Any]) -> str:
    if report["complete"]:
        return "This complete run is the baseline for the next run."
    return "This run was partial: the baseline stays as it was."


def _table(entries: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Criteria",
        "",
        "| # | ID | Priority | Status | Gap | Resolution | Title |",
        "|---|----|----------|--------|-----|------------|-------|",
    ]
    for entry in entries:
        cells = [
            str(entry["index"] + 1),
            entry["id"],
            entry["priority"],
            entry["status"]
            + (" (unstable)" if entry.get("unstable") else "")
            + (f" ({entry['results']} results)" if entry.get("results", 1) > 1 else ""),
            entry["gap"] or "",
            resolution_words(entry["resolution"] or ""),
            _cell(entry["title"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _sign_off_lines(entries: list[dict[str, Any]]) -> list[str]:
    """Who signed off which manual criterion, and which sign-offs an edit voided."""
    lines = []
    for entry in entries:
        facts = entry.get("sign_off")
        if not isinstance(facts, dict):
            continue
        said = f"{_cell(facts['by'])} on {facts['at'][:10]}"
        if facts["state"] == "void":
            lines.append(f"- {entry['id']}: void (by {said}): the criterion changed since")
        else:
            note = f": {_cell(facts['note'])}" if facts["note"] else ""
            lines.append(f"- {entry['id']}: signed off by {said}{note}")
    return ["## Sign-offs", "", *lines, ""] if lines else []


def _details(report: dict[str, Any]) -> list[str]:
    open_entries = [e for e in report["criteria"] if e["status"] in _OPEN]
    if not open_entries:
        return []
    lines = ["## Details of the gaps", ""]
    for entry in open_entries:
        lines.append(f"### {entry['id']}: {entry['title']}")
        lines.append(
            f"- Status: {entry['status']} after {_attempts(entry['attempts'])}"
            f"{_results(entry.get('results', 1))}, "
            f"method {entry['method']}, spec `{report['spec']}:{entry['line']}`"
        )
        for issue in entry["issues"]:
            lines.append(
                f"- Issue at `{_cell(issue['location'])}`: expected {_cell(issue['expected'])}; "
                f"actual {_cell(issue['actual'])}"
            )
        if message := message_beyond_issues(entry["message"], entry["issues"]):
            lines.append(f"- Message: {_cell(message)}")
        if spent := usage_words(entry.get("usage")):
            lines.append(f"- Agent: {spent}")
        lines.append("")
    return lines


def _attempts(count: int) -> str:
    return f"{count} attempt{'' if count == 1 else 's'}"


def _results(count: int) -> str:
    """`` in 2 results`` for a criterion that reported more than once (combine.py)."""
    return f" in {count} results" if count > 1 else ""


def _cell(text: str) -> str:
    """One line of a table cell or list item: line breaks become spaces; a run of spaces
    stays, since it may be part of what ran (``'hello   big world'``)."""
    line = " ".join(part.strip("\r") for part in str(text).split("\n") if part.strip()).strip()
    return line.replace("|", "\\|")
