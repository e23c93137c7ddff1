"""The criteria in the reports of pytest-html (``--html``) and pytest-json-report
(``--json-report``), when a run writes them.

Registered on the controller (or the only process) only when that plugin is installed and
its report is asked for: without it nothing of it is imported, and no hook of its is
implemented (pluggy refuses an implementation of a hook nobody declared). Both read what
the controller knows, the recorder's criteria and results, so a run under xdist, whose
results arrive from the workers, reads as one without.

- pytest-html: criterion, title, method and priority columns
  (``pytest_html_results_table_header`` / ``_row``), and each criterion's evidence (the
  command as it runs, expected and actual, the result's message) as an HTML extra of its
  row. Everything from a spec or a run is escaped: pytest-html puts cells in as HTML.
- pytest-json-report: each criterion's test carries ``metadata.acceptance``, and the report
  the run's verdict, exit code and fingerprint (``acceptance``); its ``exitcode`` is the
  one the run exits with.
"""

from __future__ import annotations

import contextlib
import html
from typing import Any

import pytest

from pytest_acceptance.model import Criterion, Result
from pytest_acceptance.text import spec_location
from pytest_acceptance.verdict.decision import message_beyond_issues

COLUMNS = ("criterion", "title", "method", "priority")  # the items' own user properties


def register(config: pytest.Config) -> None:
    """Register what the active report plugins read (controller only)."""
    manager = config.pluginmanager
    if manager.has_plugin("html") and config.getoption("htmlpath", None):
        manager.register(HtmlColumns(config), "acceptance-html-report")
    if manager.has_plugin("pytest_jsonreport") and config.getoption("json_report", False):
        manager.register(JsonMetadata(config), "acceptance-json-report")


def _recorder(config: pytest.Config) -> Any:
    return config.pluginmanager.get_plugin("acceptance-recorder")


def _criterion_and_result(config: pytest.Config, nodeid: str) -> tuple[Criterion, Result] | None:
    recorder = _recorder(config)
    criterion = getattr(recorder, "criteria", {}).get(nodeid)
    result = getattr(recorder, "results", {}).get(nodeid)
    return None if criterion is None or result is None else (criterion, result)


def evidence(criterion: Criterion, result: Result, rootdir: Any) -> dict[str, Any]:
    """What a criterion's run found, in the words every other output uses."""
    found: dict[str, Any] = {
        "criterion": criterion.id,
        "title": criterion.title,
        "method": criterion.method.value,
        "priority": criterion.priority.value,
        "spec": spec_location(criterion, rootdir),
        "how": criterion.method_detail,  # the command as it runs, between backticks
        "status": result.status.value,
        "attempts": result.attempts,
        "issues": [issue.to_dict() for issue in result.issues],
        "message": message_beyond_issues(result.message, result.issues),
    }
    if criterion.command is not None:
        found["command"] = criterion.command  # byte for byte
    return found


class HtmlColumns:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        at = min(2, len(cells))  # after Result and Test
        cells[at:at] = [
            f'<th class="sortable" data-column-type="{name}">{name.title()}</th>'
            for name in COLUMNS
        ]

    @pytest.hookimpl
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        if not cells:  # another plugin dropped the row
            return
        given = getattr(report, "user_properties", ())  # a CollectReport has none
        own = {name: value for name, value in given if name in COLUMNS}
        at = min(2, len(cells))
        cells[at:at] = [
            f'<td class="col-{name}">{html.escape(str(own.get(name, "")))}</td>' for name in COLUMNS
        ]

    # After the recorder (tryfirst) combined the result, before pytest-html (trylast)
    # reads the report's extras.
    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        found = _criterion_and_result(self.config, report.nodeid)
        if found is None:
            return
        from pytest_html import extras

        shown = evidence(*found, self.config.rootpath)
        extra = extras.html(evidence_html(shown))
        report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]


def evidence_html(shown: dict[str, Any]) -> str:
    rows = [
        ("Criterion", f"{shown['criterion']}: {shown['title']}"),
        ("Spec", shown["spec"]),
        ("Method", shown["how"]),
        ("Result", f"{shown['status']} ({shown['attempts']} attempt"
                   f"{'' if shown['attempts'] == 1 else 's'})"),
    ]  # fmt: skip
    for issue in shown["issues"]:
        rows += [("Location", issue["location"]), ("Expected", issue["expected"])]
        rows += [("Actual", issue["actual"])]
    if shown["message"]:
        rows.append(("Message", shown["message"]))
    items = "".join(
        f"<dt>{name}</dt><dd><pre>{html.escape(str(value))}</pre></dd>" for name, value in rows
    )
    return f'<dl class="acceptance-evidence">{items}</dl>'


class JsonMetadata:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    # After the recorder decided the verdict and pytest-json-report built its report: the
    # two run in either order (both tryfirst), so the report is completed and saved again
    # here, through what pytest-json-report documents for it (``config._json_report``).
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        plugin = getattr(self.config, "_json_report", None)
        report = getattr(plugin, "report", None)
        recorder = _recorder(self.config)
        verdict = getattr(recorder, "verdict", None)
        if plugin is None or not isinstance(report, dict) or verdict is None:
            return
        complete(report, self.config)
        report["exitcode"] = int(verdict.exit_code)
        report["acceptance"] = {
            "verdict": verdict.status.value,
            "exit_code": int(verdict.exit_code),
            "fingerprint": recorder.fingerprint,
        }
        path = self.config.getoption("json_report_file", None)
        if path:
            with contextlib.suppress(OSError):  # pytest-json-report said it could not save
                plugin.save_report(path)


def complete(report: dict[str, Any], config: pytest.Config) -> None:
    """Each criterion's test entry gets ``metadata.acceptance``: its evidence."""
    for test in report.get("tests", ()):
        found = _criterion_and_result(config, str(test.get("nodeid", "")))
        if found is not None:
            metadata = test.setdefault("metadata", {})
            metadata["acceptance"] = evidence(*found, config.rootpath)
