"""Requirement extraction: a spec in seed 002's style (numbered sections, MUST/SHOULD/COULD
sentences or checklists, no AC blocks) becomes criteria with ids that stay put."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.judges import Judge

from pytest_acceptance.model import Method, Priority, SpecError
from pytest_acceptance.spec.load import parse_spec_text

SPEC = """\
# Implement Skill

Intro prose that MUST be ignored: it is in no numbered section.

## §1 Overview

The skill makes drift impossible. Nothing is required here.

## §2 Architecture

The orchestrator MUST NOT implement directly. It delegates.
Sub-agents SHOULD write JSON to disk, e.g. fragments. Reports COULD be dated.

### Phase 1: Planning

- Implementation MUST NOT begin until the user approves.
- The tracker MAY hold notes.

### The Implementation Tracker (§2.1)

The tracker MUST be committed to git.

## 3.2 Verification

Each fragment SHALL name its section. A statement listing MUST/SHOULD/COULD is a mention,
and `MUST` in code is too. Lower-case must is prose.

```text
The code block MUST be ignored.
```

## Appendix

Everything here MUST be ignored: the appendix has no number.
"""


def extract(text: str = SPEC) -> dict[str, tuple[str, Priority, int, str]]:
    spec = parse_spec_text(text, Path("spec.md"))
    assert all(c.method is Method.SUBAGENT for c in spec.criteria)
    return {c.id: (c.checks[0], c.priority, c.location.line, c.category) for c in spec.criteria}


def test_each_keyword_sentence_of_a_numbered_section_is_one_criterion() -> None:
    lines = SPEC.splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(lines, 1) if text in line)

    assert extract() == {
        "S2-orchestrator-implement-directly": (
            "The orchestrator MUST NOT implement directly.",
            Priority.MUST,
            line_of("MUST NOT implement"),
            "§2 Architecture",
        ),
        "S2-sub-agents-write-json-disk": (
            "Sub-agents SHOULD write JSON to disk, e.g. fragments.",
            Priority.SHOULD,
            line_of("SHOULD write"),
            "§2 Architecture",
        ),
        "S2-reports-dated": (
            "Reports COULD be dated.",
            Priority.COULD,
            line_of("COULD"),
            "§2 Architecture",
        ),
        "S2-implementation-begin-until-user-approves": (
            "Implementation MUST NOT begin until the user approves.",
            Priority.MUST,
            line_of("MUST NOT begin"),
            "§2 Architecture",
        ),
        "S2-tracker-hold-notes": (
            "The tracker MAY hold notes.",
            Priority.COULD,
            line_of("MAY"),
            "§2 Architecture",
        ),
        "S2.1-tracker-committed-git": (
            "The tracker MUST be committed to git.",
            Priority.MUST,
            line_of("committed"),
            "The Implementation Tracker (§2.1)",
        ),
        "S3.2-each-fragment-name-section": (
            "Each fragment SHALL name its section.",
            Priority.MUST,
            line_of("SHALL"),
            "3.2 Verification",
        ),
    }


def test_ids_do_not_move_when_text_above_them_changes() -> None:
    """A section inserted above, and a requirement inserted above in the same section, leave
    every other id on its statement."""
    before = extract()
    changed = (
        SPEC.replace(
            "## 3.2 Verification",
            "## §2.5 Added\n\nA new rule MUST hold.\nAnother SHOULD too.\n\n## 3.2 Verification",
        )
        .replace("The orchestrator MUST NOT", "Logs MUST rotate. The orchestrator MUST NOT")
        .replace("## §1 Overview", "## §1 Overview\n\nA preamble MUST be read first.")
    )
    after = extract(changed)
    for ident, (statement, *_) in before.items():
        assert after[ident][0] == statement
    assert after["S2-logs-rotate"][0] == "Logs MUST rotate."
    assert after["S2.5-new-rule-hold"][0] == "A new rule MUST hold."


CLAUSES = """\
# Design of the exporter

## §2 Behaviour

§2.1 The exporter MUST write one file per report.
It MUST refuse a report with no rows.

§2.2 Every file SHALL start with a header line.

§2.2 A second clause numbered alike SHOULD still be read.

