"""Property tests: whatever markdown a spec holds — fragments of every format, shuffled,
indented, cut — each detector answers a score in [0, 1] and each parser answers a Spec
whose ids are unique, safe file names, or a SpecError naming a line of the text. Never
another exception."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_acceptance.model import Spec, SpecError
from pytest_acceptance.spec.formats import builtin_formats, detect
from pytest_acceptance.spec.load import parse_spec_text

FRAGMENTS = [
    "# Feature Specification: x",
    "### User Story 1 - Export (Priority: P1)",
    "### User Story 2 - Mail (Priority: P9)",
    "**Independent Test**: open it",
    "1. **Given** a, **When** b, **Then** c",
    "- **FR-001**: System MUST export",
    "- **FR-001**: System MUST export twice",
    "- **SC-002**: fast",
    "### Requirement 1",
    "### Requirement 2: Reset",
    "#### Acceptance Criteria",
    "1. WHEN x THEN the system SHALL y",
    "**User Story:** As a user, I want x, so that y",
    "**Property 1: Single use**",
    "**Validates: Requirements 1.1**",
    "### Requirement: Sign In",
    "#### Scenario: ok",
    "- **WHEN** a",
    "- **THEN** b",
    "## ADDED Requirements",
    "## REMOVED Requirements",
    "# Story 1.2: Login",
    "## Acceptance Criteria",
    "**AC1 — Works:**",
    "- **Given** x",
    "## Tasks / Subtasks",
    "- [ ] 1.1 Build it",
    "- [x] 2.3 Ship it",
    "- [ ] Untitled task",
    "  - **Verify**: `true`",
    "  - **Verify**: read it",
    "  - **Done when**: done",
    "- [INV-G1] Tests pass.",
    "- [AC-1.1] Works. Deterministic gate. `true`",
    "- [AC-1.2] Judged. Judgment gate.",
    "- [AC-1.3] Deterministic gate. no command",
    "  ```yaml",
    "  verify:",
    "    method: bash",
    '    command: "true"',
    "    prompt: check",
    "## 3.2 Rules",
    "## Requirements",
    "It MUST work. It SHOULD be fast.",
    "SHALL: indicates a requirement.",
    "**FR-0.3**: The exporter MUST ask.",
    "- The permissions MUST be:",
    "  - read",
    "#### AC-1: Title",
    "#### AC-2 no colon",
    "**AC-3: bold**",
    "- AC-4: item",
    "#### AC-1/2: unsafe",
    "```yaml",
    "```",
    "~~~",
    "method: bash",
    "method: robot",
    "command: 'true'",
    "command: [unclosed",
    "checks: [a, b]",
    "---",
    "",
    "text with `code` and **bold** and [link]",
    "\t",
    "> quote MUST",
]

lines = st.lists(
    st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(["", "  ", "    ", "\t"])),
    max_size=30,
)
FORMAT_NAMES = [f.name for f in builtin_formats()]
SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def text_of(chosen: list[tuple[str, str]], cut: int) -> str:
    text = "\n".join(indent + fragment for fragment, indent in chosen)
    return text[: max(len(text) - cut, 0)]


def check(text: str, outcome: Spec | SpecError) -> None:
    if isinstance(outcome, SpecError):
        for error in outcome.errors:
            assert 1 <= error.line <= text.count("\n") + 2, (text, error)
        return
    ids = [c.id for c in outcome.criteria]
    assert outcome.criteria and all(SAFE.match(i) for i in ids), ids
    assert len({i.casefold() for i in ids}) == len(ids), ids


def parse(text: str, forced: str | None = None) -> Spec | SpecError:
    try:
        return parse_spec_text(text, Path("spec.md"), forced=forced)
    except SpecError as error:
        return error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines, st.integers(min_value=0, max_value=20))
def test_detectors_score_and_the_chosen_parser_answers_a_spec_or_a_spec_error(
    chosen: list[tuple[str, str]], cut: int
) -> None:
    text = text_of(chosen, cut)
    for spec_format in builtin_formats():
        score = spec_format.detect(text)
        assert 0.0 <= score <= 1.0, spec_format.name
    if text.strip():
        check(text, parse(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines, st.integers(min_value=0, max_value=20))
def test_detection_that_stops_at_a_full_score_picks_what_scoring_every_format_picks(
    chosen: list[tuple[str, str]], cut: int
) -> None:
    """``detect`` stops once a format scores 1.0 (no built-in scores higher): the format it
    picks is the first one of the highest score among all of them."""
    text = text_of(chosen, cut)
    formats = builtin_formats()
    scores = [spec_format.detect(text) for spec_format in formats]
    best = max(scores)
    expected = (formats[scores.index(best)], best) if best > 0 else (None, 0.0)
    assert detect(text, formats) == expected


@pytest.mark.parametrize("name", FORMAT_NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chosen=lines, cut=st.integers(min_value=0, max_value=20))
def test_every_format_forced_on_any_text_answers_a_spec_or_a_spec_error(
    name: str, chosen: list[tuple[str, str]], cut: int
) -> None:
    text = text_of(chosen, cut)
    if text.strip():
        check(text, parse(text, forced=name))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_unicode_never_raises_anything_but_a_spec_error(text: str) -> None:
    for name in (None, *FORMAT_NAMES):
        outcome = parse(text, forced=name)
        if isinstance(outcome, Spec):
            check(text, outcome)
