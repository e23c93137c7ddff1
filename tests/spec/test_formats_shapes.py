"""The shapes authors write that used to be missed: Kiro numbered sections, smart-ralph user
stories, manifest-dev headings, a definition of done in §-numbered prose, task lists of
spec-kit, Kiro, OpenSpec and plain checklists, Gherkin features, and Gauge (refused). Each
example in tests/spec/format_specs/ parses under its authors' ids, titles, methods and
``file:line`` locations, with the requirements it carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.format_examples import line_of, parsed

from pytest_acceptance.model import Method, Priority, Scenario, Spec, SpecError, Task
from pytest_acceptance.spec.load import parse_spec_text

AGENT, BASH, TASK = Method.SUBAGENT, Method.BASH, Method.TASK


def requirements(spec: Spec) -> list[tuple[str, tuple[str, ...]]]:
    return [(r.id, r.criteria) for r in spec.requirements]


ITEMS = [("FR", 1), ("FR", 2), ("FR", 3), ("FR", 4), ("SC", 1), ("SC", 2)]


def test_speckit_stories_and_id_items_are_the_requirements_of_the_matrix() -> None:
    spec = parsed("speckit/specs/001-csv-export/spec.md")
    assert requirements(spec) == [
        ("US1", ("US1-AC1", "US1-AC2")),
        ("US2", ("US2-AC1",)),
        ("US3", ("US3-AC1",)),
        *((f"{kind}-00{n}", (f"{kind}-00{n}",)) for kind, n in ITEMS),
    ]
    assert spec.requirements[0].title == "Download a saved report"


def test_kiro_numbered_sections_are_requirements_with_n_m_criteria() -> None:
    relative = "kiro-sections/requirements.md"
    spec = parsed(relative)
    assert [(c.id, c.method) for c in spec.criteria] == [
        ("3.1.1", AGENT),
        ("3.1.2", AGENT),
        ("3.1.3", AGENT),
        ("3.2.1", AGENT),
        ("3.2.2", AGENT),
        ("3.2.3", BASH),  # "Done when `npm test -- sync` passes."
    ]
    by_id = {c.id: c for c in spec.criteria}
    assert by_id["3.1.2"].location.line == line_of(relative, "already belongs to a member")
    assert by_id["3.1.2"].category == "3.1 Invite members"
    assert "User story: As a list owner, I want to invite" in by_id["3.1.2"].description
    assert (by_id["3.2.3"].command, by_id["3.2.3"].pass_condition) == ("npm test -- sync", None)
    assert by_id["3.2.3"].how == "bash: `npm test -- sync`, exit code 0, as the prose states"
    assert by_id["3.1.1"].how == "agent: no runnable check stated"
    assert requirements(spec) == [
        ("3.1", ("3.1.1", "3.1.2", "3.1.3")),
        ("3.2", ("3.2.1", "3.2.2", "3.2.3")),
    ]
    assert spec.requirements[0].title == "Invite members"


def test_kiro_items_with_their_own_ids_keep_them_and_count_per_requirement() -> None:
    text = (
        "# Requirements\n\n### Requirement 1: Sign in\n**User Story (US-001):** As a user, I "
        "want x, so that y\n\n#### Acceptance Criteria\n- **AC-001**: WHEN a THEN the system "
        "SHALL b\n\n### Requirement 2: Sign out\n**User Story:** As a user, I want z\n\n"
        "#### Acceptance Criteria\n- WHEN c THEN the system SHALL d\n- WHEN e THEN the system "
        "SHALL f\n"
    )
    spec = parse_spec_text(text, Path("requirements.md"))
    assert [c.id for c in spec.criteria] == ["AC-001", "2.1", "2.2"]
    assert requirements(spec) == [("1", ("AC-001",)), ("2", ("2.1", "2.2"))]


def test_smart_ralph_stories_tables_and_stated_checks() -> None:
    relative = "stories/requirements.md"
    spec = parsed(relative)
    assert [(c.id, c.method, c.priority) for c in spec.criteria] == [
        ("AC-1.1", AGENT, Priority.MUST),
        ("AC-1.2", AGENT, Priority.MUST),
        ("AC-1.3", BASH, Priority.MUST),
        ("AC-2.1", AGENT, Priority.MUST),
        ("NFR-1", AGENT, Priority.MUST),
        ("NFR-2", AGENT, Priority.MUST),
    ]
    by_id = {c.id: c for c in spec.criteria}
    assert by_id["AC-1.3"].command == "pytest tests/test_schedule.py -q"
    assert by_id["AC-2.1"].checks == (
        "Given a disputed invoice, When the nightly job runs, Then no reminder is queued",
        "and the dispute is listed in the job's summary",
    )
    assert by_id["AC-2.1"].location.line == line_of(relative, "AC-2.1")
    assert by_id["NFR-1"].location.line == line_of(relative, "| NFR-1 |")
    assert by_id["NFR-1"].title == (
        "Performance (Metric: Nightly job duration for 50,000 invoices; Target: Under 10 minutes)"
    )
    assert (
        "User story: As a bookkeeper I want to have reminders sent" in by_id["AC-1.1"].description
    )
    assert requirements(spec) == [
        ("US-1", ("AC-1.1", "AC-1.2", "AC-1.3")),
        ("US-2", ("AC-2.1",)),
        ("FR-1", ("AC-1.1", "AC-1.2")),
        ("FR-2", ("AC-2.1",)),
        ("FR-3", ()),  # cites AC-3.1, which no story defines: a requirement nothing checks
        ("NFR-1", ("NFR-1",)),
        ("NFR-2", ("NFR-2",)),
    ]


def test_manifest_headings_take_their_method_from_done_when_and_the_gate() -> None:
    relative = "manifest/manifest-headings.md"
    spec = parsed(relative)
    assert [(c.id, c.method, c.command, c.pass_condition) for c in spec.criteria] == [
        ("INV-G1", BASH, "pytest -q", None),
        ("INV-G2", BASH, "ruff check src tests", "output is empty"),
        ("INV-G3", AGENT, None, None),
        ("AC-1.1", BASH, "pytest tests/audit/test_export.py -q", None),
        ("AC-1.2", AGENT, None, None),
        ("AC-2.1", BASH, "grep -q 'data-export=\"csv\"' src/admin/templates/audit.html", None),
    ]  # the risk R-1 and the process guidance PG-1 are not criteria
    by_id = {c.id: c for c in spec.criteria}
    assert by_id["INV-G3"].how == "agent: Judgment gate"
    assert by_id["AC-1.2"].title == "The header names every column"
    assert by_id["AC-1.1"].location.line == line_of(relative, "#### AC-1.1")
    assert by_id["AC-1.1"].category == "Deliverable 1: Streaming exporter"
    assert requirements(spec) == [
        ("Deliverable-1", ("AC-1.1", "AC-1.2")),
        ("Deliverable-2", ("AC-2.1",)),
        ("INV-G1", ("INV-G1",)),
        ("INV-G2", ("INV-G2",)),
        ("INV-G3", ("INV-G3",)),
    ]


def test_a_deterministic_gate_without_a_command_is_an_error_at_its_heading() -> None:
    text = (
        "# Definition: x\n\n## 3. Global Invariants\n\n### INV-G1 — Limits hold\n\n"
        "Done when the limiter uses `RATE`. Deterministic gate.\n"
    )
    with pytest.raises(SpecError, match="INV-G1 says Deterministic gate but names no") as info:
        parse_spec_text(text, Path("manifest.md"))
    assert info.value.line == 5


def test_a_definition_of_done_in_numbered_prose_is_one_criterion_per_item_and_row() -> None:
    relative = "prose/definition-of-done.md"
    spec = parsed(relative)
    assert [(c.id, c.method) for c in spec.criteria] == [
        ("S4.1-json-export-read-file-standard", AGENT),
        ("S4.1-pull-request-without-labels-lands", AGENT),
        ("S4.1-malformed-json-stops-run-exit", AGENT),
        ("S4.2-sections-appear-order-3-empty", AGENT),
        ("S4.2-notes-check-fixtures-m1-json", BASH),
        ("S4.2-each-entry-links-pull-request", AGENT),
        ("S4.3-one-pull-request-per-section", AGENT),
        ("S4.3-title-pipe-character", AGENT),
        ("S4.3-no-pull-requests-all", AGENT),
    ]  # nothing from §1-§3: they state no requirement
    by_id = {c.id: c for c in spec.criteria}
    malformed = by_id["S4.1-malformed-json-stops-run-exit"]
    assert malformed.checks == (
        "Malformed JSON stops the run with exit code 2 and the line of the error\n"
        "- the message names the file",
    )
    assert malformed.location.line == line_of(relative, "Malformed JSON")
    row = by_id["S4.3-title-pipe-character"]
    assert row.title == "A title with a pipe character (Markdown, HTML)"
    assert row.location.line == line_of(relative, "| A title with a pipe")
    assert by_id["S4.2-notes-check-fixtures-m1-json"].command == "notes --check fixtures/m1.json"


def test_speckit_tasks_cite_their_story_and_name_their_files() -> None:
    relative = "tasks/speckit-tasks.md"
    spec = parsed(relative)
    tasks = {c.id: (c.method, c.task) for c in spec.criteria}
    assert list(tasks) == ["T001", "T002", "T010", "T011", "T012", "T020", "T021", "T030"]
    assert tasks["T010"] == (
        TASK,
        Task(ticked=True, files=("src/export/csv_writer.py",), cites=("US1",)),
    )
    assert tasks["T002"][1].files == ("pyproject.toml",)  # type: ignore[union-attr]
    assert tasks["T020"] == (TASK, Task(ticked=True, cites=("US2",)))
    assert tasks["T021"] == (
        TASK,
        Task(ticked=False, removed=("src/legacy_export.py",), cites=("US2",)),
    )
    assert tasks["T030"] == (TASK, Task(ticked=True))  # names no evidence: a phantom
    t030 = spec.criteria[-1]
    assert t030.how == "task: ticked; evidence: none named (a phantom completion)"
    assert spec.criteria[2].location.line == line_of(relative, "T010")
    assert spec.criteria[2].category == (
        "Phase 3: User Story 1 - Download a saved report (Priority: P1) 🎯 MVP"
    )


def test_kiro_tasks_cite_criteria_and_a_parent_stands_on_its_subtasks() -> None:
    spec = parsed("tasks/kiro-tasks.md")
    tasks = {c.id: c.task for c in spec.criteria}
    assert tasks == {
        "1": Task(ticked=True, files=("src/reset/tokens.py",), cites=("1.1", "2.2")),
        "2": Task(ticked=True, subtasks=("2.1", "2.2")),
        "2.1": Task(ticked=True, files=("src/reset/views.py",), cites=("1.3",)),
        "2.2": Task(ticked=False, cites=("1.2",)),
        "3": Task(ticked=True, cites=("2.1",)),
        "4": Task(ticked=False, cites=("1.1",)),  # Kiro's optional "- [ ]*" task
    }


def test_openspec_and_plain_checklists_name_removed_files_and_take_word_ids() -> None:
    openspec = {c.id: c.task for c in parsed("tasks/openspec-tasks.md").criteria}
    assert openspec["1.1"] == Task(ticked=True, files=("migrations/0042_totp.sql",))
    assert openspec["2.1"] == Task(ticked=True, removed=("src/auth/remember_me.py",))
    checklist = parsed("tasks/checklist.md")
    assert [(c.id, c.method) for c in checklist.criteria] == [
        ("update-changelog-changelog-md", TASK),
        ("tag-release", TASK),  # ticked with no evidence: a phantom completion when run
        ("announce-mailing-list", TASK),
    ]


def test_gherkin_scenarios_and_outline_rows_are_criteria_with_tags() -> None:
    relative = "gherkin/features/cart.feature"
    spec = parsed(relative)
    assert spec.title == "Shopping cart"
    assert [(c.id, c.title, c.location.line, c.tags) for c in spec.criteria] == [
        ("Add-one-item", "Add one item", line_of(relative, "Scenario: Add one item"),
         ("shop", "smoke")),
        ("Add-several-items.1", "Add several items (count=2)", line_of(relative, "| 2 "),
         ("shop", "bulk")),
        ("Add-several-items.2", "Add several items (count=3)", line_of(relative, "| 3 "),
         ("shop", "bulk")),
        ("Remove-an-item-that-is-not-there", "Remove an item that is not there",
         line_of(relative, "Scenario: Remove an item"), ("shop",)),
    ]  # fmt: skip
    one, two, _, removed = spec.criteria
    assert one.method is AGENT and one.checks == (
        'When the customer adds "apple"',
        "Then the cart holds 1 item",
    )
    assert "Background:\nGiven an empty cart" in one.description
    assert two.checks == ("When the customer adds 2 items", "Then the cart holds 2 items")
    outline_line = line_of(relative, "Scenario Outline")
    assert two.scenario == Scenario("Add several items", outline_line, 1, line_of(relative, "| 2 "))
    assert removed.category == "Shopping cart — Removing never goes below zero"
    assert removed.checks[-1] == "And the page says:\n  pear was not in your cart"
    assert requirements(spec)[1] == (
        "Add-several-items",
        ("Add-several-items.1", "Add-several-items.2"),
    )


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("# language: fr\nFonctionnalité: x\n", 1, "language 'fr'"),
        ("Feature: x\n\n  Scenario Outline: y\n    Given <a>\n", 3, "has no Examples rows"),
        ("Feature: x\n  Scenario: y\n    Given a\n  Scenario: y\n    Given b\n", 4, "duplicate"),
        ("Feature: x\n  Just a description.\n", 1, "no acceptance criteria found"),
    ],
)
def test_gherkin_problems_name_their_line(text: str, line: int, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_spec_text(text, Path("x.feature"))
    assert info.value.line == line


def test_a_gauge_spec_is_refused_naming_gauges_runner() -> None:
    with pytest.raises(SpecError, match=r"Gauge specification: run it with Gauge's own runner"):
        parsed("gauge/checkout.spec")
