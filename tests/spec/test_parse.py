"""The parse stage: a markdown spec becomes frozen criteria, and every bad spec is a SpecError
naming the exact file:line and what to write instead."""

from __future__ import annotations

import dataclasses
import pickle
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_acceptance.model import Method, Priority, Spec
from pytest_acceptance.spec.cache import parse_spec_cached, parser_sources
from pytest_acceptance.spec.load import SpecError, parse_spec, parse_spec_text

# Seed 000, the design of this repository's Claude Code plugin, kept as a spec in the repo.
SEED = Path(__file__).resolve().parents[2] / "specs" / "implement-skill-system.md"
SPEC = Path("spec.md")


def parse(text: str) -> Spec:
    return parse_spec_text(text, SPEC)


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as excinfo:
        parse(text)
    return excinfo.value


def one_criterion(yaml_body: str, heading: str = "#### AC-1: Title") -> str:
    """A spec whose criterion heading is line 3, fence line 5, first yaml line 6."""
    return f"# Spec\n\n{heading}\n**Description:** Does it.\n```yaml\n{yaml_body}\n```\n"


def bash_block(extra: str = "") -> str:
    return one_criterion("method: bash\ncommand: 'true'" + (f"\n{extra}" if extra else ""))


# --- the seed -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed_spec() -> Spec:
    return parse_spec(SEED)


def test_seed_parses_to_23_criteria_8_bash_and_15_subagent(seed_spec: Spec) -> None:
    assert [c.id for c in seed_spec.criteria] == [f"AC-{n}" for n in range(1, 24)]
    methods = [c.method for c in seed_spec.criteria]
    assert methods.count(Method.BASH) == 8
    assert methods.count(Method.SUBAGENT) == 15
    assert seed_spec.title == "Acceptance Criteria Spec: /implement Skill System"


def test_seed_ac2_keeps_command_pass_condition_and_lines(seed_spec: Spec) -> None:
    ac2 = seed_spec.criteria[1]
    assert ac2.title == "Creates Implementation Log"
    assert ac2.command == "ls /tmp/implement-log-*.md | head -1"
    assert ac2.pass_condition == "file exists"
    assert ac2.description == "Creates /tmp/implement-log-{timestamp}.md at start."
    lines = seed_spec.path.read_text().splitlines()
    assert lines[ac2.location.line - 1] == "#### AC-2: Creates Implementation Log"
    assert lines[ac2.verification_line - 1] == "```yaml"
    assert ac2.location.path == seed_spec.path


def test_seed_categories_follow_the_category_headings(seed_spec: Spec) -> None:
    category = {c.id: c.category for c in seed_spec.criteria}
    assert {category[f"AC-{n}"] for n in range(1, 8)} == {"/implement Skill"}
    assert {category[f"AC-{n}"] for n in range(8, 14)} == {"/verify Skill"}
    assert {category["AC-14"], category["AC-15"]} == {"/done Skill"}
    assert {category["AC-16"], category["AC-17"]} == {"/escalate Skill"}
    assert {category[f"AC-{n}"] for n in range(18, 22)} == {"Stop Hook"}
    assert {category["AC-22"], category["AC-23"]} == {"PreToolUse Hook on /escalate"}


def test_seed_subagent_criteria_keep_agent_and_checks(seed_spec: Spec) -> None:
    ac1 = seed_spec.criteria[0]
    assert ac1.agent == "input-checker"
    assert ac1.checks == (
        "Error message if no $ARGUMENTS",
        "Error message if file not found",
        "Proceeds only with valid spec file",
    )
    assert ac1.priority is Priority.MUST
    assert ac1.timeout is None and ac1.retries is None


# --- format variants ------------------------------------------------------------------------

VARIANTS = """\
# Variants

## REQ-12: second-level criterion
```yaml
method: manual
```

### AC-1.2 — em dash title
~~~yaml
method: bash
command: echo tilde
~~~

##### US-3a - hyphen title
```yml
method: subagent
```

# AC-7 \u2013 en dash, top level
``` yaml title="x"
method: manual
```
"""


