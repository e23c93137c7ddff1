"""Specs as their authors write them — spec-kit, Kiro (both layouts), OpenSpec, BMAD,
smart-ralph user stories, task lists, manifest-dev manifests (items and headings),
requirement prose, Gherkin — parse with the authors' ids, titles, priorities, methods and
lines (the example specs live in tests/spec/format_specs/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.format_examples import EXAMPLES, line_of, parsed

from pytest_acceptance.model import Criterion, Method, Priority, Spec, SpecError, Task
from pytest_acceptance.spec.formats import builtin_formats, detect
from pytest_acceptance.spec.load import parse_spec_text

M, S, C = Priority.MUST, Priority.SHOULD, Priority.COULD
AGENT, BASH, TASK = Method.SUBAGENT, Method.BASH, Method.TASK


def summary(criterion: Criterion) -> tuple[str, Method, Priority]:
    return criterion.id, criterion.method, criterion.priority


@pytest.mark.parametrize(
    ("relative", "name"),
    [
        ("speckit/specs/001-csv-export/spec.md", "spec-kit"),
        ("kiro/requirements.md", "kiro"),
        ("kiro/design.md", "kiro-design"),
        ("openspec/specs/auth/spec.md", "openspec"),
        ("openspec/changes/add-totp/specs/auth/spec.md", "openspec"),
        ("bmad/1.3.profile-avatar.md", "bmad"),
        ("bmad/2.1.invoice-export.md", "bmad"),
        ("tasks/tasks.md", "tasks"),
        ("tasks/speckit-tasks.md", "tasks"),
        ("tasks/kiro-tasks.md", "tasks"),
        ("tasks/openspec-tasks.md", "tasks"),
        ("tasks/checklist.md", "tasks"),
        ("manifest/manifest.md", "manifest"),
        ("manifest/manifest-headings.md", "manifest"),
        ("prose/requirements.md", "prose"),
        ("prose/definition-of-done.md", "prose"),
        ("kiro-sections/requirements.md", "kiro"),
        ("stories/requirements.md", "stories"),
        ("gherkin/features/cart.feature", "gherkin"),
    ],
)
def test_each_example_is_recognised_as_its_format(relative: str, name: str) -> None:
    found, score = detect((EXAMPLES / relative).read_text(encoding="utf-8"), builtin_formats())
    assert found is not None and (found.name, score >= 0.5) == (name, True)


def test_a_readme_is_recognised_as_no_format() -> None:
    assert detect((EXAMPLES / "README.md").read_text(), builtin_formats()) == (None, 0.0)


def test_speckit_requirements_and_story_scenarios_keep_the_authors_ids() -> None:
    relative = "speckit/specs/001-csv-export/spec.md"
    spec = parsed(relative)
    assert [summary(c) for c in spec.criteria] == [
        ("US1-AC1", AGENT, M),
        ("US1-AC2", AGENT, M),
        ("US2-AC1", AGENT, S),  # Priority: P2
        ("US3-AC1", AGENT, C),  # Priority: P3
        ("FR-001", AGENT, M),
        ("FR-002", AGENT, M),
        ("FR-003", AGENT, S),  # its keyword is SHOULD
        ("FR-004", AGENT, C),  # MAY
        ("SC-001", AGENT, M),
        ("SC-002", AGENT, M),
    ]
    by_id = {c.id: c for c in spec.criteria}
    scenario = by_id["US1-AC1"]
    assert scenario.location.line == line_of(relative, "a saved report with three rows")
    assert scenario.category == "User Story 1 - Download a saved report (Priority: P1)"
    assert "Independent test: Save one report with three rows" in scenario.description
    assert scenario.title.startswith("Given a saved report with three rows, When the analyst")
    # the nested list is part of the requirement the agent judges
    assert by_id["FR-002"].checks == (
        "System MUST write the file as UTF-8 with:",
        "a header row naming each column",
        "one line per report row",
    )
    assert by_id["FR-001"].category == "Functional Requirements"
    assert by_id["SC-001"].title == "A 10,000-row report exports in under 3 seconds."


def test_kiro_acceptance_criteria_are_requirement_dot_number() -> None:
    relative = "kiro/requirements.md"
    spec = parsed(relative)
    assert [summary(c) for c in spec.criteria] == [
        ("1.1", AGENT, M),
        ("1.2", AGENT, M),
        ("1.3", AGENT, M),
        ("2.1", AGENT, M),
        ("2.2", AGENT, M),
        ("2.3", AGENT, S),
    ]
    reject = spec.criteria[4]
    assert reject.location.line == line_of(relative, "WHEN a link has been used once")
    assert reject.category == "Requirement 2"
    assert reject.checks[1:] == (
        'with the message "This link has already been used"',
        "and a button to request a new one",
    )
    assert "User story: As a user, I want the link to expire" in reject.description


def test_kiro_design_properties_keep_what_they_validate() -> None:
    spec = parsed("kiro/design.md")
    assert [(c.id, c.title) for c in spec.criteria] == [
        ("Property-1", "Tokens are single use"),
        ("Property-2", "Expiry is enforced"),
    ]
    assert spec.criteria[0].checks[0].startswith("For any reset token, after one")
    assert "Validates: Requirements 2.2" in spec.criteria[0].description


def test_openspec_scenarios_are_criteria_named_by_requirement_and_scenario() -> None:
    relative = "openspec/specs/auth/spec.md"
    spec = parsed(relative)
    assert [(c.id, c.title, c.category, c.location.line) for c in spec.criteria] == [
        (
            "Password-Sign-In--Valid-credentials",
            "Password Sign-In / Valid credentials",
            "auth — Requirements",
            line_of(relative, "Scenario: Valid credentials"),
        ),
        (
            "Password-Sign-In--Wrong-password",
            "Password Sign-In / Wrong password",
            "auth — Requirements",
            line_of(relative, "Scenario: Wrong password"),
        ),
        (
            "Session-Expiry--Idle-session",
            "Session Expiry / Idle session",
            "auth — Requirements",
            line_of(relative, "Scenario: Idle session"),
        ),
    ]
    valid = spec.criteria[0]
    assert valid.checks == (
        "Scenario: Valid credentials",
        "WHEN a user submits a registered email and its password",
        "THEN a session cookie is set",
        "AND the user lands on the dashboard",
    )
    assert "Requirement Password Sign-In: The system SHALL sign in a user" in valid.description
    assert [(r.id, r.criteria) for r in spec.requirements] == [
        ("Password-Sign-In", tuple(c.id for c in spec.criteria[:2])),
        ("Session-Expiry", ("Session-Expiry--Idle-session",)),
    ]


def test_openspec_delta_added_and_modified_are_criteria_removed_is_not() -> None:
    spec = parsed("openspec/changes/add-totp/specs/auth/spec.md")
    assert [(c.id, c.category) for c in spec.criteria] == [
        ("TOTP-Second-Factor--Correct-code", "auth — ADDED Requirements"),
        ("Session-Expiry--Idle-session", "auth — MODIFIED Requirements"),
    ]
    assert "15 minutes" in spec.criteria[1].description


def test_openspec_scenario_tags_of_a_delta_and_a_requirement_without_scenarios() -> None:
    text = (
        "## MODIFIED Requirements\n\n### Requirement: Export\nThe system SHALL export.\n\n"
        "#### Scenario: Old path (REMOVED)\n- **WHEN** a\n\n"
        "#### Scenario: New path (MODIFIED)\n- **WHEN** b\n\n"
        "### Requirement: Audit\nThe system SHALL log exports.\n"
    )
    spec = parse_spec_text(text, Path("spec.md"))
    assert [(c.id, c.location.line) for c in spec.criteria] == [
        ("Export--New-path", 9),
        ("Audit", 12),
    ]


def test_bmad_v4_numbered_criteria_are_ac_n() -> None:
    relative = "bmad/1.3.profile-avatar.md"
    spec = parsed(relative)
    assert [c.id for c in spec.criteria] == ["AC1", "AC2", "AC3"]
    third = spec.criteria[2]
    assert third.location.line == line_of(relative, "Files over 2 MB")
    assert third.checks[1:] == ("the previous avatar stays in place",)
    assert third.category == "Story 1.3: Profile avatar upload"
    assert "As a registered user, I want to upload a profile picture" in third.description


def test_bmad_v6_bold_criteria_keep_title_and_given_when_then_steps() -> None:
    spec = parsed("bmad/2.1.invoice-export.md")
    assert [(c.id, c.title) for c in spec.criteria] == [
        ("AC1", "PDF download"),
        ("AC2", "Draft watermark"),
    ]
    assert spec.criteria[1].checks[1:] == (
        "Given a draft invoice",
        "When it is exported",
        'Then every page carries a "DRAFT" watermark',
    )


def test_task_verify_commands_are_the_evidence_of_their_tasks() -> None:
    relative = "tasks/tasks.md"
    spec = parsed(relative)
    by_id = {c.id: c for c in spec.criteria}
    assert [(c.id, c.method, c.task.ticked if c.task else None) for c in spec.criteria] == [
        ("1.1", TASK, True),
        ("1.2", TASK, False),
        ("2.1", TASK, False),
        ("2.2", TASK, False),
    ]
    assert by_id["1.1"].task == Task(
        ticked=True, files=("changelog.sh",), command="test -x changelog.sh"
    )
    assert by_id["1.1"].location.line == line_of(relative, "1.1 Create the changelog script")
    assert by_id["1.2"].task.command == (  # type: ignore[union-attr]
        "./changelog.sh | grep -q '^## Features' && ./changelog.sh | grep -q '^## Fixes'"
    )
    assert by_id["1.2"].task.cites == ("FR-2",)  # type: ignore[union-attr]
    assert by_id["2.1"].task.command == "shellcheck changelog.sh"  # type: ignore[union-attr]
    assert by_id["1.2"].category == "Phase 1: Make It Work (POC)"
    assert by_id["1.1"].how == "task: ticked; evidence: `test -x changelog.sh`, 1 file changed"
    assert by_id["2.2"].how == "task: not ticked, listed"


def test_manifest_verify_blocks_and_gates_decide_the_method() -> None:
    spec = parsed("manifest/manifest.md")
    by_id = {c.id: c for c in spec.criteria}
    assert [summary(c) for c in spec.criteria] == [
        ("INV-G1", BASH, M),
        ("INV-G2", AGENT, M),  # Judgment gate
        ("AC-1.1", AGENT, M),
        ("AC-1.2", BASH, M),  # Deterministic gate
    ]  # PG-1 (process guidance) is not verified
    assert by_id["INV-G1"].command == "true"
    assert (by_id["AC-1.1"].agent, by_id["AC-1.1"].checks[0][:27]) == (
        "code-reviewer",
        "Read src/api/limiter.py. PA",
    )
    assert by_id["AC-1.2"].command == "grep -q RATE_LIMIT config/defaults.env"
    assert by_id["INV-G2"].title == "No secrets are logged."
    assert by_id["AC-1.1"].category == "Deliverable 1: Limiter middleware"


def test_prose_keeps_author_ids_nested_lists_and_skips_keyword_definitions() -> None:
    relative = "prose/requirements.md"
    spec = parsed(relative)
    assert [(c.id, c.priority) for c in spec.criteria] == [
        ("S2-entries-append-only", M),
        ("S2-each-entry-carry-request-id", S),
        ("FR-0.3", M),  # the author's id
        ("S2-required-scoped-permissions", M),  # a lead-in with its list, and each item
        ("S2-audit-read-listing-entries", M),
        ("S2-audit-export-downloads", M),
        ("R-entries-older-than-400-days", M),  # an unnumbered "Requirements" heading
        ("R-log-mirrored-object-storage", C),
    ]  # nothing from "1 Terms": RFC 2119 boilerplate and "SHALL: indicates ..."
    permissions = spec.criteria[3]
    assert permissions.checks == (
        "The required scoped permissions MUST be:\n"
        "- audit:read for listing entries\n- audit:export for downloads",
    )
    assert spec.criteria[4].checks == (
        "The required scoped permissions MUST be: audit:read for listing entries",
    )
    assert spec.criteria[2].location.line == line_of(relative, "**FR-0.3**")
    assert spec.criteria[2].checks[0].startswith("The exporter MUST request only the scoped")


# --- nothing dropped in silence (the reference format) ---------------------------------------

FALSE = '```yaml\nmethod: bash\ncommand: "false"\n```\n'


@pytest.mark.parametrize(
    ("opener", "title"),
    [
        ("#### AC-2 Release notes mention the fix", "Release notes mention the fix"),
        ("**AC-2: Release notes mention the fix**", "Release notes mention the fix"),
        ("- AC-2: Release notes mention the fix", "Release notes mention the fix"),
        ("- **AC-2** — Release notes mention the fix", "Release notes mention the fix"),
    ],
)
def test_an_id_line_followed_by_a_verification_block_is_a_criterion(
    opener: str, title: str
) -> None:
    text = f"# Fix\n\n#### AC-1: Tests pass\n```yaml\nmethod: manual\n```\n\n{opener}\n\n{FALSE}"
    spec = parse_spec_text(text, Path("spec.md"))
    second = spec.criteria[1]
    assert (second.id, second.title, second.command, second.location.line) == (
        "AC-2",
        title,
        "false",
        8,
    )


def test_a_verification_block_of_no_criterion_is_an_error_at_its_line() -> None:
    text = f"# Fix\n\nSome prose.\n\n{FALSE}\n#### AC-1: t\n```yaml\nmethod: manual\n```\n"
    with pytest.raises(SpecError, match="belongs to no criterion") as excinfo:
        parse_spec_text(text, Path("spec.md"))
    assert excinfo.value.line == 5


def test_every_problem_of_a_spec_is_reported_at_once_in_line_order() -> None:
    text = (
        "# Spec\n\n#### AC-1: no block\n\n"  # line 3
        "#### AC-2: bad method\n```yaml\nmethod: bsh\n```\n"  # line 7
        f"\n{FALSE}"  # line 10: a second block of AC-2
        "#### AC-1: again\n```yaml\nmethod: manual\n```\n"  # line 14: duplicate id
    )
    with pytest.raises(SpecError) as excinfo:
        parse_spec_text(text, Path("spec.md"))
    assert [error.line for error in excinfo.value.errors] == [3, 7, 10, 14]
    assert str(excinfo.value).count("spec.md:") == 4


def test_a_format_error_names_its_line_and_keeps_the_other_criteria_checked() -> None:
    text = (
        "# Feature Specification: x\n\n### Functional Requirements\n\n"
        "- **FR-001**: System MUST a.\n- **FR-001**: System MUST b.\n"
        f"- **FR-002**: System MUST c.\n\n  {FALSE.replace(chr(10), chr(10) + '  ')}"
    )
    spec = parse_spec_text(
        text.replace("FR-001**: System MUST b", "FR-003**: System MUST b"), Path("s.md")
    )
    assert [(c.id, c.method) for c in spec.criteria] == [
        ("FR-001", AGENT),
        ("FR-003", AGENT),
        ("FR-002", BASH),  # its own verification block decides
    ]
    with pytest.raises(SpecError, match="duplicate criterion id FR-001") as excinfo:
        parse_spec_text(text, Path("s.md"))
    assert excinfo.value.line == 6


def test_speckit_slash_ids_become_dashes_and_stay_file_names() -> None:
    text = (
        "# Feature Specification: x\n\n### User Story 1 - Sign in (Priority: P1)\n\n"
        "**Acceptance Scenarios**:\n\n1. **Given** a user, **When** x, **Then** y\n"
    )
    assert [c.id for c in parse_spec_text(text, Path("s.md")).criteria] == ["US1-AC1"]


def test_a_numberless_task_with_a_verify_line_is_an_error_not_dropped() -> None:
    text = (
        "# Tasks\n\n- [ ] 1.1 Build\n  - **Verify**: `true`\n"
        "- [ ] Write docs\n  - **Verify**: `test -f README.md`\n"
    )
    with pytest.raises(SpecError, match="Verify line but no number") as excinfo:
        parse_spec_text(text, Path("tasks.md"))
    assert excinfo.value.line == 5


@pytest.mark.parametrize(
    "name",
    [
        "acceptance",
        "spec-kit",
        "kiro",
        "kiro-design",
        "openspec",
        "bmad",
        "tasks",
        "manifest",
        "prose",
        "stories",
        "gherkin",
    ],
)
def test_a_forced_format_that_finds_nothing_says_what_it_looks_for(name: str) -> None:
    with pytest.raises(SpecError, match="no acceptance criteria found") as excinfo:
        parse_spec_text("# Notes\n\nNothing here.\n", Path("x.md"), forced=name)
    assert excinfo.value.line == 1


def test_user_story_headings_with_id_items_are_read_as_those_items_not_errors() -> None:
    """ "### US-1: ..." headings without verification blocks used to fail as "US-1 has no
    verification block"; the acceptance criteria under them are what the author meant."""
    text = (
        "# Login\n\n### US-1: Sign in with email\n\n#### Acceptance Criteria\n\n"
        "- AC-1.1: The form accepts an email and a password\n"
        "- AC-1.2: A wrong password shows an error\n  - without naming the wrong field\n\n"
        "### US-2: Sign out\n\n#### Acceptance Criteria\n\n- [ ] AC-2.1: The menu has Sign out\n"
    )
    spec = parse_spec_text(text, Path("login.md"))
    assert [(c.id, c.priority, c.location.line) for c in spec.criteria] == [
        ("AC-1.1", M, 7),
        ("AC-1.2", M, 8),
        ("AC-2.1", M, 15),
    ]
    assert spec.criteria[1].checks == (
        "A wrong password shows an error",
        "without naming the wrong field",
    )
    assert [(r.id, r.criteria) for r in spec.requirements] == [
        ("US-1", ("AC-1.1", "AC-1.2")),
        ("US-2", ("AC-2.1",)),
    ]


