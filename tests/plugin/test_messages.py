"""The commonest first mistakes get a message that names the fix: a spec given without
--acceptance, --acceptance followed by another option, and a verification block left at the
margin under a list item. (Ini durations with units: test_config.py.)"""

from __future__ import annotations

import pytest
from support.specs import bash, spec

SPEC = spec(bash("AC-1", "true", "quick"))
KIRO = """# Requirements Document

## Requirements

### Requirement 1: Reset links

**User Story:** As a user, I want to reset my password, so that I can log in.

#### Acceptance Criteria

1. WHEN a link has been used once THEN the system SHALL reject it
```yaml
method: bash
command: "true"
```
2. WHEN a link is a day old THEN the system SHALL reject it
"""


def test_a_spec_given_without_acceptance_says_to_add_it(pytester: pytest.Pytester) -> None:
    """pytest's own "not found: spec.md (no match in any of [<Dir …>])" gets the fix."""
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("spec.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*spec.md: a spec's criteria are collected only with --acceptance: "
         "pytest --acceptance spec.md"]
    )  # fmt: skip


def test_a_missing_python_file_keeps_pytests_own_message(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("test_nothing.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--acceptance" not in result.stderr.str()


def test_acceptance_followed_by_an_option_takes_the_markdown_paths(
    pytester: pytest.Pytester,
) -> None:
    """`pytest --acceptance -v spec.md`: argparse gives -v the place of the spec, which then
    stands alone on the command line; it is the spec."""
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("--acceptance", "-v", "spec.md")
    result.stdout.fnmatch_lines(["spec.md::AC-1 quick*PASSED*"])
    assert result.ret == 0
    result = pytester.runpytest("--acceptance", "-v", "spec.md::AC-1")
    assert result.ret == 0, result.stdout.str()


def test_acceptance_with_no_spec_anywhere_names_both_ways(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--acceptance", "-v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--acceptance names no spec: put the spec right after it (pytest --acceptance "
         "spec.md -v), or list the specs in ini acceptance_specs"]
    )  # fmt: skip


def test_a_block_at_the_margin_under_a_list_item_is_told_to_indent(
    pytester: pytest.Pytester,
) -> None:
    """It is right under the item (not "put it right under one"): the fix is to indent it;
    indented, the same block makes the item a bash criterion."""
    pytester.makefile(".md", requirements=KIRO)
    result = pytester.runpytest("--acceptance", "requirements.md")
    result.stdout.fnmatch_lines(
        ["requirements.md:12: this verification block is right under the list item at line 11 "
         "but not inside it: indent the whole block*"]
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    indented = KIRO.replace("```", "   ```").replace("\nmethod", "\n   method")
    pytester.makefile(".md", requirements=indented.replace("\ncommand", "\n   command"))
    result = pytester.runpytest("--acceptance", "requirements.md", "--co", "-q")
    result.stdout.fnmatch_lines(["requirements.md::1.1", "requirements.md::1.2"])


def test_a_block_under_a_list_item_without_an_id_says_the_item_needs_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec="# Spec\n\n- The button is blue\n```yaml\nmethod: manual\n```\n")
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(
        ['spec.md:4: *the list item above it (line 3) does not start with an id like "AC-1"*']
    )
