"""Variants of the formats as authors write them in public repositories: each is read under
the authors' ids, or is an error naming its line; what looks like criteria is never dropped.
Every fixture here is written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance.model import Spec, SpecError
from pytest_acceptance.spec.load import parse_spec_text


def parsed(text: str, name: str = "requirements.md", forced: str | None = None) -> Spec:
    return parse_spec_text(text, Path(name), forced=forced)


def ids(text: str, name: str = "requirements.md") -> list[str]:
    return [c.id for c in parsed(text, name).criteria]


def lines(text: str) -> dict[str, int]:
    return {c.id: c.location.line for c in parsed(text).criteria}


KIRO_NUMBERED_PARAGRAPHS = """\
# Requirements Document

### Requirement 1: Sign in

**User Story:** As a member, I want to sign in, so that I see my orders.

#### Acceptance Criteria

1.1. WHEN a member submits valid credentials THEN the system SHALL open a session
1.2. WHEN a member submits a wrong password THEN the system SHALL refuse it
     and say that the password was wrong
1.3. IF five attempts fail in a row THEN the system SHALL lock the account

### Requirement 2: Sign out

#### Acceptance Criteria

1.1. WHEN the member signs out THEN the system SHALL end the session
"""


def test_kiro_criteria_written_as_numbered_paragraph_lines_keep_their_numbers() -> None:
    spec = parsed(KIRO_NUMBERED_PARAGRAPHS)
    by_id = {c.id: c for c in spec.criteria}
    assert list(by_id)[:3] == ["1.1", "1.2", "1.3"]
    assert by_id["1.2"].checks[0].endswith("refuse it and say that the password was wrong")
    assert (by_id["1.2"].location.line, by_id["1.3"].location.line) == (10, 12)
    assert "User story: As a member" in by_id["1.1"].description


def test_kiro_numbered_paragraph_lines_copied_from_another_requirement_are_n_dot_m() -> None:
    assert ids(KIRO_NUMBERED_PARAGRAPHS) == ["1.1", "1.2", "1.3", "2.1"]
    assert lines(KIRO_NUMBERED_PARAGRAPHS)["2.1"] == 18


def test_kiro_criteria_as_paragraph_lines_with_a_bare_number_or_none() -> None:
    """Written after the fix: "1)" numbers, and EARS lines without a number."""
    text = (
        "### Requirement 3: Export\n\n#### Acceptance Criteria\n\n"
        "The criteria below apply to signed-in members:\n"
        "1) WHEN the member asks for a CSV THEN the system SHALL send one\n"
        "2) WHEN the report is empty THEN the system SHALL send only the header row\n\n"
        "### Requirement 4: Limits\n\n#### Acceptance Criteria\n\n"
        "WHEN a member exports more than 10 reports in a minute THE system SHALL wait\n"
        "THE system SHALL log each export\n"
    )
    assert ids(text) == ["3.1", "3.2", "4.1", "4.2"]


def test_an_acceptance_criteria_section_with_nothing_understood_is_an_error_at_its_line() -> None:
    text = (
        "# Story 1.4: Sign out\n\n## Story\n\nAs a member, I want to sign out.\n\n"
        "## Acceptance Criteria\n\nSee the session design for what happens here.\n\n"
        "## Dev Notes\n"
    )
    with pytest.raises(SpecError) as raised:
        parsed(text, "1.4.story.md")
    assert raised.value.line == 9
    assert "'See the session design for what happens here.'" in raised.value.message
    assert "'Acceptance Criteria' (line 7)" in raised.value.message


def test_a_kiro_criterion_in_plain_words_is_read_not_dropped() -> None:
    text = (
        "### Requirement 2: Sign out\n\n#### Acceptance Criteria\n\n"
        "Signing out ends the session on every device.\n"
    )
    assert ids(text) == ["2.1"]


SPECKIT_OLDER_LAYOUT = """\
# Feature Specification: Report export

**Feature Branch**: `004-report-export`

## User Scenarios & Testing *(mandatory)*

### Primary User Story
An analyst exports a saved report to share it with people who have no account.

### Acceptance Scenarios
1. **Given** a saved report with three rows, **When** the analyst clicks "Export CSV", **Then** \
a CSV file with a header and three rows downloads
2. **Given** an empty report, **When** the analyst exports it, **Then** the file holds only the \
header row

### Edge Cases
- What happens when a cell holds a comma?

## Requirements *(mandatory)*