§2.3 This clause states nothing required.
"""


def test_a_paragraph_opened_by_a_clause_number_is_one_criterion_named_by_it() -> None:
    found = extract(CLAUSES)
    assert list(found) == ["S2.1", "S2.2", "S2.2-2"]
    statement, priority, line, _category = found["S2.1"]
    assert statement.startswith("The exporter MUST write one file per report.")
    assert statement.endswith("It MUST refuse a report with no rows.")
    assert (priority, line) == (Priority.MUST, 5)
    assert found["S2.2-2"][1] is Priority.SHOULD
    # Prose added above (another clause, a longer intro) moves no id.
    longer = CLAUSES.replace("## §2 Behaviour\n", "Intro.\n\n## §2 Behaviour\n\nMore.\n")
    assert list(extract(longer)) == list(found)


def test_the_strongest_keyword_sets_the_priority() -> None:
    text = "## 4 Rules\n\nIt SHOULD be quick and MUST be right.\n"
    assert extract(text)["S4-quick-right"][1] is Priority.MUST


@pytest.mark.parametrize(
    ("heading", "ref"),
    [
        ("## 3.2 Verification", "3.2"),
        ("## 3.2. Verification", "3.2"),
        ("## 7) Limits", "7"),
        ("## §4 Data Model", "4"),
        ("### Fragments & Reports (§4.2\N{EN DASH}4.3)", "4.2"),
        ("### Markers (§4.4, §4.6)", "4.4"),
    ],
)
def test_section_references_from_headings(heading: str, ref: str) -> None:
    assert list(extract(f"{heading}\n\nIt MUST work.\n")) == [f"S{ref}-work"]


@pytest.mark.parametrize(
    "heading", ["## Phase 1: Planning", "## 2024 Roadmap", "## 1.5x faster builds"]
)
def test_headings_without_a_section_number_are_not_sections(heading: str) -> None:
    with pytest.raises(SpecError, match="no acceptance criteria found"):
        extract(f"{heading}\n\nIt MUST work.\n")


def test_extracted_ids_are_unique_and_safe_file_names() -> None:
    text = "## §5 A\n\nX MUST a.\n\n## §5 Again\n\nIt MUST b. It MUST b. It MUST b.\n"
    ids = list(extract(text))
    assert ids == ["S5-x", "S5-b", "S5-b-2", "S5-b-3"]
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", ident) for ident in ids)


def test_a_spec_with_neither_criteria_nor_requirements_is_still_an_error() -> None:
    with pytest.raises(SpecError) as excinfo:
        extract("# Prose\n\n## 1 Intro\n\nNothing normative here.\n")
    assert excinfo.value.line == 1
    assert '"#### AC-1: Title"' in excinfo.value.message
    assert 'numbered heading like "## 3.2 Title"' in excinfo.value.message


def test_a_verification_block_under_no_criterion_is_an_error_not_extracted_around() -> None:
    text = (
        "## 1 Rules\n\nIt MUST work.\n\n#### AC one\n```yaml\nmethod: bash\ncommand: 'true'\n```\n"
    )
    with pytest.raises(SpecError, match="belongs to no criterion") as excinfo:
        extract(text)
    assert excinfo.value.line == 6


def test_ac_blocks_take_precedence_over_extraction() -> None:
    text = "## 1 Rules\n\nIt MUST work.\n\n#### AC-1: t\n```yaml\nmethod: manual\n```\n"
    spec = parse_spec_text(text, Path("spec.md"))
    assert [c.id for c in spec.criteria] == ["AC-1"]


def test_an_extracted_spec_is_verified_by_the_agent_end_to_end(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    judge = Judge(tmp_path_factory.mktemp("judge"))
    judge.plan({"S2.1-tracker-committed-git": ["fail"]})
    pytester.makeini(f"[pytest]\nacceptance_agent_command = {judge.command}\n")
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest_subprocess("--acceptance", "spec.md", "-n", "2")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["### Failed (1)", "- S2.1-tracker-committed-git: The tracker MUST be committed*"]
    )
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert [c["id"] for c in verdict["criteria"]] == list(extract())
    assert "The tracker MUST be committed to git." in judge.prompt("S2.1-tracker-committed-git")
    report = json.loads(
        next((pytester.path / ".acceptance" / "specs").glob("*/report.json")).read_text()
    )
    assert report["gaps"] == {"high": ["S2.1-tracker-committed-git"], "medium": [], "low": []}


SECTIONED = """\
# Notification Service

## 1. Overview

This document describes the notification service.

## 2. Functional Requirements

### 2.1 Account Events

The system MUST send notifications for:

- password changes
- sign-ins from a new device
- email address changes
- two-factor authentication being disabled

Each notification SHOULD arrive within 60 seconds. Users COULD choose a quiet period.

### 2.2 Delivery

- Email delivery MUST retry three times.
- Push delivery SHOULD be used when the app is installed.

## 3. Non-Functional Requirements

