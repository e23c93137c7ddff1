"""The HTML report (``--acceptance-html PATH``): one self-contained page a reviewer opens.

One file with inline CSS, no scripts, no fetched resources (a Content-Security-Policy says
so to the browser too), readable offline. Everything that comes from a spec or a criterion's
run is text from an adversary: terminal escapes are dropped, control characters shown as
symbols, and the rest HTML-escaped, so no output can break out of its element.

Pure: a ``Verdict`` and the assembled reports (report.py) in, a string out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_acceptance.evidence.report import (
    gap_words,
    report_scope,
    resolution_words,
    usage_words,
)
from pytest_acceptance.model import Status
from pytest_acceptance.text import display_path, spec_location
from pytest_acceptance.verdict.combine import of as results_of
from pytest_acceptance.verdict.decision import (
    Outcome,
    Verdict,
    VerdictStatus,
    agent_line,
    agent_totals,
    message_beyond_issues,
    scope_lines,
    sign_off_words,
    unstable_note,
)

OUTPUT_LINES = 60  # of a criterion's output tail
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_OPEN = (Status.FAILED, Status.ERROR)

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
color:#1d2230;background:#f5f6f8}
main{max-width:1100px;margin:0 auto;padding:0 20px 40px}
header{padding:22px 20px;color:#fff}
header h1{margin:0 0 6px;font-size:24px}
header p{margin:4px 0}
.pass{background:#1e7d3c}.fail{background:#b3261e}.error{background:#8a3b00}
.manual{background:#2857a4}.partial{background:#7a5a00}
.badge{display:inline-block;padding:1px 8px;border-radius:4px;font-size:12px;
font-weight:600;color:#fff;background:#6b7280;white-space:nowrap}
.badge.passed{background:#1e7d3c}.badge.flaky{background:#a86b00}
.badge.failed{background:#b3261e}.badge.error{background:#8a3b00}
.badge.manual{background:#2857a4}.badge.not_run{background:#6b7280}
.badge.unticked{background:#6b7280}.badge.verified{background:#1e7d3c}
.badge.failing{background:#b3261e}.badge.unverified{background:#8a5a00}
.badge.unselected{background:#6b7280}.norun{color:#b3261e;font-weight:600}
section{background:#fff;border:1px solid #d9dce3;border-radius:6px;margin:18px 0;
padding:14px 18px}
h2{font-size:19px;margin:0 0 8px}h3{font-size:16px;margin:14px 0 6px}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e6eb;vertical-align:top}
th{background:#eef0f4;font-weight:600}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{background:#161b22;color:#e6edf3;padding:10px;border-radius:4px;white-space:pre-wrap;
word-break:break-word;max-height:420px;overflow:auto}
details{border-top:1px solid #e4e6eb;padding:6px 0}
summary{cursor:pointer;font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
dt{color:#5b6272}dd{margin:0}
.muted{color:#5b6272}.scope{font-weight:600}
ul{margin:4px 0;padding-left:22px}
"""

_HEAD = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta http-equiv="Content-Security-Policy" '
    "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
)


def text(value: object) -> str:
    """Adversarial text → safe HTML text: no terminal escapes, control characters shown as
    ``\\x00``, lone surrogates (which UTF-8 cannot encode) as U+FFFD."""
    cleaned = _ANSI.sub("", str(value))
    return html.escape(_CONTROL.sub(_visible, cleaned), quote=True)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return "\ufffd" if code > 0xFF else f"\\x{code:02x}"  # a NUL reads as \x00


def render_html(
    verdict: Verdict, reports: Iterable[dict[str, Any]], rootdir: Path, finished: float = 0.0
) -> str:
    by_spec = {report["spec"]: report for report in reports}
    title = f"Acceptance: {verdict.status.value.upper()}"
    parts = [_HEAD, f"<title>{text(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"]
    parts.append(_banner(verdict, finished))
    parts.append("<main>\n")
    if verdict.problems:
        items = "".join(f"<li>{text(problem)}</li>" for problem in verdict.problems)
        parts.append(f'<section id="problems"><h2>Problems</h2><ul>{items}</ul></section>\n')
    for spec, outcomes in group_by_spec(verdict.outcomes, rootdir).items():
        parts.append(_spec_section(spec, outcomes, by_spec.get(spec), rootdir))
    parts.append("</main>\n</body>\n</html>\n")
    return "".join(parts)