### Functional Requirements
- **FR-001**: System MUST export every saved report as RFC 4180 CSV.
- **FR-002**: System MUST name the file after the report.
"""


def test_speckit_older_layout_acceptance_scenarios_are_criteria_under_their_numbers() -> None:
    spec = parsed(SPECKIT_OLDER_LAYOUT, "spec.md")
    assert [c.id for c in spec.criteria] == ["AS-1", "AS-2", "FR-001", "FR-002"]
    first = spec.criteria[0]
    assert first.location.line == 11
    assert "Primary user story: An analyst exports a saved report" in first.description
    story = next(r for r in spec.requirements if r.id == "Primary-User-Story")
    assert story.criteria == ("AS-1", "AS-2")


def test_speckit_older_layout_alone_is_recognised_and_edge_cases_are_not_scenarios() -> None:
    """Written after the fix: no FR items at all, an emoji heading, a scenario without
    Given, and an edge case list after it."""
    text = (
        "# Feature: Tags\n\n## User Scenarios\n\n### Primary User Story\n"
        "A writer tags a note.\n\n### ✅ Acceptance Scenarios\n\n"
        "1. **Given** a note, **When** the writer adds the tag `draft`, **Then** the note "
        "lists `draft`\n"
        "2. A tag longer than 40 characters is refused with a message\n"
        "3. **Given** a tagged note, **When** the tag is removed, **Then** the note lists none\n"
        "\n### Edge Cases\n\n- What happens with an empty tag?\n"
    )
    assert ids(text, "spec.md") == ["AS-1", "AS-2", "AS-3"]


def test_speckit_story_scenarios_under_their_label_count_every_item() -> None:
    """Written after the fix: bulleted scenarios under a story's "Acceptance Scenarios"
    label are numbered by position; numbered ones keep their numbers."""
    text = (
        "### User Story 1 - Tag a note (Priority: P2)\n\n**Acceptance Scenarios**:\n\n"
        "- **Given** a note, **When** it is tagged, **Then** the tag shows\n"
        "- A second tag shows after the first\n\n"
        "### User Story 2 - Find by tag (Priority: P1)\n\n**Acceptance Scenarios**:\n\n"
        "1. **Given** two tagged notes, **When** a tag is searched, **Then** one shows\n"
    )
    assert ids(text, "spec.md") == ["US1-AC1", "US1-AC2", "US2-AC1"]


def tasks_of(text: str, name: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """id -> (files, cites) of each task."""
    return {
        c.id: (c.task.files, c.task.cites)
        for c in parsed(text, name).criteria
        if c.task is not None
    }


OPENSPEC_TASKS = """\
## 1. Data

- [x] 1.1 Add the `totpSecret` field to the User model in schema.prisma
- [x] 1.2 Add the `verifyTotp` mutation to `api.graphql`
- [x] 1.3 Build the image from the Dockerfile
- [x] 1.4 Wire up Node.js, e.g. the request handler
- [ ] 1.5 Add recovery codes
"""


def test_dotted_file_names_with_unusual_extensions_are_named_files() -> None:
    found = tasks_of(OPENSPEC_TASKS, "tasks.md")
    assert found["1.1"][0] == ("schema.prisma",)
    assert found["1.2"][0] == ("api.graphql",)
    assert found["1.3"][0] == ("Dockerfile",)
    assert found["1.4"] == ((), ())  # Node.js and e.g. are words, and no OpenSpec change


@pytest.mark.parametrize(
    "name",
    ["openspec/changes/add-2fa/tasks.md", "openspec/changes/archive/2025-06-01-add-2fa/tasks.md"],
)
def test_an_openspec_change_s_ticked_tasks_naming_nothing_cite_the_change_s_specs(
    name: str,
) -> None:
    found = tasks_of(OPENSPEC_TASKS, name)
    assert found["1.4"] == ((), ("specs/",))
    assert found["1.1"] == (("schema.prisma",), ())  # its own evidence: no more
    assert found["1.5"] == ((), ())  # unticked: claims nothing


BMAD_HEADED = """\
# Story 2.3: Invoice reminders

## Story

**As a** bookkeeper, **I want** reminders for overdue invoices, **so that** I get paid sooner.

## Acceptance Criteria

### AC1: Reminder is queued
**Given** an invoice 7 days overdue
**When** the nightly job runs
**Then** one reminder is queued

### AC2: No duplicate
**Given** a reminder was sent today
**When** the job runs again
**Then** no second reminder is queued

## Tasks / Subtasks

