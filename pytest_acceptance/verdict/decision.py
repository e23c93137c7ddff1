"""The decide stage: per-criterion outcomes → one verdict, its exit code and its texts.

Pure functions over frozen data; the recorder (recorder.py) feeds them on the controller. The
verdict rules are those of specs/implement-skill-system.md: any automated failure → the
failures only (manual criteria not mentioned); all automated pass and manual criteria exist
→ the manual ones and "escalate"; everything passes → verified, /done may follow. A
criterion that could not be verified (error) or was never run (not_run: -x stopped the run
first) can never let the verdict pass; a run that selected only some criteria (``Scope``)
says it was partial and is never called verified."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Method, Result, Status
from pytest_acceptance.text import display_path, spec_location
from pytest_acceptance.verdict.combine import of as results_of

SCHEMA = "pytest-acceptance/verdict"
SCHEMA_VERSION = 1


class ExitCode(enum.IntEnum):
    """Verdict exit codes. pytest keeps its own 2 (interrupted: Ctrl-C, a stop signal; and
    collection errors), 3 (internal error), 4 (usage error) and 5 (nothing collected)."""

    PASS = 0
    FAIL = 1
    INTERRUPTED = 2  # pytest's own
    MANUAL = 10
    ERROR = 11


class VerdictStatus(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    MANUAL = "manual"
    ERROR = "error"
    INTERRUPTED = "interrupted"  # stopped before every criterion reported: never a pass


@dataclass(frozen=True)
class Outcome:
    criterion: Criterion
    result: Result


@dataclass(frozen=True)
class Scope:
    """How much of its specs a run covered: a partial run is never a verification."""

    total: int | None = None  # criteria in the specs (None: what was selected is all)
    stopped: str = ""  # why the run stopped before every selected criterion ran


@dataclass(frozen=True)
class Verdict:
    status: VerdictStatus
    exit_code: int
    outcomes: tuple[Outcome, ...]
    problems: tuple[str, ...] = ()  # run-level errors: collection errors, interruptions, ...
    scope: Scope = Scope()
    requirements: tuple[Any, ...] = ()  # matrix.Row: each requirement and its evidence

    def with_status(self, status: VerdictStatus, exit_code: int) -> Verdict:
        return dataclasses.replace(self, status=status, exit_code=exit_code)

    @property
    def partial_selection(self) -> bool:
        """``-k``, ``-m``, ``--lf`` or node ids selected only some criteria of the specs."""
        return self.scope.total is not None and len(self.outcomes) < self.scope.total

    @property
    def complete(self) -> bool:
        """Every criterion of the specs was selected, and every selected one ran."""
        return not self.partial_selection and not self.of(Status.NOT_RUN)

    def of(self, *statuses: Status) -> list[Outcome]:
        return [o for o in self.outcomes if o.result.status in statuses]

    @property
    def counts(self) -> dict[str, int]:
        found = Counter(o.result.status.value for o in self.outcomes)
        return {status.value: found.get(status.value, 0) for status in Status}


def decide(
    outcomes: Iterable[Outcome], problems: Iterable[str] = (), scope: Scope = Scope()
) -> Verdict:
    """The one verdict. ``problems`` are run-level errors that forbid a pass; a criterion
    that was not run is unknown, so it forbids a pass too (it is never counted as verified)."""
    outcomes, problems = tuple(outcomes), tuple(problems)
    statuses = {o.result.status for o in outcomes}
    if Status.FAILED in statuses:
        return Verdict(VerdictStatus.FAIL, ExitCode.FAIL, outcomes, problems, scope)
    if statuses & {Status.ERROR, Status.NOT_RUN} or problems or not outcomes:
        if not outcomes and not problems:
            problems = ("no acceptance criteria were selected: nothing was verified",)
        return Verdict(VerdictStatus.ERROR, ExitCode.ERROR, outcomes, problems, scope)
    if Status.MANUAL in statuses:
        return Verdict(VerdictStatus.MANUAL, ExitCode.MANUAL, outcomes, problems, scope)
    return Verdict(VerdictStatus.PASS, ExitCode.PASS, outcomes, problems, scope)


# --- the human-readable verdict ("## Verification Results") ------------------------------------


def render(
    verdict: Verdict,
    rootdir: Path,
    *,
    quiet: bool = False,
    for_agent: bool | None = None,
    warning: str | None = None,
) -> str:
    """The verdict block. ``quiet`` (``-q``): passes are counted, not listed. ``for_agent``
    (default: inside a Claude Code session) picks the instructions for the agent
    over advice for a person. ``warning``: about where commands ran (rootdir.py)."""
    if for_agent is None:
        for_agent = in_agent_session()
    several = len({o.criterion.location.path for o in verdict.outcomes}) > 1
    lines = ["## Verification Results", "", *scope_lines(verdict), *where_lines(verdict, rootdir)]
    if warning:
        lines += [f"WARNING: {warning}", ""]
    failed, errors = verdict.of(Status.FAILED), verdict.of(Status.ERROR)
    passed = verdict.of(Status.PASSED, Status.FLAKY)
    manual = verdict.of(Status.MANUAL)
    lines += advice_lines(errors)  # the way out first, once, before the list
    if failed:
        lines += _section("Failed", failed, rootdir, several)
        lines += advice_lines(failed)
    if errors or verdict.problems:
        lines += _section("Errors", errors, rootdir, several, verdict.problems)
    lines += _not_run_section(verdict.of(Status.NOT_RUN))
    lines += _unticked_section(verdict.of(Status.UNTICKED))
    if passed and quiet:  # counted, not listed: a line, not an empty section
        lines += [_passed_count(passed), ""]
    elif passed:
        lines.append(f"### Passed ({len(passed)})")
        lines += _by_spec(passed, rootdir, several, lambda o: [_passed_line(o)])
        lines.append("")
    if verdict.status is VerdictStatus.MANUAL:
        lines += _manual_section(manual, rootdir, several)
    lines.append(next_step(verdict, for_agent))
    return "\n".join(lines) + "\n"


def where_lines(verdict: Verdict, rootdir: Path) -> list[str]:
    """Where the bash commands ran: the rootdir, and the folders of those with a ``cwd:``
    (``Result.extra["cwd"]``, relative to the rootdir), each folder absolute."""
    by_folder: dict[str, list[str]] = {}
    for outcome in verdict.outcomes:
        if outcome.criterion.method is Method.BASH:
            folder = outcome.result.extra.get("cwd")
            by_folder.setdefault(folder if isinstance(folder, str) else ".", []).append(
                outcome.criterion.id
            )
    if not by_folder:
        return []
    places = [f"{rootdir} (the rootdir)"] if "." in by_folder else []
    for folder, ids in by_folder.items():
        if folder != ".":
            named = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
            places.append(f"{os.path.normpath(rootdir / folder)} ({named}: cwd)")
    return [f"Commands ran in {'; '.join(places)}.", ""]


def in_agent_session() -> bool:
    """Whether the run is a tool call of a Claude Code session (the CLI sets CLAUDECODE=1
    in its tools' environment): the reader of the verdict is then the agent."""
    return os.environ.get("CLAUDECODE") == "1"


def _by_spec(
    outcomes: list[Outcome],
    rootdir: Path,
    several: bool,
    entry: Callable[[Outcome], list[str]],
) -> list[str]:
    """The entries, under a line naming their spec when the run has several specs."""
    lines: list[str] = []
    spec: Path | None = None
    for outcome in outcomes:
        if several and outcome.criterion.location.path != spec:
            spec = outcome.criterion.location.path
            lines.append(f"{display_path(spec, rootdir)}:")
        lines += entry(outcome)
    return lines


def _section(
    name: str,
    outcomes: list[Outcome],
    rootdir: Path,
    several: bool,
    problems: tuple[str, ...] = (),
) -> list[str]:
    lines = [f"### {name} ({len(outcomes) + len(problems)})"]
    lines += _by_spec(outcomes, rootdir, several, lambda o: _failure_entry(o, rootdir))
    lines += [f"- {_indent(problem, '  ')}" for problem in problems]
    return [*lines, ""]


def _failure_entry(outcome: Outcome, rootdir: Path) -> list[str]:
    criterion, result = outcome.criterion, outcome.result
    lines = [f"- {criterion.id}: {criterion.title}", f"  Method: {criterion.method_detail}"]
    spec = spec_location(criterion, rootdir)
    if result.issues and all(issue.location != spec for issue in result.issues):
        lines.append(f"  Spec: {spec}")
    for issue in result.issues:
        lines += [
            f"  Location: {issue.location}",
            f"  Expected: {_indent(issue.expected)}",
            f"  Actual: {_indent(issue.actual)}",
        ]
    if not result.issues:
        lines.append(f"  Location: {spec}")
    if unstable := unstable_note(result):
        lines.append(f"  Unstable: {unstable.removeprefix('unstable: ')}; the judges disagree")
    message = message_beyond_issues(result.message, result.issues)
    if result.status is Status.ERROR and message:
        lines.append(f"  Error: {_indent(message)}")
    elif message:
        lines.append(f"  Note: {_indent(message)}")
    if result.output.strip():  # pytest's FAILURES section shows one line: the rest is here
        lines += ["  Output (last lines):", f"    {_indent(result.output, '    ')}"]
    return lines


def advice_lines(outcomes: list[Outcome]) -> list[str]:
    """The way out several errors or failures share (``Result.extra["advice"]``: no agent
    configured, a ticked task with no evidence), once for all of them rather than once per
    criterion."""
    shared: dict[str, list[str]] = {}
    for outcome in outcomes:
        advice = outcome.result.extra.get("advice")
        if isinstance(advice, str) and advice.strip():
            shared.setdefault(advice.strip(), []).append(outcome.criterion.id)
    lines = []
    for advice, ids in shared.items():
        named = ", ".join(ids[:_NAMED_IDS]) + (
            f", … ({len(ids)} criteria)" if len(ids) > _NAMED_IDS else ""
        )
        first, *rest = advice.splitlines()
        lines += [f"{named}: {first}", *(f"  {line}" for line in rest), ""]
    return lines


_NAMED_IDS = 6  # ids named before an advice; more are counted


def message_beyond_issues(message: str, issues: Iterable[Any]) -> str:
    """What a result's message says beyond its issues: a bash failure's message restates
    its one issue (``expected …; found …``) and an error's often is its issue's ``actual``,
    which a reader should not get twice. Issues are ``Issue`` objects or report dicts."""
    rest = message.strip()
    for issue in issues:
        expected, actual = _issue_field(issue, "expected"), _issue_field(issue, "actual")
        restated = f"expected {expected}; found {actual}"
        if rest.startswith(restated):
            rest = rest[len(restated) :].strip()
        elif rest == actual.strip():
            rest = ""
    return rest


def _issue_field(issue: Any, name: str) -> str:
    return str(issue[name] if isinstance(issue, dict) else getattr(issue, name))


def _passed_line(outcome: Outcome) -> str:
    line = f"- {outcome.criterion.id}: {outcome.criterion.title} ✓"
    if outcome.result.status is Status.FLAKY:
        failures = outcome.result.attempts - 1
        line += f" (flaky: passed after {plural(failures, 'failed attempt')})"
    if signed := sign_off_words(outcome.result):
        line += f" ({signed})"
    if unstable := unstable_note(outcome.result):
        line += f" ({unstable})"
    if several := results_of(outcome.result):
        line += f" ({several})"
    return line


def _passed_count(passed: list[Outcome]) -> str:
    """``3 passed``, naming those that passed only on a retry or by a person's sign-off
    (``-q`` lists no passes, and these are the ones a reader would want to know of)."""
    flaky = [o.criterion.id for o in passed if o.result.status is Status.FLAKY]
    signed = [o.criterion.id for o in passed if sign_off_words(o.result)]
    notes = [
        f"{label}: {', '.join(ids)}"
        for label, ids in (("flaky", flaky), ("signed off", signed))
        if ids
    ]
    return f"{len(passed)} passed" + (f" ({'; '.join(notes)})" if notes else "")


def sign_off_words(result: Result) -> str:
    """``signed off by Ada on 2026-05-01`` or ``the sign-off by Ada on 2026-05-01 is void: the
    criterion changed since`` ("" without one): the phrase the verdict, the report and the
    HTML page show (verdict/signoff.py puts the facts in ``Result.extra["sign_off"]``)."""
    facts = result.extra.get("sign_off")
    if not isinstance(facts, dict):
        return ""
    by, day = facts.get("by", "?"), str(facts.get("at", ""))[:10]
    if facts.get("state") == "void":
        return f"the sign-off by {by} on {day} is void: the criterion changed since"
    return f"signed off by {by} on {day}"


def unstable_note(result: Result) -> str:
    """``unstable: 2 of 3 judges passed`` when an agent criterion's judges disagreed."""
    votes = result.extra.get("votes")
    if not result.extra.get("unstable") or not isinstance(votes, dict):
        return ""
    return f"unstable: {votes.get('passed')} of {votes.get('judges')} judges passed"


def _manual_section(manual: list[Outcome], rootdir: Path, several: bool) -> list[str]:
    lines = [f"### Manual verification required ({len(manual)})"]
    lines += _by_spec(manual, rootdir, several, lambda o: _manual_entry(o, rootdir))
    return [*lines, ""]


def _manual_entry(outcome: Outcome, rootdir: Path) -> list[str]:
    criterion = outcome.criterion
    lines = [f"- {criterion.id}: {criterion.title}"]
    lines.append(f"  Location: {spec_location(criterion, rootdir)}")
    if criterion.description:
        lines.append(f"  Description: {_indent(criterion.description)}")
    facts = outcome.result.extra.get("sign_off")
    if isinstance(facts, dict):
        lines.append(
            f"  Sign-off: by {facts.get('by')} on {str(facts.get('at'))[:10]}, void: the "
            "criterion changed since; check it again and sign it off again"
        )
    return lines + [f"  Check: {check}" for check in criterion.checks]


def next_step(verdict: Verdict, for_agent: bool) -> str:
    """What the reader does next: the instructions for the agent, else advice for a
    person (who has no /verify or /escalate to call)."""
    passed = len(verdict.of(Status.PASSED, Status.FLAKY))
    manual = len(verdict.of(Status.MANUAL))
    if verdict.partial_selection and verdict.status in (VerdictStatus.PASS, VerdictStatus.MANUAL):
        return _partial_next_step(passed, manual)
    if verdict.status is VerdictStatus.FAIL:
        if for_agent:
            return "Continue working on failed criteria, then call /verify again."
        failed = len(verdict.of(Status.FAILED))
        return (
            f"Not verified: {failed} of {plural(len(verdict.outcomes), 'criterion')} "
            "failed. Fix what is listed above, then run the same pytest command again."
        )
    if verdict.status is VerdictStatus.INTERRUPTED:
        again = "call /verify again" if for_agent else "run the same pytest command again"
        finished = len(verdict.outcomes) - len(verdict.of(Status.NOT_RUN))
        return (
            f"Verdict: INTERRUPTED. The run was stopped (this is not a pass); "
            f"{plural(finished, 'criterion')} finished and {_verb(finished, 'is', 'are')} "
            f"listed above. To verify the spec, {again}."
        )
    if verdict.status is VerdictStatus.ERROR:
        again = "call /verify again" if for_agent else "run the same pytest command again"
        return (
            "Verdict: ERROR. The criteria above could not be verified (this is not a pass): "
            f"fix the cause named for each, then {again}."
        )
    if verdict.status is VerdictStatus.MANUAL:
        automated = (
            f"{_all(passed, 'automated criterion')} {_verb(passed, 'passes', 'pass')}"
            if passed
            else "No automated criteria were selected"
        )
        if for_agent:
            waiting = f"{manual} {_verb(manual, 'needs', 'need')} a human"
            evidence = "Call /escalate with the manual criteria above as the evidence."
            return f"{automated}; {waiting}. {evidence}"
        first = verdict.of(Status.MANUAL)[0].criterion.id
        return (
            f"{automated}; {plural(manual, 'criterion')} {_verb(manual, 'needs', 'need')} a "
            "person: check the list above by hand, then record each check by adding "
            f"--acceptance-sign-off {first} --acceptance-by 'Your Name' to this pytest command "
            "(a signed-off criterion counts as passed)."
        )
    verified = f"{_all(passed, 'criterion')} {_verb(passed, 'passes', 'pass')}: verified."
    return f"{verified} /done may follow." if for_agent else verified


def plural(count: int, noun: str) -> str:
    plurals = {"criterion": "criteria", "automated criterion": "automated criteria"}
    return f"{count} {noun if count == 1 else plurals.get(noun, noun + 's')}"


def _all(count: int, noun: str) -> str:
    """ "All 3 criteria", but "1 criterion"."""
    return plural(count, noun) if count == 1 else f"All {plural(count, noun)}"


def _verb(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


# --- partial runs: a subset of the criteria is never a verification of the spec --------------


def scope_lines(verdict: Verdict) -> list[str]:
    """Say so when a run was partial: some criteria not selected, or selected but not run."""
    lines = []
    if verdict.partial_selection:
        lines.append(
            f"{len(verdict.outcomes)} of {verdict.scope.total} criteria selected: "
            "not a verification of the spec."
        )
    if not_run := verdict.of(Status.NOT_RUN):
        why = f" ({verdict.scope.stopped})" if verdict.scope.stopped else ""
        lines.append(
            f"{len(not_run)} of {len(verdict.outcomes)} selected criteria not run{why}: "
            "nothing is known about them."
        )
    return [*lines, ""] if lines else []


def _unticked_section(unticked: list[Outcome]) -> list[str]:
    """Tasks the task list does not claim done: listed, neither a pass nor a failure."""
    if not unticked:
        return []
    lines = [f"### Unticked tasks ({len(unticked)}): listed, not claimed done"]
    lines += [f"- {o.criterion.id}: {o.criterion.title}" for o in unticked]
    return [*lines, ""]


def _not_run_section(not_run: list[Outcome]) -> list[str]:
    if not not_run:
        return []
    lines = [f"### Not run ({len(not_run)})"]
    lines += [f"- {o.criterion.id}: {o.criterion.title}" for o in not_run]
    return [*lines, ""]


def _partial_next_step(passed: int, manual: int) -> str:
    """A partial pass: the selection passes, the spec is not verified."""
    found = []
    if passed:
        found.append(f"{passed} selected {_verb(passed, 'criterion passes', 'criteria pass')}")
    if manual:
        found.append(f"{manual} {_verb(manual, 'needs', 'need')} a human")
    return (
        f"{' and '.join(found)}, but this run was partial: the spec is not verified. "
        "Run every criterion (no -k, -m, --lf, --sw or node ids) to verify it."
    )


def _indent(text: str, by: str = "    ") -> str:
    return text.strip().replace("\n", "\n" + by)


# --- the machine-readable verdict ----------------------------------------------------------


@dataclass(frozen=True)
class RunFacts:
    """What the recorder knows about the run around the verdict."""

    rootdir: Path
    started_at: float
    finished_at: float
    fingerprint: str
    fingerprint_after: str
    specs: tuple[dict[str, Any], ...]  # {"path", "criteria_total", "selected"}
    # The run that wrote the verdict: a reader tells a stale verdict.json from its own run's.
    pid: int = 0
    args: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def to_json(verdict: Verdict, facts: RunFacts) -> dict[str, Any]:
    from datetime import datetime, timezone

    def iso(epoch: float) -> str:
        return datetime.fromtimestamp(epoch, timezone.utc).isoformat()

    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "status": verdict.status.value,
        "exit_code": int(verdict.exit_code),
        "started_at": iso(facts.started_at),
        "finished_at": iso(facts.finished_at),
        "started_at_epoch": facts.started_at,
        "finished_at_epoch": facts.finished_at,
        "rootdir": str(facts.rootdir),
        "run_pid": facts.pid,
        "run_args": list(facts.args),
        "fingerprint": facts.fingerprint,
        "fingerprint_after": facts.fingerprint_after,
        "complete": verdict.complete
        and bool(facts.specs)
        and all(s["selected"] == s["criteria_total"] for s in facts.specs),
        "specs": list(facts.specs),
        "counts": verdict.counts,
        "criteria": [
            _criterion_json(o, _resolved(o.criterion.location.path)) for o in verdict.outcomes
        ],
        "problems": list(verdict.problems),
        **_requirements_json(verdict),
        "agent": agent_totals(verdict.outcomes),
        **facts.extra,
    }


def _requirements_json(verdict: Verdict) -> dict[str, Any]:
    """The requirement-to-evidence matrix, when the specs have requirements."""
    if not verdict.requirements:
        return {}
    from pytest_acceptance.verdict.matrix import row_json

    rows = [row_json(row, _resolved) for row in verdict.requirements]
    unchecked = [f"{row['spec']}::{row['id']}" for row in rows if not row["runnable"]]
    return {"requirements": rows, "requirements_without_runnable_check": unchecked}


def agent_totals(outcomes: Iterable[Outcome]) -> dict[str, Any] | None:
    """What the run's agent criteria cost together (None: the run judged none)."""
    spent = [o.result.extra["usage"] for o in outcomes if agent_usage(o.result)]
    if not spent:
        return None
    unstable = sum(bool(o.result.extra.get("unstable")) for o in outcomes)
    return {
        "criteria": len(spent),
        "calls": sum(int(a.get("calls", 0)) for a in spent),
        "cached": sum(bool(a.get("cached")) for a in spent),
        "cost_usd": round(sum(float(a.get("cost_usd", 0.0)) for a in spent), 6),
        "input_tokens": sum(int(a.get("input_tokens", 0)) for a in spent),
        "output_tokens": sum(int(a.get("output_tokens", 0)) for a in spent),
        "turns": sum(int(a.get("turns", 0)) for a in spent),
        "duration": round(sum(float(a.get("duration", 0.0)) for a in spent), 3),
        "unstable": unstable,
    }


def agent_usage(result: Result) -> dict[str, Any] | None:
    """What judging an agent criterion cost: calls, cached, cost_usd, tokens, turns, duration."""
    usage = result.extra.get("usage")
    return usage if isinstance(usage, dict) else None


def agent_line(totals: dict[str, Any]) -> str:
    """One line of a run's agent totals, for the terminal and the reports."""
    line = (
        f"{plural(totals['calls'], 'agent call')} for {plural(totals['criteria'], 'criterion')}"
        f" ({totals['cached']} cached), ${totals['cost_usd']:.4f}, "
        f"{totals['input_tokens']:,} input and {totals['output_tokens']:,} output tokens, "
        f"{plural(totals['turns'], 'turn')}, {totals['duration']:.1f} s"
    )
    if totals.get("unstable"):
        line += f", {totals['unstable']} unstable"
    return line


def send_verdict(fd: int | None, data: dict[str, Any]) -> None:
    """Write the verdict JSON to an inherited descriptor (``--acceptance-verdict-fd``), then
    close it: the reader (the Claude Code gate) takes end of file as the end of the verdict."""
    if fd is None:
        return
    payload = (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        with open(fd, "wb", closefd=True) as channel:
            channel.write(payload)
    except OSError:
        pass  # the reader is gone or the fd is not ours: the reader reports "no verdict"


@functools.lru_cache(maxsize=64)
def _resolved(path: Path) -> str:
    return str(path.resolve())  # a realpath per criterion costs more than the rest of it


def _criterion_json(outcome: Outcome, spec: str) -> dict[str, Any]:
    criterion, result = outcome.criterion, outcome.result
    return {
        "id": criterion.id,
        "title": criterion.title,
        "spec": spec,
        "line": criterion.location.line,
        "method": criterion.method.value,
        # What ran and what it had to show: the gate compares them with what it pinned.
        "command": criterion.command,
        "pass_condition": criterion.pass_condition,
        "category": criterion.category,
        "priority": criterion.priority.value,
        "status": result.status.value,
        "attempts": result.attempts,
        "results": result.results,  # more than one: combined (verdict/combine.py)
        "duration": round(result.duration, 3),
        "message": result.message,
        "output": result.output,
        "issues": [issue.to_dict() for issue in result.issues],
        # Agent criteria: what judging cost, and the judges' votes (None otherwise).
        "usage": agent_usage(result),
        "unstable": bool(result.extra.get("unstable")),
        "votes": result.extra.get("votes"),
        **_sign_off_json(result),
    }


def for_the_gate(data: dict[str, Any]) -> dict[str, Any]:
    """The verdict as the Claude Code gate reads it over its pipe: each judge's answer left
    out of a criterion's votes (the gate reads flat values only; verdict.json keeps them)."""
    criteria = []
    for criterion in data.get("criteria", []):
        votes = criterion.get("votes")
        if isinstance(votes, dict):
            votes = {key: value for key, value in votes.items() if key != "answers"}
        criteria.append({**criterion, "votes": votes})
    return {**data, "criteria": criteria}


def _sign_off_json(result: Result) -> dict[str, str]:
    """A person's sign-off of a manual criterion, as flat fields (the Claude Code gate reads
    the verdict strictly: no nested objects)."""
    facts = result.extra.get("sign_off")
    if not isinstance(facts, dict):
        return {}
    return {
        "sign_off": str(facts.get("state", "")),
        "signed_off_by": str(facts.get("by", "")),
        "signed_off_at": str(facts.get("at", "")),
        "sign_off_note": str(facts.get("note", "")),
    }