def headline(verdict: Verdict) -> str:
    """What the run means, in a few words."""
    counts = verdict.counts
    if verdict.status is VerdictStatus.PASS:
        if verdict.partial_selection:
            return "The selected criteria pass; this partial run is not a verification"
        return "Verified: every criterion passed"
    if verdict.status is VerdictStatus.FAIL:
        return f"{_count(counts['failed'], 'criterion')} failed"
    if verdict.status is VerdictStatus.MANUAL:
        manual = counts["manual"]
        return f"Automated criteria pass; {_count(manual, 'criterion')} {_verb(manual)} a human"
    return "Not verified: the run could not verify every criterion"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun if number == 1 else 'criteria'}"


def _verb(number: int) -> str:
    return "needs" if number == 1 else "need"


def _banner(verdict: Verdict, finished: float) -> str:
    status = verdict.status.value
    partial = verdict.partial_selection and verdict.status is not VerdictStatus.FAIL
    colour = "partial" if partial else status  # a partial pass must not look verified
    counts = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in verdict.counts.items() if n)
    lines = [
        f'<header class="{colour}"><h1>{text(status.upper())}: {text(headline(verdict))}</h1>',
        f"<p>exit code {int(verdict.exit_code)} · {text(counts or 'no criteria')}</p>",
    ]
    lines += [f'<p class="scope">{text(line)}</p>' for line in scope_lines(verdict) if line]
    if totals := agent_totals(verdict.outcomes):
        lines.append(f"<p>agents: {text(agent_line(totals))}</p>")
    if finished:
        when = datetime.fromtimestamp(finished, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        lines.append(f"<p>finished {text(when)}</p>")
    return "\n".join(lines) + "</header>\n"


def group_by_spec(outcomes: Iterable[Outcome], rootdir: Path) -> dict[str, list[Outcome]]:
    grouped: dict[str, list[Outcome]] = {}
    shown: dict[Path, str] = {}
    for outcome in outcomes:
        path = outcome.criterion.location.path
        if path not in shown:
            shown[path] = display_path(path, rootdir)
        grouped.setdefault(shown[path], []).append(outcome)
    return grouped


def _spec_section(
    spec: str, outcomes: list[Outcome], report: dict[str, Any] | None, rootdir: Path
) -> str:
    entries = {e["id"]: e for e in report["criteria"]} if report else {}
    name = f"{spec}: {report['title']}" if report and report["title"] else spec
    parts = [f"<section><h2>{text(name)}</h2>\n"]
    if report:
        parts.append(f"<p>{text(report_scope(report))}</p>\n")
        places = [f"{p['folder']} ({', '.join(p['criteria'])})" for p in report.get("ran_in", ())]
        if places:
            parts.append(f"<p>Commands ran in {text('; '.join(places))}</p>\n")
        parts.append(_gaps(report) + _deltas(report))
    else:
        parts.append('<p class="muted">No report was assembled for this run.</p>\n')
    parts.append(_table(outcomes, entries, rootdir))
    if report and report.get("requirements"):
        parts.append(_requirements(report["requirements"]))
    parts += [_details(o, entries.get(o.criterion.id, {}), rootdir) for o in outcomes]
    return "".join(parts) + "</section>\n"


def _gaps(report: dict[str, Any]) -> str:
    gaps = [(k, ids) for k, ids in report["gaps"].items() if ids]
    if not gaps:
        return "<p>Gaps: none.</p>\n"
    items = "".join(f"<li>{text(gap_words(k))} ({len(ids)}): {_ids(ids)}</li>" for k, ids in gaps)
    return f"<h3>Gaps by priority</h3><ul>{items}</ul>\n"


def _deltas(report: dict[str, Any]) -> str:
    previous = report["previous"]
    if previous is None:
        return '<p class="muted">No previous complete report to compare with.</p>\n'
    if not previous["usable"]:
        why = f"{previous['source']}: {previous['reason']}"
        return f"<p>No deltas: previous report {text(why)}</p>\n"
    items = [
        f"<li>{text(resolution_words(kind))} ({len(ids)}): {_ids(ids)}</li>"
        for kind, ids in report["resolutions"].items()
        if ids
    ]
    items += [
        f"<li>removed: {text(r['id'])} (was {text(r['previous_status'])})</li>"
        for r in report["removed"]
    ]
    source = f"<code>{text(previous['source'])}</code>"
    return f"<h3>Since the previous report ({source})</h3><ul>{''.join(items)}</ul>\n"


def _ids(ids: list[str]) -> str:
    return ", ".join(f'<a href="#c-{text(ident)}">{text(ident)}</a>' for ident in ids)


def _table(outcomes: list[Outcome], entries: dict[str, Any], rootdir: Path) -> str:
    rows = ["<table><thead><tr><th>ID</th><th>Title</th><th>Priority</th><th>Status</th>"]
    rows.append("<th>Gap</th><th>Change</th><th>Location</th></tr></thead><tbody>")
    for outcome in outcomes:
        criterion, entry = outcome.criterion, entries.get(outcome.criterion.id, {})
        gap = (entry.get("gap") or "") + (" (partial)" if entry.get("partial") else "")
        cells = [
            f'<a href="#c-{text(criterion.id)}">{text(criterion.id)}</a>',
            text(criterion.title),
            text(criterion.priority.value),
            _badge(outcome.result.status) + _unstable(outcome.result),
            text(gap),
            text(resolution_words(entry.get("resolution") or "")),
            f"<code>{text(spec_location(criterion, rootdir))}</code>",
        ]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    return "".join(rows) + "</tbody></table>\n"


def _requirements(rows: list[dict[str, Any]]) -> str:
    """The requirement-to-evidence matrix of one spec: each requirement, its criteria and
    the tasks citing it with their outcomes, and whether anything runnable checks it."""
    parts = ["<h3>Requirements and their evidence</h3>"]
    parts.append("<table><thead><tr><th>Requirement</th><th>Status</th><th>Runnable check</th>")
    parts.append("<th>Criteria</th><th>Tasks</th></tr></thead><tbody>")
    for row in rows:
        links = zip(row["criteria"], row["criteria_status"], strict=True)
        criteria = ", ".join(f'<a href="#c-{text(i)}">{text(i)}</a> {_word(s)}' for i, s in links)
        tasks = ", ".join(
            f"{text(i)} {_word(s)}" for i, s in zip(row["tasks"], row["tasks_status"], strict=True)
        )
        runnable = "yes" if row["runnable"] else '<span class="norun">no runnable check</span>'
        cells = [
            f"{text(row['id'])}: {text(row['title'])}",
            _word(row["status"]),
            runnable,
            criteria or "none",
            tasks,
        ]
        parts.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    parts.append("</tbody></table>\n")
    unchecked = [row["id"] for row in rows if not row["runnable"]]
    if unchecked:
        parts.append(
            f'<p class="norun">No runnable check ({len(unchecked)}): '
            f"{text(', '.join(unchecked))}</p>\n"
        )
    return "".join(parts)


def _word(status: str) -> str:
    css = re.sub(r"[^a-z_]", "", status)
    return f'<span class="badge {css}">{text(status.replace("_", " "))}</span>'


def _unstable(result: Any) -> str:
    """A badge that a criterion's judges disagreed: like flaky, never hidden."""
    return ' <span class="badge flaky">unstable</span>' if unstable_note(result) else ""


def _badge(status: Status) -> str:
    return f'<span class="badge {status.value}">{text(status.value.replace("_", " "))}</span>'


def _details(outcome: Outcome, entry: dict[str, Any], rootdir: Path) -> str:
    criterion, result = outcome.criterion, outcome.result
    is_open = " open" if result.status in _OPEN else ""
    facts = [
        ("Method", criterion.method_detail),
        ("Spec", spec_location(criterion, rootdir)),
        ("Category", criterion.category),
        ("Attempts", f"{result.attempts} in {result.duration:.2f} s"),
        ("Results", results_of(result)),
    ]
    if entry.get("previous_status"):
        facts.append(("Before", entry["previous_status"]))
    if signed := sign_off_words(result):
        note = result.extra["sign_off"].get("note")
        facts.append(("Sign-off", f"{signed}: {note}" if note else signed))

    facts.append(("Agent", usage_words(entry.get("usage"))))
    facts.append(("Judges", unstable_note(result)))
    rows = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in facts if v)
    parts = [
        f'<details id="c-{text(criterion.id)}"{is_open}><summary>{text(criterion.id)}: '
        f"{text(criterion.title)} {_badge(result.status)}{_unstable(result)}</summary>"
        f"<dl>{rows}</dl>"
    ]
    if criterion.description:
        parts.append(f"<p>{text(criterion.description)}</p>")
    if criterion.checks:
        parts.append("<ul>" + "".join(f"<li>{text(c)}</li>" for c in criterion.checks) + "</ul>")
    if result.issues:
        parts.append("<table><thead><tr><th>Location</th><th>Expected</th><th>Actual</th>")
        parts.append("</tr></thead><tbody>")
        parts += [
            f"<tr><td><code>{text(i.location)}</code></td><td>{text(i.expected)}</td>"
            f"<td>{text(i.actual)}</td></tr>"
            for i in result.issues
        ]
        parts.append("</tbody></table>")
    if message := message_beyond_issues(result.message, result.issues):
        parts.append(f"<p>{text(message)}</p>")
    if result.output.strip():
        tail = "\n".join(result.output.rstrip().splitlines()[-OUTPUT_LINES:])
        parts.append(f"<p class='muted'>Output (last lines):</p><pre>{text(tail)}</pre>")
    return "".join(parts) + "</details>\n"
