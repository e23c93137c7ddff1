"""Fuzzing the spec parser: any bytes, any YAML-ish block, any generated spec ends as a
``Spec`` or a ``SpecError`` naming a line of the file with a bounded message — never
another exception (which pytest would report as a traceback or INTERNALERROR)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.collect import _check_pass_condition
from pytest_acceptance.model import SPEC_ERROR_LIMIT, Spec, SpecError
from pytest_acceptance.spec.load import decode, parse_spec_text

PATH = Path("spec.md")


def parsed(text: str) -> Spec | SpecError:
    """What collection sees: the spec, or the one clean error it may raise."""
    try:
        spec = parse_spec_text(text, PATH)
        for criterion in spec.criteria:
            _check_pass_condition(criterion)  # the collector's own check
        return spec
    except SpecError as error:
        assert 1 <= error.line <= text.count("\n") + 2, error
        assert len(error.message) <= SPEC_ERROR_LIMIT
        return error


def scaffold(block: str) -> str:
    """A valid spec around one verification block (its first line is line 6)."""
    return f"# Spec\n\n#### AC-1: fuzzed\n**Description:** x\n```yaml\n{block}\n```\n"


@given(st.binary(max_size=400))
def test_any_bytes_are_a_spec_or_a_spec_error(data: bytes) -> None:
    try:
        text = decode(data, PATH)
    except SpecError as error:
        assert error.line >= 1
        return
    parsed(text)


_YAML_PIECES = st.sampled_from(
    [
        *"[]{},:-?&*!|>'\"#%@`\n\t ",
        "\n  ",
        ": ",
        "- ",
        "? ",
        "!!int ",
        "!!float ",
        "!!bool ",
        "!!str ",
        "!!null ",
        "!!timestamp ",
        "!!binary ",
        "!!map ",
        "!!set ",
        "!!seq ",
        "!!omap ",
        "!!pairs ",
        "!!python/object:os.system ",
        "!custom ",
        "&a ",
        "*a",
        "&b ",
        "*b",
        "<<: ",
        ".inf",
        "-.inf",
        ".nan",
        "1e306",
        "0x",
        "0o",
        "9" * 5000,
        "2001-13-45",
        "method",
        "bash",
        "subagent",
        "manual",
        "command",
        "pass_condition",
        "timeout",
        "retries",
        "checks",
        "priority",
        "MUST",
        "true",
        "null",
        "~",
        "\u2028",
        "\x85",
        "\ufeff",
        "---",
        "...",
    ]
)


@given(st.lists(_YAML_PIECES | st.text(max_size=5), max_size=60).map("".join))
def test_yaml_ish_blocks_in_a_valid_scaffold(block: str) -> None:
    parsed(scaffold(block))


@given(
    st.sampled_from(["method: bash\ncommand: x\n", "method: subagent\n", "method: manual\n", ""]),
    st.lists(_YAML_PIECES | st.text(max_size=5), max_size=40).map("".join),
)
def test_a_valid_start_then_yaml_ish_keys(start: str, rest: str) -> None:
    parsed(scaffold(start + rest))


# --- specs from a grammar -------------------------------------------------------------------

_SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["true", "no", "~", ".inf", ".nan", "1e306", "-5", "0x1F", "5m", "90 s"]),
    st.text(max_size=20).map(lambda text: "'" + text.replace("'", "''") + "'"),
    st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=20),
)


def _nested(depth: int) -> st.SearchStrategy[str]:
    return st.sampled_from(["[", "{a: ", "- "]).map(
        lambda opener: (
            opener * depth
            + ("x" + ("]" if opener == "[" else "}") * depth if opener != "- " else "x")
        )
    )


_VALUES = st.one_of(
    _SCALARS,
    st.tuples(st.sampled_from(["!!int", "!!float", "!!bool", "!!timestamp", "!!map", "!!set"]))
    .map(lambda tag: tag[0])
    .flatmap(lambda tag: _SCALARS.map(lambda value: f"{tag} {value}")),
    st.integers(min_value=1, max_value=2_000).flatmap(_nested),
    st.lists(_SCALARS, max_size=5).map(lambda items: "[" + ", ".join(items) + "]"),
    st.just("*a"),
    st.just("&a [1, 2]"),
)
_KEYS = st.sampled_from(
    [
        *["method", "command", "pass_condition", "timeout", "retries", "checks", "agent"],
        *["model", "priority", "comand", "Method", "<<"],
    ]
)


@st.composite
def criterion_blocks(draw: st.DrawFn) -> str:
    ident = draw(st.sampled_from(["AC-1", "AC-2", "REQ-3", "ac-1", "AC-1/..", "X-9a"]))
    level = draw(st.integers(min_value=1, max_value=6))
    method = draw(st.sampled_from(["bash", "subagent", "manual", "robot", "[bash]"]))
    lines = [f"method: {method}"]
    if method == "bash" and draw(st.booleans()):
        lines.append(f"command: {draw(_SCALARS)}")
    for key in draw(st.lists(_KEYS, max_size=4)):
        lines.append(f"{key}: {draw(_VALUES)}")
    fence = draw(st.sampled_from(["```yaml", "~~~yaml", "```yml", "```", "```yaml title"]))
    close = "~~~" if fence.startswith("~") else "```"
    body = "\n".join(lines)
    return f"{'#' * level} {ident}: title\n**Description:** d\n\n{fence}\n{body}\n{close}\n\n"


@given(st.lists(criterion_blocks(), min_size=1, max_size=4))
def test_generated_specs_are_a_spec_or_a_spec_error(blocks: list[str]) -> None:
    parsed("# Spec\n\n## Acceptance Criteria\n\n### Category: Core\n\n" + "".join(blocks))


# --- every format's reader, on text made of its own pieces ----------------------------------

_SHAPE_PIECES = st.sampled_from(
    [
        "# Requirements Document\n",
        "## 3. Requirements\n",
        "### 3.1 Invite members\n",
        "### Requirement 2: Sign in\n",
        "**User Story:** As a user, I want x, so that y\n",
        "**Objective:** As a user, I want x\n",
        "#### Acceptance Criteria\n",
        "**Acceptance Criteria:**\n",
        "1. WHEN a THEN the system SHALL b\n",
        "1.1. WHEN a THEN the system SHALL b\n",
        "2) IF a THEN the system SHALL b\n     and c\n",
        "WHEN a THE system SHALL b\n",
        "### Primary User Story\nA writer tags.\n",
        "### ✅ Acceptance Scenarios\n",
        "- **Given** a, **When** b, **Then** c\n",
        "The system MUST send notifications for:\n",
        "The sender MUST support the following channels\n",
        "- password changes\n",
        "  - nested detail\n",
        "1. CSV; it SHOULD stream\n",
        "### AC1: Reminder is queued\n",
        "#### Acceptance Criterion 3 - Opt out\n",
        "#### Acceptance criteria\n",
        "## Story\n",
        "- [x] 1.1 Add the field in schema.prisma and the Dockerfile\n",
        "- **AC-001**: WHEN a THEN the system SHALL b\n",
        "### US-1: Schedule\n",
        "- AC-1.1: Given a, When b, Then c\n",
        "- [ ] AC-1.2: Done when `make x` exits 0.\n",
        "| ID | Requirement | Priority | Acceptance Criteria |\n|----|----|----|----|\n",
        "| FR-1 | text | Must | AC-1.1, AC-9 |\n",
        "## Non-Functional Requirements\n",
        "| NFR-1 | Performance | p95 | 200 ms |\n",
        "### INV-G1 — Tests pass\n",
        "#### AC-1.1 — Rows stream\n",
        "Done when `pytest -q` exits 0. Deterministic gate.\n",
        "Done when it reads well. Judgment gate.\n",
        "Deterministic gate.\n",
        "### Deliverable 1: Export\n",
        "- [x] T012 [P] [US1] Write src/x/y.py\n",
        "- [X] 2.1 Title\n  - _Requirements: 1.2, 3_\n",
        "- [ ]* 3. Optional\n",
        "  - **Verify**: `true`\n",
        "  - **Files**: a.py, b/c.ts\n",
        "- [x] Remove `old.py`\n",
        "## Tasks\n",
        "## 4. Definition of Done\n",
        "### 4.1 Parsing\n",
        "- [ ] The parser accepts input\n",
        "| Case | A | B |\n|---|---|---|\n| one | [ ] | [x] |\n",
        "### Requirement: Archive\nThe system SHALL archive.\n",
        "#### Scenario: Exists (REMOVED)\n",
        "#### Scenario: Done\n- **WHEN** a\n- **THEN** b\n",
        "## ADDED Requirements\n",
        "### User Story 1 - Download (Priority: P1)\n",
        "**Acceptance Scenarios**:\n",
        "1. **Given** a, **When** b, **Then** `test -f x` exits 0\n",
        "- **FR-001**: System MUST export.\n",
        "- **SC-001**: Done when `make check` passes.\n",
        "**Independent Test**: export one\n",
        "§2.1 The exporter MUST write.\n",
        "## §3 Limits\n",
        "## Acceptance Criteria\n1. Given a when b then c\n",
        "**AC1 — Title:**\n",
        "`cmd` passes\n",
        "`x` prints `y`\n",
        "WHEN `x` succeeds THEN\n",
        "```yaml\nmethod: bash\ncommand: 'true'\n```\n",
        "```\n",
        "\n",
        "  ",
        "|",
        "`",
        "**",
        "\u00a7",
    ]
)
_GHERKIN_PIECES = st.sampled_from(
    [
        "Feature: Cart\n",
        "# language: en\n",
        "# language: fr\n",
        "@smoke @wip\n",
        "Background:\n",
        "Rule: r\n",
        "Scenario: Add\n",
        "Scenario Outline: Many\n",
        "Scenario Template: Many\n",
        "Example: one\n",
        "Examples:\n",
        "| a | b |\n",
        "| 1 | 2 |\n",
        "|\n",
        "Given <a> and <b>\n",
        "When x\n",
        "Then y\n",
        "And z\n",
        "* w\n",
        '"""\n',
        "```\n",
        "text\n",
        "\n",
    ]
)
_FORMATS = st.sampled_from(
    [
        None,
        "kiro",
        "kiro-design",
        "stories",
        "manifest",
        "tasks",
        "prose",
        "openspec",
        "spec-kit",
        "bmad",
        "acceptance",
        "gherkin",
        "gauge",
    ]
)


