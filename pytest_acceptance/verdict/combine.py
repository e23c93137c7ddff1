"""One result per criterion, however many times it reported: the one rule.

A criterion can report more than once in one run, in two different ways:

- **Attempts** are tries of one run of it: the criterion's own ``retries``, and
  pytest-rerunfailures' reruns (pytest counts them as "rerun", not as failed). They fold
  into one result (``attempts_result``): the last attempt decides, and a pass after a
  failed attempt is **flaky**, a pass that is never hidden.
- **Results** are what pytest reports as the criterion's outcome, each one: one per xdist
  worker under ``--dist each``, one per remote worker that ran it, one per repetition by a
  plugin that runs the item again, one per shard of ``--acceptance-merge`` that ran it.
  They combine (``combined``) whatever order they arrived in: **any failed result fails the
  criterion**; else any result that could not be verified makes it an error; else any not
  run, unticked or manual one decides; else it passed, flaky when any result was flaky.
  The combined result counts them (``Result.results``) and says what each one was.

Every output (terminal, report.md/json, verdict.json, JUnit, HTML) shows that count when it
is above one, with ``results_words``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pytest_acceptance.model import Issue, Result, Status

OUTPUT_CHARS = 4000  # of all results' output together, as much as one result keeps
_SUMMARY_CHARS = 300  # of each earlier attempt's message in the combined message
_HEADER_CHARS = 60  # room for the line that names a result in the output, and the cut mark
# The worse first: a combination takes the status of its worst result.
_RANK = (
    Status.FAILED,
    Status.ERROR,
    Status.NOT_RUN,
    Status.UNTICKED,
    Status.MANUAL,
    Status.FLAKY,
    Status.PASSED,
)
# Result.extra key: [{"source", "status"}] of each result of a combined one.
EACH = "each_result"


def attempts_result(runs: Sequence[Result], by: str = "pytest-rerunfailures") -> Result:
    """One result for successive attempts of one run of a criterion (``by`` ran it again):
    the last attempt decides, a pass after a failed attempt is flaky."""
    last = runs[-1]
    if len(runs) == 1:
        return last
    earlier = "; ".join(
        f"run {number} {result.status.value} ({_summary(result.message)})"
        for number, result in enumerate(runs[:-1], 1)
    )
    folded = replace(
        last,
        attempts=sum(result.attempts for result in runs),
        duration=sum(result.duration for result in runs),
        output=_blocks(runs, _names(runs, "run")),
    )
    if last.status.passed:
        message = f"flaky: passed on run {len(runs)} ({by}) after {earlier}"
        return replace(folded, status=Status.FLAKY, message=message)
    message = f"{last.message} ({by} ran it {len(runs)} times; {earlier})"
    return replace(folded, message=message)


def combined(results: Sequence[Result], sources: Sequence[str] = ()) -> Result:
    """One result for every result a criterion reported (``sources``: where each came
    from, "gw0", a shard's folder; "" when unknown). Any failure fails it."""
    if len(results) == 1:
        return results[0]
    labels = [s or f"result {n}" for n, s in enumerate(_padded(sources, len(results)), 1)]
    # In the order of their sources (gw0, gw1), not of arrival: the same words every run.
    ordered = sorted(zip(labels, results, strict=True), key=lambda pair: _natural(pair[0]))
    labels, results = [label for label, _ in ordered], [result for _, result in ordered]
    named = list(zip(labels, results, strict=True))
    each = [entry for label, result in named for entry in _each(result, label)]
    worst = min(results, key=lambda result: _RANK.index(result.status))
    count = sum(max(result.results, 1) for result in results)
    words = results_words(count, each)
    message = f"{worst.message} ({words})" if worst.message else words
    return replace(
        worst,
        results=count,
        attempts=sum(result.attempts for result in results),
        duration=sum(result.duration for result in results),
        issues=_issues(results, worst.status),
        output=_blocks(results, [f"{label}: {r.status.value}" for label, r in named]),
        message=message,
        extra={**worst.extra, EACH: each},
    )


def results_words(count: int, each: Sequence[Any] = ()) -> str:
    """``2 results: gw0 failed, gw1 passed`` (``each``: ``Result.extra[EACH]``)."""
    named = [
        f"{entry.get('source')} {entry.get('status')}" for entry in each if isinstance(entry, dict)
    ]
    shown = ", ".join(named[:10]) + (f", … (+{len(named) - 10})" if len(named) > 10 else "")
    return f"{count} results: {shown}" if shown else f"{count} results"


def of(result: Result) -> str:
    """``2 results: gw0 failed, gw1 passed`` for a combined result, "" for a single one."""
    if result.results <= 1:
        return ""
    return results_words(result.results, result.extra.get(EACH) or ())


def _each(result: Result, label: str) -> list[dict[str, str]]:
    inner = result.extra.get(EACH)
    if result.results > 1 and isinstance(inner, list):  # a shard's combined result
        return [
            {"source": f"{label}/{entry.get('source')}", "status": str(entry.get("status"))}
            for entry in inner
            if isinstance(entry, dict)
        ]
    return [{"source": label, "status": result.status.value}]


def _natural(label: str) -> tuple[Any, ...]:
    """``gw2`` before ``gw10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label))


def _padded(sources: Sequence[str], length: int) -> list[str]:
    return [*sources[:length], *[""] * (length - len(sources[:length]))]


def _issues(results: Sequence[Result], status: Status) -> tuple[Issue, ...]:
    """The issues of every result with the combined status, each once."""
    found: list[Issue] = []
    for result in results:
        if result.status is status:
            found += [issue for issue in result.issues if issue not in found]
    return tuple(found)


def _names(runs: Sequence[Result], noun: str) -> list[str]:
    return [f"{noun} {n} of {len(runs)}: {run.status.value}" for n, run in enumerate(runs, 1)]


def _summary(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"


def _blocks(results: Sequence[Result], names: Sequence[str]) -> str:
    """Each result's output under a line naming it, each keeping the tail of an equal share
    of the room."""
    share = max(OUTPUT_CHARS - _HEADER_CHARS * len(results), 0) // len(results)
    blocks = []
    for name, result in zip(names, results, strict=True):
        text = result.output.rstrip("\n")
        if len(text) > share:
            text = "[… earlier output cut]\n" + text[-share:]
        blocks.append(f"--- {name} ---\n{text}")
    return "\n".join(blocks)