def test_a_verify_line_in_the_tasks_own_paragraph_is_still_its_command() -> None:
    text = (
        "# Tasks\n\n- [x] 1.1 Build the thing\n  **Verify**: `make build`\n"
        "  **Done when**: it builds\n- [x] 1.2 Test\n  - **Verify**:\n"
        "    ```bash\n    make test\n    ```\n"
    )
    spec = parse_spec_text(text, Path("tasks.md"))
    assert [(c.id, c.title, c.task.command) for c in spec.criteria] == [  # type: ignore[union-attr]
        ("1.1", "Build the thing", "make build"),
        ("1.2", "Test", "make test"),
    ]


def test_speckit_ids_repeated_in_each_story_are_scoped_to_their_story() -> None:
    """Some spec-kit templates list FR-001... under every user story."""
    story = (
        "### User Story {n} - {title} (Priority: P{n})\n\n**Acceptance Scenarios**:\n\n"
        "1. **Given** a, **When** b, **Then** c\n\n**Functional Requirements**:\n\n"
        "- **FR-001**: System MUST {title}\n- **FR-00{m}**: System SHOULD log it\n\n"
    )
    text = "# Feature Specification: x\n\n" + "".join(
        story.format(n=n, m=n + 1, title=title) for n, title in ((1, "sign up"), (2, "reset"))
    )
    spec = parse_spec_text(text, Path("spec.md"))
    assert [(c.id, c.priority) for c in spec.criteria] == [
        ("US1-AC1", M),
        ("US1-FR-001", M),
        ("FR-002", S),
        ("US2-AC1", S),
        ("US2-FR-001", M),
        ("FR-003", S),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # ticked bold criteria with a nested list
            "- [x] **AC1 — Old tools deleted.** All are removed:\n  1. `a/`\n  2. `b/`\n"
            "- [ ] **AC2 — Tests green.** The suite passes.\n",
            [("AC1", "Old tools deleted.", ("All are removed:", "a/", "b/")),
             ("AC2", "Tests green.", ("The suite passes.",))],
        ),
        (  # plain bullets, numbered in order
            "- Users can log in\n- Users can log out\n  - from every page\n",
            [("AC1", "Users can log in", ("Users can log in",)),
             ("AC2", "Users can log out", ("Users can log out", "from every page"))],
        ),
        (  # numbered items carrying a bold AC title
            "1. **AC1 — `StatusBar` widget** : shows the score\n2. **AC2 — Layout** : on top\n",
            [("AC1", "StatusBar widget", ("shows the score",)), ("AC2", "Layout", ("on top",))],
        ),
    ],
)  # fmt: skip
def test_bmad_acceptance_criteria_as_stories_write_them(
    body: str, expected: list[tuple[str, str, tuple[str, ...]]]
) -> None:
    head = "# Story 3.1: Cleanup\n\n## Story\n\nAs a dev, I want x, so that y.\n\n"
    text = f"{head}## Acceptance Criteria\n\n{body}\n## Dev Notes\n\nNothing.\n"
    spec = parse_spec_text(text, Path("3.1.cleanup.md"))
    assert [(c.id, c.title, c.checks) for c in spec.criteria] == expected