The service MUST handle 1,000 notifications per second. It MUST NOT drop a queued one.
"""


def test_each_statement_and_each_item_under_a_lead_in_is_a_requirement_of_its_own() -> None:
    found = extract(SECTIONED)
    assert list(found) == [
        "S2.1-system-send-notifications",
        "S2.1-password-changes",
        "S2.1-sign-ins-new-device",
        "S2.1-email-address-changes",
        "S2.1-two-factor-authentication-being-disabled",
        "S2.1-each-notification-arrive-within-60",
        "S2.1-users-choose-quiet-period",
        "S2.2-email-delivery-retry-three-times",
        "S2.2-push-delivery-used-when-app",
        "S3-service-handle-1-000-notifications",
        "S3-drop-queued-one",
    ]
    statement, priority, line, category = found["S2.1-sign-ins-new-device"]
    assert statement == "The system MUST send notifications for: sign-ins from a new device"
    assert (priority, line, category) == (Priority.MUST, 14, "2.1 Account Events")
    lead_in = found["S2.1-system-send-notifications"][0]
    assert lead_in.splitlines() == [
        "The system MUST send notifications for:",
        "- password changes",
        "- sign-ins from a new device",
        "- email address changes",
        "- two-factor authentication being disabled",
    ]
    spec = parse_spec_text(SECTIONED, Path("spec.md"))
    assert [r.id for r in spec.requirements] == list(found)


def test_list_items_of_a_lead_in_in_other_shapes_are_requirements_too() -> None:
    """Written after the fix: a numbered list, "the following" without a colon, an item with
    its own weaker keyword, nested details, a stated check, and a list under no keyword."""
    text = (
        "## §4 Export\n\n"
        "The exporter MUST support the following formats\n"
        "1. CSV, quoted as RFC 4180 says\n"
        "   - with a header row\n"
        "2. JSON lines; it SHOULD stream them\n\n"
        "The build MUST pass these checks:\n\n"
        "- `true` exits 0\n\n"
        "Formats we thought about:\n\n- XML\n- YAML\n"
    )
    spec = parse_spec_text(text, Path("spec.md"))
    by_id = {c.id: c for c in spec.criteria}
    assert list(by_id) == [
        "S4-exporter-support-following-formats",
        "S4-csv-quoted-rfc-4180-says",
        "S4-json-lines-stream-them",
        "S4-build-pass-these-checks",
        "S4-true-exits-0",
    ]
    csv = by_id["S4-csv-quoted-rfc-4180-says"].checks[0]
    assert csv.splitlines() == [
        "The exporter MUST support the following formats: CSV, quoted as RFC 4180 says",
        "- with a header row",
    ]
    assert by_id["S4-json-lines-stream-them"].priority is Priority.SHOULD
    assert by_id["S4-true-exits-0"].command == "true"
    assert by_id["S4-true-exits-0"].method is Method.BASH


def test_each_item_under_an_acceptance_criteria_heading_is_a_criterion_whatever_its_words() -> None:
    """A plan whose numbered sections each list their criteria in lower-case prose: every
    item is one, under the section's reference; nested details stay with their item."""
    text = (
        "# Plan\n\n## 1. Store custom ids\n\n#### Why\n\nFacilities want their own ids.\n\n"
        "#### Acceptance criteria\n"
        "- the map should be in the agents table, empty by default\n"
        "- its keys are facility ids\n  - and its values strings\n\n"
        "## 2. Print them\n\n#### ✅ Acceptance Criteria\n\n"
        "1. The PDF shows the custom id when one is set\n2. Otherwise the internal one\n"
    )
    found = extract(text)
    assert list(found) == [
        "S1-map-agents-table-empty-default",
        "S1-keys-facility-ids",
        "S2-pdf-shows-custom-id-when",
        "S2-otherwise-internal-one",
    ]
    assert found["S1-keys-facility-ids"][0] == "its keys are facility ids\n- and its values strings"
    assert found["S2-pdf-shows-custom-id-when"][2] == 18


def test_items_under_a_definition_of_done_or_unnumbered_criteria_heading_are_criteria() -> None:
    """Written after the fix: no numbered section at all, and a reference spec beside it
    still wins with its own criterion headings."""
    text = "# Export\n\n## Acceptance Criteria\n\n* rows keep their order\n* dates are ISO 8601\n"
    assert list(extract(text)) == ["AC-rows-keep-their-order", "AC-dates-iso-8601"]
    done = "# Release\n\n## Definition of Done\n\n- the changelog names the fix\n"
    assert list(extract(done)) == ["DOD-changelog-names-fix"]


LISTED_PROSE = """\
# Export

## Acceptance Criteria

The export is done when:

- rows keep their order

Given an empty report, when it is exported, then the file holds the header only.

| ID | Criterion |
|----|----|
| AC-7 | Dates are ISO 8601 |
| 8 | Numbers use a dot |
"""


def test_paragraphs_and_table_rows_under_an_acceptance_criteria_heading_are_criteria() -> None:
    """Nothing under the heading is dropped: an item, a paragraph, each table row; an
    introduction ending in ":" is not a criterion of its own."""
    found = extract(LISTED_PROSE)
    assert [(ident, found[ident][2]) for ident in found] == [
        ("AC-rows-keep-their-order", 7),
        ("AC-given-empty-report-when-exported", 9),
        ("AC-7", 13),
        ("AC-8", 14),
    ]


def test_a_definition_of_done_paragraph_under_a_numbered_section_is_a_criterion() -> None:
    """Written after the fix: a paragraph with two sentences stays one criterion."""
    text = "## 5. Definition of Done\n\nAll of the above pass in CI. Docs are updated.\n"
    assert list(extract(text)) == ["S5-all-above-pass-ci-docs"]


def test_a_list_after_a_sentence_without_a_keyword_is_not_split_under_an_earlier_one() -> None:
    """ "Reports MUST be signed. They cover:" - the list is what they cover, not what must be
    signed: it stays with the statement as context and gives no requirements of its own."""
    text = "## 2 Reports\n\nReports MUST be signed. They cover:\n\n- monthly totals\n- refunds\n"
    assert extract(text) == {
        "S2-reports-signed": (
            "Reports MUST be signed.\n- monthly totals\n- refunds",
            Priority.MUST,
            3,
            "2 Reports",
        )
    }
