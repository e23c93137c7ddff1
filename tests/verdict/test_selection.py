"""Selecting criteria as pytest users expect: -m by priority (must, should, could, wont) and
by category, also under --strict-markers, and -k on words of the title and the category."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.specs import bash, spec

from pytest_acceptance.collect import category_marker

PRIORITIES = spec(
    bash("AC-1", "true", "Queues notifications", priority="MUST"),
    bash("AC-2", "true", "Retries delivery", priority="SHOULD"),
    bash("AC-3", "true", "Shows a badge", priority="COULD"),
    bash("AC-4", "true", "Sends SMS", priority="WONT"),
    category="Delivery",
)
CATEGORIES = (
    "# Spec\n\n## Acceptance Criteria\n\n### Category: Stop Hook\n\n"
    + bash("AC-1", "true", "Blocks early stops")
    + "### Category: PreToolUse Hook on /escalate\n\n"
    + bash("AC-2", "true", "Denies an early escalate")
)


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line]


@pytest.mark.parametrize(
    ("option", "expression", "ids"),
    [
        ("-m", "must", ["AC-1"]),
        ("-m", "should", ["AC-2"]),
        ("-m", "could", ["AC-3"]),
        ("-m", "wont", ["AC-4"]),
        ("-m", "must or should", ["AC-1", "AC-2"]),
        ("-m", "not wont", ["AC-1", "AC-2", "AC-3"]),
        ("-m", "delivery and could", ["AC-3"]),  # the category marker
        ("-k", "notifications", ["AC-1"]),  # a title word
        ("-k", "badge or sms", ["AC-3", "AC-4"]),  # case-insensitive, as -k is
        ("-k", "delivery and not badge", ["AC-1", "AC-2", "AC-4"]),  # a category word
    ],
)
def test_markers_and_keywords_select_by_priority_category_and_title(
    pytester: pytest.Pytester, option: str, expression: str, ids: list[str]
) -> None:
    pytester.makefile(".md", spec=PRIORITIES)
    result = pytester.runpytest("--acceptance", "spec.md", "--co", "-q", option, expression)
    assert collected(result) == [f"spec.md::{ident}" for ident in ids]


def test_category_markers_are_slugs_and_registered_for_strict_markers(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=CATEGORIES)
    pytester.makeini("[pytest]\naddopts = --strict-markers\n")
    result = pytester.runpytest("--acceptance", "spec.md", "-m", "stop_hook", "-v")
    result.stdout.fnmatch_lines(["spec.md::AC-1 * PASSED*"])
    assert result.ret == 0
    result = pytester.runpytest(
        "--acceptance", "spec.md", "--co", "-q", "-m", "pretooluse_hook_on_escalate"
    )
    assert collected(result) == ["spec.md::AC-2"]
    markers = pytester.runpytest("--acceptance", "spec.md", "--co", "-q", "--strict-markers")
    assert markers.ret == 0


def test_a_category_named_like_a_pytest_marker_does_not_skip_its_criteria(
    pytester: pytest.Pytester,
) -> None:
    """``Category: Skip`` would be the marker ``skip``, which pytest obeys: it becomes
    ``category_skip`` instead, and the criterion runs."""
    pytester.makefile(".md", spec=spec(bash("AC-1", "exit 3", retries=0), category="Skip"))
    result = pytester.runpytest("--acceptance", "spec.md", "-m", "category_skip", "-v")
    result.stdout.fnmatch_lines(["spec.md::AC-1 * FAILED*"])
    assert result.ret == 1


@pytest.fixture
def config(pytester: pytest.Pytester) -> pytest.Config:
    return pytester.parseconfig()


# One config for all examples on purpose: a run registers many categories in one config.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_any_category_gets_a_marker_that_m_can_name(config: pytest.Config, category: str) -> None:
    """Whatever the heading says, the marker is a non-empty identifier-like name that is
    never one pytest acts on."""
    name = category_marker(config, category)
    assert re.fullmatch(r"[a-z0-9_]+", name)
    assert name not in {"skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
    assert category_marker(config, category) == name  # stable within a run
