"""JUnit XML says what the terminal says: the run's verdict, exit code, fingerprint and
spec digests as testsuite properties; an unverifiable criterion as an ``<error>`` and a
failed one as a ``<failure>``, counted so; no ``<properties>`` inside a testcase under
pytest's default ``xunit2`` (the schema has none there), the criteria's own under
``xunit1``; a manual criterion's ``<skipped>`` at its spec line. Real pytest runs
(pytester), the XML parsed back."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET

import pytest
from support.specs import bash, criterion, manual, spec

MIXED = spec(
    bash("AC-1", "true"),
    bash("AC-2", "false"),
    criterion("AC-3", method="subagent", agent="checker", checks=["it works"]),
    manual("AC-4"),
)


def junit(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, ET.Element]:
    pytester.makeini("[pytest]\nacceptance_retries = 0\n")
    pytester.makefile(".md", spec=MIXED)
    result = pytester.runpytest(
        "--acceptance", "spec.md", "--acceptance-agent", "none", "--junitxml", "j.xml", *args
    )
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None
    return result, suite


def cases(suite: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in suite.iter("testcase")}


def test_junit_counts_errors_and_failures_as_the_terminal_does(pytester: pytest.Pytester) -> None:
    result, suite = junit(pytester)
    result.stdout.fnmatch_lines(["*1 failed, 1 passed, 1 error*"])
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "1", "1")
    found = cases(suite)
    assert [child.tag for child in found["AC-2"]] == ["failure"]
    assert [child.tag for child in found["AC-3"]] == ["error"]
    skipped = found["AC-4"].find("skipped")
    assert skipped is not None and (skipped.text or "").startswith("spec.md:"), skipped.text
    assert "site-packages" not in (skipped.text or "")


def test_junit_holds_the_verdict_at_testsuite_level_and_nothing_inside_a_testcase(
    pytester: pytest.Pytester,
) -> None:
    """Under xunit2, pytest's default: no testcase holds <properties>."""
    result, suite = junit(pytester)
    assert result.ret == 1
    properties = [(p.get("name"), p.get("value")) for p in suite.findall("properties/property")]
    names = [name for name, _ in properties]
    assert names[:3] == ["acceptance_verdict", "acceptance_exit_code", "acceptance_fingerprint"]
    assert ("acceptance_verdict", "fail") in properties
    assert ("acceptance_exit_code", "1") in properties
    assert ("acceptance_scope", "complete") in properties
    digest = hashlib.sha256((pytester.path / "spec.md").read_bytes()).hexdigest()
    assert ("acceptance_spec", f"spec.md sha256:{digest}") in properties
    assert all(case.find("properties") is None for case in suite.iter("testcase"))


def test_under_xunit1_each_testcase_keeps_the_criterions_properties(
    pytester: pytest.Pytester,
) -> None:
    _, suite = junit(pytester, "-o", "junit_family=xunit1")
    props = cases(suite)["AC-1"].find("properties")
    assert props is not None
    assert ("criterion", "AC-1") in [(p.get("name"), p.get("value")) for p in props]
    assert suite.find("properties/property[@name='acceptance_verdict']") is not None


def test_a_lf_run_says_in_junit_that_it_was_partial(pytester: pytest.Pytester) -> None:
    """``--lf`` selects as ``-k`` does: the testsuite's scope says which part ran."""
    pytester.makeini("[pytest]\nacceptance_retries = 0\n")
    pytester.makefile(".md", spec=spec(bash("AC-1", "true"), bash("AC-2", "test -e fixed")))
    assert pytester.runpytest("--acceptance", "spec.md").ret == 1
    (pytester.path / "fixed").write_text("")
    result = pytester.runpytest("--acceptance", "spec.md", "--lf", "--junitxml", "j.xml")
    assert result.ret == 0
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None
    scope = suite.find("properties/property[@name='acceptance_scope']")
    assert scope is not None
    assert scope.get("value") == "1 of 2 criteria selected: not a verification of the spec."
