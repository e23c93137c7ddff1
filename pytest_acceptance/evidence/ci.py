"""What a CI job and a reviewer get besides the terminal: the GitHub Actions step summary,
the HTML report (``--acceptance-html PATH``) and one-line JUnit failure messages.

A pytest plugin module (listed in ``plugin.pytest_plugins``); its hookimpls are registered
only with ``--acceptance``, on the controller (or the only process), and read the verdict
and reports the recorder and the evidence trail leave at session finish. The workflow
annotations (``::error`` / ``::warning``) are printed with the evidence (evidence.py).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the stage modules load only with --acceptance
    from pytest_acceptance.verdict.decision import Outcome, RunFacts, Verdict

SUMMARY_ROWS = 50  # failures listed in the step summary (GitHub caps it at 1 MiB)
CELL_CHARS = 200
_ICONS = {"pass": "✅", "fail": "❌", "manual": "🧑", "error": "⚠️"}
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|~"})
_BLOCK_START = re.compile(r"^(?:([#+=>-])|(\d+)([.)]))")  # a heading, list or quote if first


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance")
    group.addoption(
        "--acceptance-html",
        metavar="PATH",
        default=None,
        help="also write the run as one self-contained HTML page (readable offline) to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("acceptance", None) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(CiOutputs(config), "acceptance-ci-outputs")


class CriterionRepr:
    """A criterion's failure text as pytest reports carry it: junitxml writes
    ``reprcrash.message`` (the first line) as the failure's ``message`` attribute and the
    whole text as its body; the terminal's short summary shows the first line too. The
    terminal's FAILURES section gets that line alone: the acceptance verdict, printed after
    it, holds the whole text once."""

    def __init__(self, text: str, path: str = "", lineno: int = 0) -> None:
        self.text = text
        first = text.strip().splitlines()[0] if text.strip() else "failed"
        self.reprcrash = _Crash(path, lineno, first)

    def toterminal(self, writer: Any) -> None:
        writer.line(f"{self.reprcrash.message} (details in the acceptance verdict below)")

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class _Crash:
    """The shape of pytest's ``ReprFileLocation``, which plugins read (pytest-json-report
    writes path, line and message): here the criterion's place in its spec."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:  # --tb=line prints it
        return self.message


class CiOutputs:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        given = config.getoption("acceptance_html")
        self.html_path = (config.invocation_params.dir / given).resolve() if given else None
        if self.html_path is not None and self.html_path.is_dir():
            raise pytest.UsageError(f"--acceptance-html {given}: is a directory; name a file")
        self.facts: RunFacts | None = None
        self.notes: list[tuple[str, bool]] = []  # (line, is an error)

    @pytest.hookimpl
    def pytest_acceptance_verdict(
        self, config: pytest.Config, verdict: Verdict, facts: RunFacts
    ) -> list[str]:
        self.facts = facts
        return []

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Here on the controller: a report from an xdist worker arrives with its text as a str.
        if (
            report.failed
            and getattr(report, "acceptance", None)
            and isinstance(report.longrepr, str)
        ):
            path, line, _ = report.location
            report.longrepr = CriterionRepr(  # type: ignore[assignment]
                report.longrepr, path, (line or 0) + 1
            )
        elif report.skipped and getattr(report, "acceptance", None):
            at_the_spec(report)

    def pytest_sessionfinish(self) -> None:  # after the recorder's (tryfirst) decided
        verdict = getattr(
            self.config.pluginmanager.get_plugin("acceptance-recorder"), "verdict", None
        )
        if verdict is None or self.config.option.collectonly:
            return
        evidence = self.config.pluginmanager.get_plugin("acceptance-evidence")
        reports = [report for _, report in getattr(evidence, "reports", ())]
        rootdir = self.config.rootpath
        if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
            markdown = step_summary(verdict, reports, rootdir)
            self._write("GitHub step summary", Path(summary), markdown, append=True)
        if self.html_path is not None:
            from pytest_acceptance.evidence.html import render_html

            finished = self.facts.finished_at if self.facts else 0.0
            page = render_html(verdict, reports, rootdir, finished)
            self._write("HTML report", self.html_path, page)

    def _write(self, what: str, path: Path, content: str, append: bool = False) -> None:
        from pytest_acceptance.tree.hostile import write_atomic

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if append:  # GitHub collects what each step appends to its summary file
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(content)
            else:
                write_atomic(path, content)
        except OSError as error:
            self.notes.append((f"{what} NOT written to {self._shown(path)}: {error}", True))
        else:
            self.notes.append((f"{what} written to {self._shown(path)}", False))

    def _shown(self, path: Path) -> str:
        from pytest_acceptance.text import display_path

        return display_path(path, self.config.rootpath)

    @pytest.hookimpl(wrapper=True)  # after every other summary: the verdict, the evidence
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        result = yield
        for line, failed in self.notes:
            terminalreporter.write_line(line, red=failed)
        return result


# --- the GitHub step summary ------------------------------------------------------------------