def test_kiro_acceptance_criteria_under_a_bold_label_instead_of_a_heading() -> None:
    text = (
        "# Requirements Document\n\n### Requirement 1: Login\n\n"
        "**User Story:** As a user, I want to log in, so that I see my data.\n\n"
        "**Acceptance Criteria:**\n\n"
        "1. WHEN valid credentials are submitted THE System SHALL start a session\n"
        "2. IF the password is wrong THEN THE System SHALL show an error\n"
    )
    spec = parse_spec_text(text, Path("requirements.md"))
    assert [(c.id, c.location.line) for c in spec.criteria] == [("1.1", 9), ("1.2", 10)]


def test_a_readme_listing_requirements_is_not_a_spec_of_ids() -> None:
    text = "# Tool\n\n## Requirements\n\n- Python-3.10 or newer\n- git\n"
    assert detect(text, builtin_formats()) == (None, 0.0)


class _Broken:
    """A plugin's format whose detector and parser both crash."""

    name = "broken"

    def detect(self, text: str) -> float:
        if "PARSE" in text:
            return 1.0
        raise RuntimeError("detector bug")

    def parse(self, text: str, path: Path) -> Spec:
        raise KeyError("parser bug")


def test_a_plugins_crashing_format_is_a_spec_error_never_a_crash() -> None:
    formats = [_Broken(), *builtin_formats()]
    kiro = (EXAMPLES / "kiro" / "requirements.md").read_text()
    assert len(parse_spec_text(kiro, Path("r.md"), formats).criteria) == 6  # detector skipped
    with pytest.raises(SpecError, match="the broken format could not parse the spec") as info:
        parse_spec_text("PARSE me\n", Path("x.md"), formats)
    assert info.value.line == 1


def test_the_parse_cache_never_serves_a_spec_read_in_another_format(tmp_path: Path) -> None:
    from pytest_acceptance.spec.cache import parse_spec_cached
    from pytest_acceptance.spec.formats import FormatChoice

    spec_path = tmp_path / "spec.md"
    spec_path.write_text((EXAMPLES / "speckit/specs/001-csv-export/spec.md").read_text())
    detected = FormatChoice(tuple(builtin_formats()))
    forced = FormatChoice(tuple(builtin_formats()), "prose")
    cache = tmp_path / "cache"
    assert parse_spec_cached(spec_path, cache, detected).criteria[0].id == "US1-AC1"
    assert parse_spec_cached(spec_path, cache, forced).criteria[0].id == "FR-001"
    assert parse_spec_cached(spec_path, cache, detected).criteria[0].id == "US1-AC1"