- [ ] Task 1 (AC: 1)
"""


def test_bmad_criteria_headed_by_their_ids_keep_them_with_their_steps() -> None:
    spec = parsed(BMAD_HEADED, "2.3.story.md")
    assert [(c.id, c.title, c.location.line) for c in spec.criteria] == [
        ("AC1", "Reminder is queued", 9),
        ("AC2", "No duplicate", 14),
    ]
    assert "Given an invoice 7 days overdue When the nightly job runs" in spec.criteria[0].checks[1]


def test_bmad_criteria_headings_in_other_spellings() -> None:
    """Written after the fix: "AC-2 —", "Acceptance Criterion 3", and a list of steps."""
    text = BMAD_HEADED.replace("### AC2: No duplicate", "### AC-2 \u2014 No duplicate").replace(
        "## Tasks / Subtasks",
        "#### Acceptance Criterion 3 - Opt out\n\n- **Given** a customer who opted out\n"
        "- **Then** no reminder is queued\n\n## Tasks / Subtasks",
    )
    spec = parsed(text, "2.3.story.md")
    assert [(c.id, c.title) for c in spec.criteria] == [
        ("AC1", "Reminder is queued"),
        ("AC2", "No duplicate"),
        ("AC3", "Opt out"),
    ]
    assert spec.criteria[2].checks[1:] == (
        "Given a customer who opted out",
        "Then no reminder is queued",
    )


SPECKIT_SHORTHAND = """\
# Feature: Narration

### User Story 1 — Continuous narration (P1)

As a reader, I can press Play.

### Acceptance scenarios

1. Given a long page, when narration starts, then the first request is short.
2. Given a heading and prose, when planned, then the heading is its own unit.

### User Story 2 — Stop (P2)

**Acceptance Scenarios**:

**Given** narration plays, **when** Stop is pressed, **then** audio ends within 200 ms.

**Given** a queued unit, **when** the page changes, **then** the unit is dropped.

### Acceptance Scenarios → Tests

| Story | Scenario | Test |
|---|---|---|
| US1.1 | short first | T014 |

## Requirements

- **FR-001**: System MUST narrate.
"""


def test_speckit_scenarios_under_a_heading_beside_the_story_and_as_paragraphs() -> None:
    """ "(P1)" for "(Priority: P1)", "### Acceptance scenarios" at the story's own level, and
    scenarios written as paragraphs; a trace table under a like-named heading is no
    scenario and no error."""
    spec = parsed(SPECKIT_SHORTHAND, "spec.md")
    assert [(c.id, c.location.line, c.priority.value) for c in spec.criteria] == [
        ("US1-AC1", 9, "MUST"),
        ("US1-AC2", 10, "MUST"),
        ("US2-AC1", 16, "SHOULD"),
        ("US2-AC2", 18, "SHOULD"),
        ("FR-001", 28, "MUST"),
    ]


KIRO_OWN_IDS = """\
# Requirements

## Functional Area 1: Ledger

### US-001: Create a ledger entry
**As a** system
**I want** every operation to create an entry
**So that** there is an audit trail

**Acceptance Criteria**:
1. **WHEN** an operation runs, **THEN** the system SHALL create an entry
2. **WHEN** an entry is posted, **THEN** the entry SHALL become immutable

### US-002: Reverse an entry
**As a** bookkeeper **I want** to reverse entries

