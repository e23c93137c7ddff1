"""What pytest's own ecosystem sees of a run: a header line of the plugin's state, and one
line of what was collected and selected (what ``--co`` users and agents plan from),
without workers and on the xdist controller. Real runs (pytester)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import bash, manual, spec

SPEC = spec(bash("AC-1", "true"), bash("AC-2", "true", priority="SHOULD"), manual("AC-3"))
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_header_says_what_the_run_verifies_and_how(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nacceptance_retries = 2\nacceptance_timeout = 30\n")
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("--acceptance", "spec.md", "--co")
    result.stdout.fnmatch_lines(
        ["acceptance: 1 spec (spec.md), 3 criteria; retries 2, timeout 30 s; verdict to "
         ".acceptance/verdict.json"]
    )  # fmt: skip


@pytest.mark.parametrize("args", [(), ("-k", "AC_1 or AC-1")], ids=["all", "k"])
def test_collect_only_ends_with_one_line_of_what_was_selected(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("--acceptance", "spec.md", "--co", "-q", *args)
    line = [x for x in result.stdout.lines if x.startswith("acceptance: ") and "selected" in x]
    expected = {
        (): "acceptance: 3 of 3 criteria of spec.md selected (2 bash, 1 manual; 2 MUST, 1 SHOULD)",
        ("-k", "AC_1 or AC-1"): "acceptance: 1 of 3 criteria of spec.md selected (1 bash; 1 MUST)",
    }
    assert line == [expected[args]], result.stdout.str()


def test_the_selection_line_comes_from_the_xdist_controller_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "2")
    lines = [x for x in result.stdout.lines if x.startswith("acceptance: 3 of 3 criteria")]
    assert len(lines) == 1, result.stdout.str()


def test_a_run_beside_every_installed_plugin_keeps_its_verdict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs the other tests start load only the plugin and xdist (support/runs.py); this
    one loads every pytest plugin the test environment installs, as a user's environment
    would, on xdist workers: the verdict is the same, and no plugin warns."""
    monkeypatch.delenv("PYTEST_ADDOPTS")
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), bash("AC-2", "false"), manual("AC-3")))
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "2")
    output = result.stdout.str() + result.stderr.str()
    (plugins,) = [line for line in result.stdout.lines if line.startswith("plugins: ")]
    for name in ("hypothesis", "randomly", "html", "bdd", "timeout", "rerunfailures"):
        assert name in plugins, plugins
    assert result.ret == 1 and "Warning" not in output and "INTERNALERROR" not in output, output
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert verdict["status"] == "fail", verdict
    result.stdout.fnmatch_lines(["### Failed (1)", "- AC-2: ac-2", "*", "### Passed (1)"])


def test_python_3_14_is_a_classifier() -> None:
    assert '"Programming Language :: Python :: 3.14",' in PYPROJECT.read_text()


def test_allure_reads_the_criteria_labels_from_its_marker_without_allure(
    pytester: pytest.Pytester,
) -> None:
    """allure-pytest takes labels from ``allure_label`` markers: the category as feature,
    the priority as severity (MUST critical, SHOULD normal); ``--strict-markers`` holds."""
    pytester.makeconftest(
        "def pytest_collection_finish(session):\n"
        "    for item in session.items:\n"
        "        labels = sorted((m.kwargs['label_type'], *m.args) for m in "
        "item.iter_markers('allure_label'))\n"
        "        print('LABELS', item.name, labels)\n"
    )
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("--acceptance", "spec.md", "--co", "-q", "-s", "--strict-markers")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "LABELS AC-1 [('feature', 'Core'), ('severity', 'critical')]",
            "LABELS AC-2 [('feature', 'Core'), ('severity', 'normal')]",
        ]
    )


# What a pytest run without --acceptance may import of the plugin: its options and the
# stage modules that declare theirs. Anything more is paid by every pytest process of every
# project that has the plugin installed (a criterion's own pytest, each xdist worker).
PLAIN_RUN_MODULES = {
    "pytest_acceptance",
    "pytest_acceptance.agent",
    "pytest_acceptance.agent.options",
    "pytest_acceptance.agent.settings",
    "pytest_acceptance.evidence",
    "pytest_acceptance.evidence.ci",
    "pytest_acceptance.evidence.trail",
    "pytest_acceptance.hookspecs",
    "pytest_acceptance.options",
    "pytest_acceptance.plugin",
    "pytest_acceptance.rootdir",
}

_LOADED = """
import sys, pytest
class Loaded:
    def pytest_sessionfinish(self):
        names = sorted(m for m in sys.modules if m.split(".")[0] == "pytest_acceptance")
        with open("loaded.txt", "w") as out:
            out.write(" ".join(names))
pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Loaded()])
"""


def test_a_run_without_acceptance_imports_only_the_plugins_options(tmp_path: Path) -> None:
    """A plain pytest run with the plugin installed imports none of its machinery (the
    model, the spec formats, the runners); with --acceptance the same probe sees them, so
    the probe can fail."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "spec.md").write_text(spec(bash("AC-1", "true")))

    def loaded(*arguments: str) -> set[str]:
        probe = [sys.executable, "-c", _LOADED, *arguments]
        subprocess.run(probe, cwd=tmp_path, capture_output=True, check=False)
        return set((tmp_path / "loaded.txt").read_text().split())

    assert loaded() == PLAIN_RUN_MODULES
    assert "pytest_acceptance.model" in loaded("--acceptance", "spec.md")
