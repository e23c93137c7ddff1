"""pytest-html (``--html``) and pytest-json-report (``--json-report``) see the criteria:
columns and evidence in the HTML, metadata and the verdict in the JSON; without workers
and under xdist, where results reach the controller from the workers. Real runs
(pytester) with the real plugins, whose written files are read back."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from support.specs import bash, manual, spec

pytestmark = pytest.mark.started_runs_load("html", "html_fixtures", "metadata", "pytest_jsonreport")

COMMAND = "python3 -c 'print(1)'  ;  exit 3"  # two spaces, byte for byte in every output
SPEC = spec(
    bash("AC-1", "true", title="Passes"),
    bash("AC-2", COMMAND, title="Fails <b>loudly</b>", priority="SHOULD"),
    manual("AC-3", title="A person looks"),
)
WORKERS = {"alone": (), "xdist": ("-n", "2")}


def _run(pytester: pytest.Pytester, workers: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".md", spec=SPEC)
    given = ("--acceptance", "spec.md", *args, *WORKERS[workers])
    if workers == "alone":
        return pytester.runpytest(*given)
    return pytester.runpytest_subprocess(*given)


def _html_tests(page: str) -> dict[str, Any]:
    """pytest-html 4 keeps every row's cells and extras as JSON in one attribute."""
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob is not None, page[:500]
    tests: dict[str, Any] = json.loads(html.unescape(blob.group(1)))["tests"]
    return tests


@pytest.mark.parametrize("workers", list(WORKERS))
def test_pytest_html_shows_criterion_columns_and_each_criterions_evidence(
    pytester: pytest.Pytester, workers: str
) -> None:
    result = _run(pytester, workers, "--html=report.html", "--self-contained-html")
    assert result.ret == 1, result.stdout.str()
    page = (pytester.path / "report.html").read_text()
    headers = re.findall(r'<th class="sortable" data-column-type="(\w+)">', page)
    assert headers == ["result", "testId", "criterion", "title", "method", "priority", "duration"]
    tests = _html_tests(page)
    cells = tests["spec.md::AC-2"][0]["resultsTableRow"]
    assert cells[2:6] == [
        '<td class="col-criterion">AC-2</td>',
        '<td class="col-title">Fails &lt;b&gt;loudly&lt;/b&gt;</td>',
        '<td class="col-method">bash</td>',
        '<td class="col-priority">SHOULD</td>',
    ]
    shown = [
        e["content"] for e in tests["spec.md::AC-2"][0]["extras"] if e["format_type"] == "html"
    ]
    assert len(shown) == 1, tests["spec.md::AC-2"]
    evidence = html.unescape(shown[0])
    assert f"<dt>Method</dt><dd><pre>bash `{COMMAND}`</pre></dd>" in evidence
    assert "<dt>Expected</dt><dd><pre>exit code 0</pre></dd>" in evidence
    assert '<dt>Actual</dt><dd><pre>exit code 3; last output line: "1"</pre></dd>' in evidence
    assert "<b>" not in shown[0]  # the spec's text is escaped, never markup
    passed = html.unescape(tests["spec.md::AC-1"][0]["extras"][0]["content"])
    assert "<dt>Result</dt><dd><pre>passed (1 attempt)</pre></dd>" in passed
    assert "<dt>Method</dt><dd><pre>bash `true`</pre></dd>" in passed


@pytest.mark.parametrize("workers", list(WORKERS))
def test_pytest_json_report_carries_each_criterions_evidence_and_the_verdict(
    pytester: pytest.Pytester, workers: str
) -> None:
    result = _run(pytester, workers, "--json-report", "--json-report-file=report.json")
    assert result.ret == 1, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["exitcode"] == result.ret
    assert report["acceptance"]["verdict"] == "fail"
    assert report["acceptance"]["exit_code"] == 1
    assert report["acceptance"]["fingerprint"]
    tests = {test["nodeid"]: test for test in report["tests"]}
    failed = tests["spec.md::AC-2"]["metadata"]["acceptance"]
    assert failed["command"] == COMMAND
    assert failed["how"] == f"bash `{COMMAND}`"
    assert (failed["criterion"], failed["priority"], failed["status"]) == (
        "AC-2",
        "SHOULD",
        "failed",
    )
    assert failed["issues"][0]["expected"] == "exit code 0"
    assert failed["issues"][0]["actual"] == 'exit code 3; last output line: "1"'
    assert tests["spec.md::AC-1"]["metadata"]["acceptance"]["status"] == "passed"
    assert tests["spec.md::AC-3"]["metadata"]["acceptance"]["method"] == "manual"
    assert tests["spec.md::AC-2"]["call"]["crash"]["path"] == "spec.md"


def test_the_json_reports_exit_code_is_the_runs_when_a_manual_criterion_waits(
    pytester: pytest.Pytester,
) -> None:
    """Every criterion passes but a manual one is unsigned: the run's own exit code, not
    pytest's 0, is what the JSON says."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), manual("AC-2")))
    result = pytester.runpytest("--acceptance", "spec.md", "--json-report")
    report = json.loads((pytester.path / ".report.json").read_text())
    assert result.ret not in (0, 1), result.stdout.str()
    assert report["exitcode"] == result.ret == report["acceptance"]["exit_code"]
    assert report["acceptance"]["verdict"] == "manual"


def test_without_their_options_the_report_plugins_see_nothing_of_ours(
    pytester: pytest.Pytester,
) -> None:
    """Installed but not asked for, or not loaded at all: nothing of ours is registered
    for them, and the run is the same."""
    pytester.makeconftest(
        "def pytest_sessionfinish(session):\n"
        "    names = [n for n, _ in session.config.pluginmanager.list_name_plugin()]\n"
        "    ours = ('acceptance-html-report', 'acceptance-json-report')\n"
        "    print('OURS', sorted(n for n in names if n in ours))\n"
    )
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")))
    plain = pytester.runpytest("--acceptance", "spec.md", "-s")
    assert "OURS []" in plain.stdout.str()
    blocked = ("-p", "no:html", "-p", "no:html_fixtures", "-p", "no:pytest_jsonreport")
    without = pytester.runpytest("--acceptance", "spec.md", "-s", *blocked)
    assert "OURS []" in without.stdout.str()
    assert plain.ret == without.ret == 0, without.stdout.str()
    both = pytester.runpytest("--acceptance", "spec.md", "-s", "--html=r.html", "--json-report")
    assert "OURS ['acceptance-html-report', 'acceptance-json-report']" in both.stdout.str()


@pytest.mark.parametrize("workers", list(WORKERS))
def test_a_spec_that_fails_to_collect_is_a_row_of_pytest_html_without_criterion_cells(
    pytester: pytest.Pytester, workers: str
) -> None:
    """A collection error's report has no user properties: its row gets empty cells."""
    bad = spec(bash("AC-1", "true", pass_condition="exitcode 0"))
    pytester.makefile(".md", spec=bad)
    given = ("--acceptance", "spec.md", "--html=report.html", *WORKERS[workers])
    run = pytester.runpytest if workers == "alone" else pytester.runpytest_subprocess
    result = run(*given)
    assert result.ret == 2, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    cells = _html_tests((pytester.path / "report.html").read_text())["spec.md"][0]
    assert cells["resultsTableRow"][2:6] == [
        f'<td class="col-{name}"></td>' for name in ("criterion", "title", "method", "priority")
    ]