def parsed_as(text: str, forced: str | None) -> Spec | SpecError:
    try:
        spec = parse_spec_text(text, PATH, forced=forced)
        for criterion in spec.criteria:
            _check_pass_condition(criterion)
        return spec
    except SpecError as error:
        assert 1 <= error.line <= text.count("\n") + 2, error
        assert len(error.message) <= SPEC_ERROR_LIMIT
        return error


@given(st.lists(_SHAPE_PIECES | st.text(max_size=8), max_size=40).map("".join), _FORMATS)
def test_each_reader_on_its_own_pieces_is_a_spec_or_a_spec_error(
    text: str, forced: str | None
) -> None:
    result = parsed_as(text, forced)
    if isinstance(result, Spec):  # every requirement names criteria of the spec
        ids = {criterion.id for criterion in result.criteria}
        assert all(set(r.criteria) <= ids for r in result.requirements)


@given(st.lists(_GHERKIN_PIECES | st.text(max_size=6), max_size=40).map("".join))
def test_gherkin_pieces_are_a_spec_or_a_spec_error(text: str) -> None:
    parsed_as(text, "gherkin")


@given(st.lists(_SHAPE_PIECES | st.text(max_size=8), max_size=12).map("".join))
def test_a_stated_check_is_a_choice_or_a_stated_check_error(prose: str) -> None:
    from pytest_acceptance.spec.formats.stated_check import StatedCheckError, choose

    try:
        choice = choose([prose])
    except StatedCheckError:
        return
    assert choice.how and (choice.command is None) == (choice.method.value != "bash")