def test_criteria_headings_at_any_level_with_any_separator() -> None:
    spec = parse(VARIANTS)
    found = [(c.id, c.title, c.location.line) for c in spec.criteria]
    assert found == [
        ("REQ-12", "second-level criterion", 3),
        ("AC-1.2", "em dash title", 8),
        ("US-3a", "hyphen title", 14),
        ("AC-7", "en dash, top level", 19),
    ]
    assert spec.title == "Variants"


def test_tilde_fence_and_yml_info_string_are_verification_blocks() -> None:
    spec = parse(VARIANTS)
    assert spec.criteria[1].command == "echo tilde"
    assert spec.criteria[1].verification_line == 9
    assert spec.criteria[2].method is Method.SUBAGENT


def test_crlf_line_ends_give_the_same_criteria_and_lines() -> None:
    lf = parse(VARIANTS)
    crlf = parse(VARIANTS.replace("\n", "\r\n"))
    assert crlf.criteria == lf.criteria
    assert "\r" not in (crlf.criteria[1].command or "")


def test_utf8_bom_is_ignored_by_text_and_by_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(b"\xef\xbb\xbf" + VARIANTS.encode())
    from_file = parse_spec(path)
    assert from_file.title == "Variants"
    assert [c.location.line for c in from_file.criteria] == [3, 8, 14, 19]
    assert parse_spec_text("\ufeff" + VARIANTS, SPEC).title == "Variants"