def step_summary(verdict: Verdict, reports: list[dict[str, Any]], rootdir: Path) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: verdict, scope, counts, what failed, deltas.
    Specs are named from the repository's root, as in a pull request."""
    from pytest_acceptance.evidence.trail import repository_root
    from pytest_acceptance.model import Status
    from pytest_acceptance.verdict.decision import scope_lines

    rootdir = repository_root(rootdir)
    status = verdict.status.value
    lines = [f"### {_ICONS[status]} Acceptance: {status.upper()} (exit code {verdict.exit_code})"]
    lines += ["", *[f"> {md(line)}\n" for line in scope_lines(verdict) if line]]
    lines += _counts_table(verdict, rootdir)
    lines += _open_table(verdict, rootdir)
    lines += _id_list("Not run", verdict.of(Status.NOT_RUN))
    if status == "manual":
        lines += _id_list("Waiting for a human", verdict.of(Status.MANUAL))
    signed = [o for o in verdict.of(Status.PASSED) if "sign_off" in o.result.extra]
    lines += _id_list("Signed off by a person", signed)
    lines += _report_lines(reports)
    if verdict.problems:
        lines += ["#### Problems", "", *[f"- {md(p)}" for p in verdict.problems], ""]
    return "\n".join(lines) + "\n"


def md(value: object) -> str:
    """Adversarial text as one line of inert Markdown (no HTML, links or emphasis)."""
    from pytest_acceptance.evidence.html import _ANSI, _CONTROL

    flat = " ".join(_CONTROL.sub("\ufffd", _ANSI.sub("", str(value))).split())
    if len(flat) > CELL_CHARS:
        flat = flat[: CELL_CHARS - 1] + "…"
    inline = html.escape(flat, quote=False).translate(_MARKDOWN_SPECIAL)
    return _BLOCK_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", inline)


def _counts_table(verdict: Verdict, rootdir: Path) -> list[str]:
    from pytest_acceptance.evidence.html import group_by_spec
    from pytest_acceptance.model import Status

    names = list(Status)
    lines = ["| Spec | " + " | ".join(s.value.replace("_", " ") for s in names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    for spec, outcomes in group_by_spec(verdict.outcomes, rootdir).items():
        found = [sum(o.result.status is s for o in outcomes) for s in names]
        lines.append(f"| {md(spec)} | " + " | ".join(str(n) for n in found) + " |")
    return [*lines, ""]


def _open_table(verdict: Verdict, rootdir: Path) -> list[str]:
    from pytest_acceptance.model import Priority, Status
    from pytest_acceptance.text import spec_location

    rank = {p: n for n, p in enumerate(Priority)}
    open_ = sorted(
        verdict.of(Status.FAILED, Status.ERROR), key=lambda o: rank[o.criterion.priority]
    )
    if not open_:
        return []
    lines = [f"#### Failed or not verified ({len(open_)})", ""]
    lines += ["| Criterion | Priority | Status | Spec | What failed |", "|---|---|---|---|---|"]
    for outcome in open_[:SUMMARY_ROWS]:
        criterion = outcome.criterion
        cells = [
            f"{criterion.id}: {criterion.title}",
            criterion.priority.value,
            outcome.result.status.value,
            spec_location(criterion, rootdir),
            _what_failed(outcome),
        ]
        lines.append("| " + " | ".join(md(cell) for cell in cells) + " |")
    if len(open_) > SUMMARY_ROWS:
        lines.append(f"\n… and {len(open_) - SUMMARY_ROWS} more (see report.md or the HTML report)")
    return [*lines, ""]


def _what_failed(outcome: Outcome) -> str:
    result = outcome.result
    if result.issues:
        issue = result.issues[0]
        return f"{issue.location}: expected {issue.expected}; actual {issue.actual}"
    return result.message.strip().splitlines()[0] if result.message.strip() else result.status.value


def _id_list(title: str, outcomes: list[Outcome]) -> list[str]:
    if not outcomes:
        return []
    ids = ", ".join(md(o.criterion.id) for o in outcomes[:SUMMARY_ROWS])
    more = f" … (+{len(outcomes) - SUMMARY_ROWS})" if len(outcomes) > SUMMARY_ROWS else ""
    return [f"#### {title} ({len(outcomes)})", "", ids + more, ""]


def _report_lines(reports: list[dict[str, Any]]) -> list[str]:
    from pytest_acceptance.evidence.report import report_scope
    from pytest_acceptance.evidence.trail import summary_lines

    lines = []
    for report in reports:
        details = [line.strip() for line in summary_lines(report, "")[1:]]
        lines.append(f"- {md(report['spec'])}: {md(report_scope(report))}")
        lines += [f"  - {md(detail)}" for detail in details]
    return ["#### Gaps and changes", "", *lines, ""] if lines else []


def at_the_spec(report: pytest.TestReport) -> None:
    """A criterion skipped (a manual one, an unticked task) is shown at its spec line, as
    JUnit's ``<skipped>`` and ``-rs`` show a skip, not at the line of this package that
    skipped it."""
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, line, _ = report.location
        report.longrepr = (path, (line or 0) + 1, report.longrepr[2])
