"""Checks authors state in prose become bash criteria only when the prose names the command
in backticks with a pass phrase right after it; a trigger ("WHEN `x` succeeds"), a verb
with an object ("passes the input"), "Judgment gate." or no command stay with the agent,
and the collection line says which was chosen."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance.model import Method
from pytest_acceptance.spec.formats.stated_check import StatedCheckError, choose
from pytest_acceptance.spec.load import parse_spec_text

BASH, AGENT = Method.BASH, Method.SUBAGENT


@pytest.mark.parametrize(
    ("prose", "expected"),
    [
        ("Done when `make lint` exits 0.", (BASH, "make lint", None)),
        ("`pytest tests/x.py -q` passes on a clean checkout", (BASH, "pytest tests/x.py -q", None)),
        (
            "Done when `git status --short` prints nothing.",
            (BASH, "git status --short", "output is empty"),
        ),
        ("Done when `tool --bad` exits with code 2.", (BASH, "tool --bad", "exit code 2")),
        (
            "Done when `app --version` prints `1.4.0`.",
            (BASH, "app --version", "output contains '1.4.0'"),
        ),
        (
            "Done when `npm test` and `npm run lint` both pass.",
            (BASH, "npm test && npm run lint", None),
        ),
        ("It holds. Deterministic gate. `grep -q LIMIT .env`", (BASH, "grep -q LIMIT .env", None)),
        ("Done when `make test` passes. Judgment gate.", (AGENT, None, None)),
        ("WHEN `login` succeeds THEN the system SHALL redirect", (AGENT, None, None)),
        ("When `sync` passes, the badge turns green", (AGENT, None, None)),
        (
            "**Given** a report, **When** exported, **Then** `test -f out.csv` exits 0",
            (BASH, "test -f out.csv", None),
        ),
        (
            "WHEN a key rotates THEN `audit --last` prints `rotated`",
            (BASH, "audit --last", "output contains 'rotated'"),
        ),
        ("IF `lint` passes THEN the badge turns green", (AGENT, None, None)),
        ("The `validate` step passes the schema to the loader", (AGENT, None, None)),
        ("The `limits` table passes review", (AGENT, None, None)),
        ("Done when `make` passes and `lint` prints nothing", (AGENT, None, None)),
        ("The export is fast.", (AGENT, None, None)),
    ],
)
def test_a_command_with_a_pass_phrase_is_run_anything_else_is_judged(
    prose: str, expected: tuple[Method, str | None, str | None]
) -> None:
    choice = choose([prose])
    assert (choice.method, choice.command, choice.pass_condition) == expected
    assert choice.how.startswith("bash: " if expected[0] is BASH else "agent: ")


def test_a_deterministic_gate_without_a_command_is_refused() -> None:
    with pytest.raises(StatedCheckError, match="Deterministic gate but names no command"):
        choose(["Done when the limiter uses `RATE`. Deterministic gate."])


def test_only_the_criterions_own_words_count_not_its_context() -> None:
    """A user story mentioning `make test` passes does not make the criterion a bash one."""
    text = (
        "# Requirements\n\n### Requirement 1: Build\n**User Story:** As a dev, I want "
        "`make test` passes to mean green\n\n#### Acceptance Criteria\n"
        "1. WHEN a commit lands THEN the system SHALL build it\n"
    )
    criterion = parse_spec_text(text, Path("requirements.md")).criteria[0]
    assert (criterion.method, criterion.how) == (AGENT, "agent: no runnable check stated")


def test_a_speckit_scenario_or_requirement_that_names_its_check_runs_it() -> None:
    text = (
        "# Feature Specification: Export\n\n## User Scenarios & Testing\n\n"
        "### User Story 1 - Download (Priority: P1)\n\n**Acceptance Scenarios**:\n\n"
        "1. **Given** a report, **When** exported, **Then** `test -f out.csv` exits 0\n"
        "2. **Given** a report, **When** `export --dry` runs, **Then** nothing is written\n\n"
        "## Requirements\n\n- **FR-001**: System MUST export every report.\n"
        "- **FR-002**: Done when `make check` passes.\n"
    )
    spec = parse_spec_text(text, Path("spec.md"))
    found = {c.id: (c.method, c.command) for c in spec.criteria}
    assert found == {
        "US1-AC1": (BASH, "test -f out.csv"),
        "US1-AC2": (AGENT, None),
        "FR-001": (AGENT, None),
        "FR-002": (BASH, "make check"),
    }


def test_the_collection_line_says_how_each_criterion_is_verified(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".md",
        spec=(
            "# Spec\n\n## 1 Rules\n\n- [ ] `true` exits 0\n- [ ] Errors are readable\n"
            "- [ ] `false` passes\n"
        ),
    )
    listed = pytester.runpytest("--acceptance", "spec.md", "--collect-only")
    listed.stdout.fnmatch_lines(
        [
            "*<CriterionItem S1-true-exits-0 true exits 0 [[]bash: `true`, exit code 0, as the "
            "prose states[]]>",
            "*<CriterionItem S1-errors-readable Errors are readable [[]agent: no runnable check "
            "stated[]]>",
        ]
    )
    ran = pytester.runpytest(
        "--acceptance", "spec.md", "-v", "-n", "0", "-k", "true or false", "-p", "no:cacheprovider"
    )
    ran.stdout.fnmatch_lines(
        [
            "spec.md::S1-true-exits-0 true exits 0 [[]bash: `true`, exit code 0, *[]] PASSED*",
            "spec.md::S1-false-passes false passes [[]bash: `false`, exit code 0, *[]] FAILED*",
        ]
    )