def test_spec_file_may_have_any_extension(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(VARIANTS, encoding="utf-8")
    spec = parse_spec(path)
    assert spec.path == path and len(spec.criteria) == 4
    assert spec.criteria[0].location.path == path


def test_headings_inside_code_fences_are_not_criteria() -> None:
    text = (
        "# Spec\n\n```markdown\n#### AC-9: only an example\n```\n\n"
        "#### AC-1: real\n```yaml\nmethod: manual\n```\n"
    )
    assert [c.id for c in parse(text).criteria] == ["AC-1"]


def test_headings_that_only_look_like_ids_are_not_criteria() -> None:
    text = (
        "# Spec\n\n## UTF-8\n\n## COVID-19 impact\n\n"
        "#### AC-1: real\n```yaml\nmethod: manual\n```\n"
    )
    assert [c.id for c in parse(text).criteria] == ["AC-1"]


def test_deeper_sub_headings_belong_to_the_criterion() -> None:
    text = (
        "# Spec\n\n### AC-1: with notes\nIntro paragraph.\n\n#### Notes\nMore.\n\n"
        "```yaml\nmethod: manual\n```\n"
    )
    criterion = parse(text).criteria[0]
    assert criterion.verification_line == 9
    assert criterion.description == "Intro paragraph."


def test_a_same_level_heading_ends_the_criterion_section() -> None:
    text = "# Spec\n\n### AC-1: x\nText.\n\n### Appendix\n```yaml\nmethod: manual\n```\n"
    error = error_of(text)
    assert error.line == 3
    assert "AC-1 has no verification block" in error.message


def test_category_lasts_until_a_non_criterion_heading_of_same_or_higher_level() -> None:
    # "#### Aside" and "##### Deeper note" are deeper than the "### Category:" heading: kept.
    text = (
        "# Spec\n\n### Category: Core\n\n#### AC-1: a\n```yaml\nmethod: manual\n```\n"
        "#### Aside\n\n#### AC-2: b\n```yaml\nmethod: manual\n```\n"
        "##### Deeper note\n\n#### AC-3: c\n```yaml\nmethod: manual\n```\n"
        "## Rejection Criteria\n\n#### AC-4: d\n```yaml\nmethod: manual\n```\n"
        "### Category: Extra\n\n## AC-5: e\n```yaml\nmethod: manual\n```\n"
    )
    categories = [c.category for c in parse(text).criteria]
    assert categories == ["Core", "Core", "Core", "", "Extra"]


def test_category_survives_deeper_headings() -> None:
    text = (
        "# Spec\n\n## Category: Core\n\n### Details\n\n#### AC-1: a\n```yaml\nmethod: manual\n```\n"
    )
    assert parse(text).criteria[0].category == "Core"


def test_description_label_text_has_markdown_emphasis_stripped() -> None:
    text = one_criterion("method: manual").replace(
        "**Description:** Does it.", "**Description:** Uses `foo` and *bar*,\n**really**."
    )
    assert parse(text).criteria[0].description == "Uses foo and bar, really."


def test_description_falls_back_to_first_plain_paragraph_not_the_verification_label() -> None:
    text = (
        "# Spec\n\n#### AC-1: x\n**Verification:**\n\nThe _first_ plain paragraph.\n\n"
        "Second paragraph.\n```yaml\nmethod: manual\n```\n"
    )
    assert parse(text).criteria[0].description == "The first plain paragraph."


def test_description_label_wins_over_an_earlier_plain_paragraph() -> None:
    text = (
        "# Spec\n\n#### AC-1: x\nContext first.\n\n**Description**: The real one.\n"
        "```yaml\nmethod: manual\n```\n"
    )
    assert parse(text).criteria[0].description == "The real one."


def test_first_yaml_fence_is_the_verification_block_other_fences_are_skipped() -> None:
    text = (
        "# Spec\n\n#### AC-1: x\n```bash\nmake test\n```\n```\nplain\n```\n"
        "```YAML\nmethod: bash\ncommand: first\n```\n```yaml\nexample: config\n```\n"
    )
    criterion = parse(text).criteria[0]
    assert (criterion.command, criterion.verification_line) == ("first", 10)


def test_a_second_verification_block_in_one_criterion_is_an_error_not_ignored() -> None:
    text = one_criterion("method: bash\ncommand: 'true'") + "```yaml\nmethod: manual\n```\n"
    error = error_of(text)
    assert error.line == 9
    assert error.message.startswith("a second verification block in AC-1 ")


def test_heading_markup_is_stripped_from_id_and_title() -> None:
    text = one_criterion("method: manual", heading="#### `AC-1`: The **bold** title")
    criterion = parse(text).criteria[0]
    assert (criterion.id, criterion.title) == ("AC-1", "The bold title")


def test_parsed_criteria_are_frozen() -> None:
    criterion = parse(bash_block()).criteria[0]
    with pytest.raises(AttributeError):
        criterion.command = "rm -rf /"  # type: ignore[misc]


# --- YAML 1.2 core typing -------------------------------------------------------------------


def test_yaml_11_dates_and_yes_no_on_stay_strings() -> None:
    text = one_criterion(
        "method: subagent\nagent: 2026-01-17\nmodel: no\nchecks:\n  - yes\n  - on\n  - off"
    )
    criterion = parse(text).criteria[0]
    assert criterion.agent == "2026-01-17"
    assert criterion.model == "no"
    assert criterion.checks == ("yes", "on", "off")


def test_yaml_equals_sign_stays_a_string() -> None:
    assert parse(bash_block("pass_condition: =")).criteria[0].pass_condition == "="


def test_sexagesimal_timeout_is_not_ninety_seconds_but_an_error() -> None:
    error = error_of(bash_block("timeout: 1:30"))
    assert error.line == 8
    assert "'1:30'" in error.message and '"5m"' in error.message


def test_leading_zero_int_is_decimal_not_octal() -> None:
    assert parse(bash_block("retries: 010")).criteria[0].retries == 10


def test_number_where_a_string_is_wanted_is_an_error_not_coerced() -> None:
    error = error_of(one_criterion("method: bash\ncommand: 123"))
    assert error.line == 7
    assert '"command" must be a string' in error.message
    assert "a number (123)" in error.message and 'command: "123"' in error.message


def test_boolean_where_a_string_is_wanted_names_the_boolean() -> None:
    error = error_of(bash_block("pass_condition: true"))
    assert error.line == 8
    assert "a boolean (true)" in error.message


# --- priorities, timeouts, retries, checks --------------------------------------------------


@pytest.mark.parametrize(
    ("written", "priority"),
    [
        ("MUST", Priority.MUST),
        ("should", Priority.SHOULD),
        ("Could", Priority.COULD),
        ("WONT", Priority.WONT),
        ('"won\'t"', Priority.WONT),
        ("Won\u2019t", Priority.WONT),
    ],
)
def test_priority_is_moscow_in_any_case(written: str, priority: Priority) -> None:
    assert parse(bash_block(f"priority: {written}")).criteria[0].priority is priority


def test_priority_defaults_to_must() -> None:
    assert parse(bash_block()).criteria[0].priority is Priority.MUST


def test_unknown_priority_names_choices_and_close_match() -> None:
    error = error_of(bash_block("priority: shuold"))
    assert error.line == 8
    assert "MUST, SHOULD, COULD or WONT" in error.message and "'SHOULD'" in error.message


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("90", 90.0), ("2.5", 2.5), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0), ("1.5 min", 90.0)],
)
def test_timeout_in_seconds_or_with_a_unit(written: str, seconds: float) -> None:
    assert parse(bash_block(f"timeout: {written}")).criteria[0].timeout == seconds