**Acceptance Criteria**:
1. **WHEN** a reversal is posted, **THEN** the system SHALL create a mirror entry
"""


def test_kiro_requirements_headed_by_their_own_ids_are_read_not_refused() -> None:
    spec = parsed(KIRO_OWN_IDS)
    assert [c.id for c in spec.criteria] == ["US-001.1", "US-001.2", "US-002.1"]
    assert "User story: As a system I want every operation" in spec.criteria[0].description
    assert [r.id for r in spec.requirements] == ["US-001", "US-002"]


def test_kiro_requirements_headed_req_and_r_ids() -> None:
    """Written after the fix: REQ-001 and R1.1 headings, lower-case "shall"."""
    text = (
        "## Requirements\n\n### REQ-001: Audio capture\n**User Story**: As a user, I want it.\n\n"
        "**Acceptance Criteria**:\n1. **WHEN** the app starts, **THEN** it shall pick the mic\n\n"
        "### R1.1: Dependencies\n\n**Acceptance Criteria**:\n"
        "1. **WHEN** the suite starts **THEN** every dependency **SHALL** import\n"
        "2. **WHEN** one is missing **THEN** the report **SHALL** name it\n"
    )
    assert ids(text) == ["REQ-001.1", "R1.1.1", "R1.1.2"]


def test_checklist_criteria_keep_the_ids_their_authors_wrote() -> None:
    story = (
        "# STORY-011: Split and download\n\n## Summary\n\nAs a visitor, I need the split.\n\n"
        "## Acceptance Criteria\n\n- [ ] AC-1: Split shows progress\n"
        "- [ ] AC-2: Editing returns to review\n- [x] AC-3: Delete removes the files\n"
    )
    assert ids(story, "story.md") == ["AC-1", "AC-2", "AC-3"]
    plain = (
        "# Feature: Rescue\n\n## Scope\n\n- scan sessions\n\n## Acceptance Criteria\n\n"
        "- [ ] AC1: The hub shows a rescue entry\n- [ ] AC2: The user can scan sessions\n"
        "  and sees their ids\n- [ ] AC3: A rescue backs up first\n"
    )
    assert ids(plain, "feature.md") == ["AC1", "AC2", "AC3"]


def test_a_brace_pair_in_a_named_path_names_each_file() -> None:
    text = (
        "## Phase 1\n\n- [x] 1.3 Create `migrations/0001_users.{up,down}.sql` for users\n"
        "- [x] 1.4 Add `lib/haptics/{service,provider}.dart` and `pubspec.yaml`\n"
    )
    found = tasks_of(text, "tasks.md")
    assert found["1.3"][0] == ("migrations/0001_users.up.sql", "migrations/0001_users.down.sql")
    assert found["1.4"][0] == (
        "lib/haptics/service.dart",
        "lib/haptics/provider.dart",
        "pubspec.yaml",
    )


def test_a_task_list_s_own_acceptance_criteria_are_criteria_beside_its_tasks() -> None:
    text = (
        "# Tasks: export\n\n## Tasks\n\n- [x] 1.1 Write `src/export.py`\n- [ ] 1.2 Document it\n\n"
        "## Acceptance Criteria\n\n- `pytest tests/test_export.py -q` passes\n"
        "- The CSV opens in a spreadsheet\n"
    )
    spec = parsed(text, "tasks.md")
    assert [c.id for c in spec.criteria] == ["1.1", "1.2", "AC-1", "AC-2"]
    assert spec.criteria[2].command == "pytest tests/test_export.py -q"
    assert spec.criteria[3].task is None


def test_a_task_list_s_criteria_with_their_own_ids_or_numbers() -> None:
    """Written after the fix: numbered criteria, and items that name themselves."""
    text = (
        "## Tasks\n\n- [x] T001 Write `src/a.py`\n\n### ✅ Acceptance Criteria\n\n"
        "1. Rows keep their order\n2. **AC-9**: Dates are ISO 8601\n"
    )
    assert ids(text, "tasks.md") == ["T001", "AC-1", "AC-9"]


def test_criteria_written_as_a_table_are_one_a_row() -> None:
    kiro = (
        "### Requirement 1: Export\n\n#### Acceptance Criteria\n\n| # | Criterion |\n|---|---|\n"
        "| 1 | WHEN the user exports THEN the system SHALL write a CSV |\n"
        "| 2 | WHEN the report is empty THEN the system SHALL write the header only |\n"
    )
    assert lines(kiro) == {"1.1": 7, "1.2": 8}
    bmad = (
        "# Story 1.2: Export\n\n## Story\n\nAs an analyst, I want CSV export, so that I share.\n\n"
        "## Acceptance Criteria\n\n| AC | Criterion | Notes |\n|----|----|----|\n"
        "| AC1 | The export writes RFC 4180 CSV | |\n"
        "| AC2 | An empty report has a header | edge |\n\n## Dev Notes\n"
    )
    spec = parsed(bmad, "1.2.story.md")
    assert [(c.id, c.title) for c in spec.criteria] == [
        ("AC1", "The export writes RFC 4180 CSV"),
        ("AC2", "An empty report has a header \u2014 edge"),
    ]


def test_unnumbered_table_rows_are_counted_and_a_section_not_understood_is_an_error() -> None:
    """Written after the fix: rows without a number; then a stories file whose criteria
    label is followed by prose it cannot read."""
    kiro = (
        "### Requirement 4: Limits\n\n#### Acceptance Criteria\n\n| Criterion |\n|---|\n"
        "| THE system SHALL cap exports at 10 a minute |\n| THE system SHALL log each export |\n"
    )
    assert ids(kiro) == ["4.1", "4.2"]
    stories = (
        "### US-1: Reminders\n\n**Acceptance Criteria:**\n- AC-1.1: Given a due invoice, Then "
        "a reminder is queued\n\n### US-2: Opt out\n\n**Acceptance Criteria:**\n\n"
        "Same as the reminder criteria, but for opted-out customers.\n"
    )
    with pytest.raises(SpecError) as raised:
        parsed(stories)
    assert raised.value.line == 10
    assert "'Acceptance Criteria:' (line 8)" in raised.value.message