@pytest.mark.parametrize("written", ["0", "-5", "soon", "true", ".nan", "[1]"])
def test_timeout_that_is_not_a_positive_duration_is_an_error(written: str) -> None:
    error = error_of(bash_block(f"timeout: {written}"))
    assert error.line == 8
    assert '"timeout" must be a positive number of seconds' in error.message


@pytest.mark.parametrize("written", ["-1", "1.5", "'2'", "yes"])
def test_retries_must_be_a_whole_number_at_least_zero(written: str) -> None:
    error = error_of(bash_block(f"retries: {written}"))
    assert error.line == 8
    assert '"retries" must be a whole number >= 0' in error.message


def test_retries_zero_is_allowed() -> None:
    assert parse(bash_block("retries: 0")).criteria[0].retries == 0


def test_a_single_check_string_becomes_one_check() -> None:
    text = one_criterion("method: manual\nchecks: Looks right on a phone")
    assert parse(text).criteria[0].checks == ("Looks right on a phone",)


def test_a_check_that_is_not_a_string_is_an_error() -> None:
    error = error_of(one_criterion("method: subagent\nchecks:\n  - fine\n  - a: b"))
    assert error.line == 7
    assert "check 2 is a mapping" in error.message


# --- bad specs: each a SpecError at the best line -------------------------------------------


def test_spec_error_reads_path_line_message() -> None:
    error = SpecError(Path("docs/spec.md"), 14, "something is wrong: fix it")
    assert str(error) == "docs/spec.md:14: something is wrong: fix it"


def test_malformed_yaml_points_inside_the_block() -> None:
    error = error_of(one_criterion("method: bash\ncommand: echo a: b"))
    assert error.line == 7
    assert "malformed YAML in the verification block of AC-1" in error.message


def test_duplicate_yaml_key_is_an_error_at_the_second_key() -> None:
    error = error_of(one_criterion("method: bash\ncommand: 'false'\ncommand: 'true'"))
    assert error.line == 8
    assert "duplicate key 'command'" in error.message


@pytest.mark.parametrize(
    ("body", "found"),
    [("- method: bash", "a list"), ("just words", "a string"), ("", "nothing (null)")],
)
def test_verification_block_that_is_not_a_mapping_points_at_the_fence(
    body: str, found: str
) -> None:
    error = error_of(one_criterion(body))
    assert error.line == 5
    assert f"is {found}" in error.message and "not a mapping" in error.message


def test_missing_method_points_at_the_fence() -> None:
    error = error_of(one_criterion("command: 'true'"))
    assert error.line == 5
    assert 'no "method"' in error.message and "bash | subagent | manual" in error.message


def test_unknown_method_points_at_the_method_line_with_a_close_match() -> None:
    error = error_of(one_criterion("method: subagnet"))
    assert error.line == 6
    assert "unknown method 'subagnet'" in error.message and "'subagent'" in error.message


def test_method_that_is_not_a_string_is_a_type_error() -> None:
    error = error_of(one_criterion("method: 3"))
    assert error.line == 6
    assert "a number (3)" in error.message


def test_unknown_key_names_the_key_the_known_keys_and_a_close_match() -> None:
    error = error_of(one_criterion("method: bash\ncomand: 'true'"))
    assert error.line == 7
    assert "unknown key 'comand' for method bash" in error.message
    assert "method, timeout, retries, priority, command, pass_condition" in error.message
    assert "did you mean 'command'?" in error.message


def test_key_of_another_method_says_which_method_it_belongs_to() -> None:
    error = error_of(bash_block("agent: reviewer"))
    assert error.line == 8
    assert '"agent" belongs to method subagent' in error.message


def test_bash_without_command_points_at_the_method_line() -> None:
    error = error_of(one_criterion("method: bash\npass_condition: exit code 0"))
    assert error.line == 6
    assert 'method bash needs a "command"' in error.message


@pytest.mark.parametrize("written", ["''", "'   '", ""])
def test_empty_command_is_an_error(written: str) -> None:
    error = error_of(one_criterion(f"method: bash\ncommand: {written}"))
    assert error.line == 7
    assert '"command" is empty' in error.message


def test_duplicate_id_is_reported_at_the_second_heading_naming_the_first() -> None:
    text = bash_block() + "\n#### AC-1: again\n```yaml\nmethod: manual\n```\n"
    error = error_of(text)
    assert error.line == 10
    assert "duplicate criterion id AC-1" in error.message and "line 3" in error.message


def test_ids_differing_only_in_case_are_duplicates() -> None:
    text = bash_block() + "\n#### ac-1: again\n```yaml\nmethod: manual\n```\n"
    error = error_of(text)
    assert error.line == 10 and "AC-1 is already defined at line 3" in error.message


def test_criterion_heading_without_yaml_block_says_how_to_add_one() -> None:
    error = error_of("# Spec\n\n#### AC-1: x\n**Description:** y\n")
    assert error.line == 3
    assert error.message.startswith(
        'AC-1 has no verification block: add a fenced yaml block with "method: bash | '
        'subagent | manual" after the heading (a **Verification:** line before it is optional'
    )


@pytest.mark.parametrize("info", ["", "yml-ish", "text"])
def test_a_verification_block_not_marked_yaml_is_named_as_such(info: str) -> None:
    """A block that holds "method:" but opens with ``` or ```text: the error points at it
    and says how to open it, instead of claiming the criterion has no block."""
    error = error_of(f"# Spec\n\n#### AC-1: x\n\n```{info}\nmethod: manual\n```\n")
    assert error.line == 5
    assert error.message.startswith("the block under AC-1 is not marked yaml")
    assert "open it with ```yaml" in error.message


@pytest.mark.parametrize(
    ("written", "ident"),
    [("AC-1/../../etc", "AC-1/../../etc"), ("AC-1\\x\\y", "AC-1\\x\\y"), ("AC-1$x", "AC-1$x")],
)
def test_id_unsafe_as_a_file_name_is_an_error_naming_allowed_characters(
    written: str, ident: str
) -> None:
    error = error_of(one_criterion("method: manual", heading=f"#### {written}: x"))
    assert error.line == 3
    assert repr(ident) in error.message
    assert 'use only letters, digits, ".", "_" and "-"' in error.message


@pytest.mark.parametrize("text", ["", "   \n\n\t\n"])
def test_empty_or_whitespace_only_spec_is_an_error_at_line_1(text: str) -> None:
    error = error_of(text)
    assert error.line == 1 and "the spec is empty" in error.message


def test_spec_without_criteria_says_what_a_criterion_looks_like() -> None:
    error = error_of("# Just prose\n\n## AC overview\n\nNothing to verify.\n")
    assert error.line == 1
    assert "no acceptance criteria found" in error.message
    assert '"#### AC-1: Title"' in error.message


def test_nul_byte_is_binary_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(b"# Spec\n\nok line\x00\x01\x02\n")
    with pytest.raises(SpecError) as excinfo:
        parse_spec(path)
    assert excinfo.value.line == 3 and "not a text file" in excinfo.value.message


def test_invalid_utf8_is_binary_at_the_line_of_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(b"# Spec\n\xff\xfe junk\n\x00\n")
    with pytest.raises(SpecError) as excinfo:
        parse_spec(path)
    assert excinfo.value.line == 2 and "UTF-8" in excinfo.value.message


def test_utf16_spec_is_told_to_be_saved_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(VARIANTS.encode("utf-16"))
    with pytest.raises(SpecError) as excinfo:
        parse_spec(path)
    assert excinfo.value.line == 1 and "save it as UTF-8" in excinfo.value.message


def test_missing_file_is_a_spec_error_not_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as excinfo:
        parse_spec(tmp_path / "nope.md")
    assert "cannot read the spec" in excinfo.value.message


def test_truncated_seed_is_either_a_spec_or_a_spec_error(seed_spec: Spec) -> None:
    """Whatever prefix of a real spec is given, the only failure is a SpecError."""
    text = seed_spec.path.read_text(encoding="utf-8")
    outcomes: set[object] = set()
    for end in range(0, len(text), 97):
        try:
            outcomes.add(len(parse_spec_text(text[:end], SPEC).criteria) > 0)
        except SpecError as error:
            assert 1 <= error.line <= text[:end].count("\n") + 1
            outcomes.add("error")
    assert outcomes == {True, "error"}


def test_randomly_mangled_specs_only_ever_raise_spec_error() -> None:
    """Seeded mutations of a valid spec: a Spec or a SpecError with a line in the text."""
    base = VARIANTS + "\n#### AC-9: with `code`\n```\nbare fence\n```\n```yaml\nmethod: bash\n"
    base += "command: 'true'\ntimeout: 5m\nchecks: [a]\n```\n"
    pieces = [*"`~#:-\n\t*_[]{}\"'|>&!\\\x85\u2028", "```", "\r\n", "- ", "yaml"]
    rng = random.Random(20260117)
    for _ in range(400):
        text = base
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text))
            if rng.random() < 0.3:
                text = text[:at] + text[at + rng.randint(1, 8) :]
            else:
                text = text[:at] + rng.choice(pieces) + text[at:]
        try:
            parse(text)
        except SpecError as error:
            assert 1 <= error.line <= len(text.splitlines()) + 1, (text, error)


# --- robustness and speed -------------------------------------------------------------------


def test_parses_after_yaml_is_imported_again_in_the_same_process() -> None:
    """pytester's in-process runs drop modules; a stale libyaml must not break typing."""
    script = (
        "import sys, yaml\n"
        "for name in [m for m in sys.modules if m == 'yaml' or m.startswith('yaml.')]:\n"
        "    del sys.modules[name]\n"
        "from pathlib import Path\n"
        "from pytest_acceptance.spec.load import parse_spec_text\n"
        f"spec = parse_spec_text({bash_block('retries: 2')!r}, Path('s.md'))\n"
        "print(spec.criteria[0].command, spec.criteria[0].retries)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "true 2"), done.stderr


def test_five_thousand_criteria_parse_in_one_pass() -> None:
    blocks = [
        f"#### AC-{n}: Criterion {n}\n**Description:** Checks thing {n}.\n\n"
        f"**Verification:**\n```yaml\nmethod: bash\ncommand: test {n} -gt 0\n"
        "pass_condition: exit code 0\ntimeout: 5m\n```\n\n"
        for n in range(1, 5001)
    ]
    text = "# Big\n\n### Category: Load\n\n" + "".join(blocks)
    started = time.process_time()
    spec = parse(text)
    elapsed = time.process_time() - started
    print(f"\nparsed 5,000 criteria in {elapsed:.3f} s of CPU")
    assert len(spec.criteria) == 5000
    assert spec.criteria[-1].id == "AC-5000" and spec.criteria[-1].timeout == 300.0


# --- the optional parse cache ---------------------------------------------------------------


def test_cache_serves_the_stored_spec_for_unchanged_bytes(tmp_path: Path) -> None:
    spec_path, cache = tmp_path / "spec.md", tmp_path / "cache"
    spec_path.write_text(VARIANTS, encoding="utf-8")
    first = parse_spec_cached(spec_path, cache)
    assert first == parse_spec(spec_path)
    [entry] = cache.glob("*.pickle")
    # Prove the second call reads the entry rather than parsing: plant a marked Spec there.
    entry.write_bytes(pickle.dumps(dataclasses.replace(first, title="from the cache")))
    assert parse_spec_cached(spec_path, cache).title == "from the cache"


def test_cache_reparses_changed_bytes_and_drops_the_older_entry(tmp_path: Path) -> None:
    spec_path, cache = tmp_path / "spec.md", tmp_path / "cache"
    spec_path.write_text(VARIANTS, encoding="utf-8")
    parse_spec_cached(spec_path, cache)
    spec_path.write_text(VARIANTS.replace("# Variants", "# Edited"), encoding="utf-8")
    assert parse_spec_cached(spec_path, cache).title == "Edited"
    assert len(list(cache.glob("*.pickle"))) == 1


def test_cache_ignores_a_corrupt_entry_and_never_stores_errors(tmp_path: Path) -> None:
    spec_path, cache = tmp_path / "spec.md", tmp_path / "cache"
    spec_path.write_text(VARIANTS, encoding="utf-8")
    parse_spec_cached(spec_path, cache)
    [entry] = cache.glob("*.pickle")
    for foreign in (b"not a pickle", pickle.dumps({"title": "a dict, not a Spec"})):
        entry.write_bytes(foreign)
        assert parse_spec_cached(spec_path, cache).title == "Variants"
    stored = sorted(cache.iterdir())
    spec_path.write_text("# Spec\n\n#### AC-1: x\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SpecError, match="no verification block"):
            parse_spec_cached(spec_path, cache)
    assert sorted(cache.iterdir()) == stored
    with pytest.raises(SpecError, match="cannot read the spec"):
        parse_spec_cached(tmp_path / "missing.md", cache)


def test_cache_keeps_the_path_of_each_spec(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    for path in (one, two):
        path.write_text(VARIANTS, encoding="utf-8")
    assert parse_spec_cached(one, cache).criteria[0].location.path == one
    assert parse_spec_cached(two, cache).criteria[0].location.path == two


def test_the_cache_key_covers_every_module_that_shapes_a_parsed_spec(tmp_path: Path) -> None:
    """A stored entry is read back only by the code that wrote it: every module of the
    package that parsing loads (the model's classes included) is part of the key. Reading
    the file (tree/) shapes nothing."""
    spec_path = tmp_path / "spec.md"
    spec_path.write_text(VARIANTS, encoding="utf-8")
    probe = (
        "import sys; from pathlib import Path\n"
        "from pytest_acceptance.spec.load import parse_spec\n"
        "parse_spec(Path(sys.argv[1]))\n"
        "for name, module in list(sys.modules.items()):\n"
        "    if name.startswith('pytest_acceptance.'):\n"
        "        print(module.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(spec_path)], capture_output=True, text=True, check=True
    )
    loaded = {Path(line) for line in done.stdout.split()}
    shaping = {path for path in loaded if "tree" not in path.parts and path.name != "__init__.py"}
    assert shaping and shaping <= set(parser_sources())
