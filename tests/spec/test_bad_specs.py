"""A malformed spec is a collection error naming spec.md:LINE and what to fix — never an
INTERNALERROR, never a traceback, and never a verdict that passes."""

from __future__ import annotations

import json

import pytest
from support.specs import bash, criterion, spec

HEAD = "# Spec\n\n"  # the criterion heading below is on line 3

BAD_SPECS = {
    "malformed yaml": (
        HEAD + "#### AC-1: x\n```yaml\nmethod: bash\ncommand: [unclosed\n```\n",
        0,  # libyaml marks the end of the unclosed flow: line 6 or 7
        "yaml",
    ),
    "verification not a mapping": (
        HEAD + "#### AC-1: x\n```yaml\n- method: bash\n```\n",
        0,
        "mapping",
    ),
    "unknown method": (HEAD + criterion("AC-1", method="robot"), 8, "robot"),  # its yaml line
    "bash without a command": (HEAD + criterion("AC-1", method="bash"), 8, "command"),
    "duplicate ids": (HEAD + bash("AC-1", "true") + bash("AC-1", "true"), 12, "AC-1"),
    "no verification block": (HEAD + "#### AC-1: x\n**Description:** y\n", 3, "AC-1"),
    "id escaping a directory": (HEAD + bash("AC-1/../../etc", "true"), 3, "AC-1/../../etc"),
    "empty file": ("", 1, "empty"),
    "no criteria at all": ("# Just prose\n\nNothing to verify.\n", 1, "criteri"),
    "malformed pass condition": (
        HEAD + bash("AC-1", "true", pass_condition="output matches '('"),
        0,
        "AC-1",
    ),
}


@pytest.mark.parametrize("case", BAD_SPECS, ids=list(BAD_SPECS))
def test_bad_spec_is_a_collection_error_naming_file_and_line(
    pytester: pytest.Pytester, case: str
) -> None:
    text, line, mentions = BAD_SPECS[case]
    pytester.makefile(".md", spec=text)
    result = pytester.runpytest("--acceptance", "spec.md")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines(["*ERROR collecting spec.md*", f"spec.md:{line or '*'}: *"])
    message = next(x for x in result.stdout.lines if x.startswith("spec.md:"))
    assert mentions.lower() in message.lower()
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_binary_file_is_a_collection_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "spec.md").write_bytes(b"# Spec\n\x00\x01\x02\xff")
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(["spec.md:*: *"])
    assert "Traceback" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_bad_spec_leaves_an_error_verdict_not_a_pass(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=HEAD + criterion("AC-1", method="robot"))
    pytester.runpytest("--acceptance", "spec.md")
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert verdict["status"] == "error"
    assert "spec.md:8" in verdict["problems"][0]


def test_a_bad_spec_beside_a_good_one_still_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", good=spec(bash("AC-1", "true")), bad="")
    result = pytester.runpytest("--acceptance", "good.md", "--acceptance", "bad.md")
    result.stdout.fnmatch_lines(["bad.md:1: *"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_an_oversized_spec_is_a_bounded_collection_error(pytester: pytest.Pytester) -> None:
    """A spec over the size cap is refused at line 1 before it is read whole or parsed."""
    from pytest_acceptance.spec.file import MAX_SPEC_BYTES

    text = HEAD + bash("AC-1", "true") + "x" * 80 + "\n"
    (pytester.path / "spec.md").write_text(text * (MAX_SPEC_BYTES // len(text) + 1))
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "no:cacheprovider")
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*spec.md:1: the spec is larger than 16 MiB*"])


def test_a_fifo_named_as_the_spec_is_an_error_not_a_hang(pytester: pytest.Pytester) -> None:
    """Opening a FIFO would block until a writer comes: it is refused as not a regular file."""
    import os

    os.mkfifo(pytester.path / "spec.md")
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "no:cacheprovider")
    assert result.ret == 4  # a usage error, as for a missing path
    assert "INTERNALERROR" not in result.stdout.str()
    assert "spec.md: not a regular file" in result.stderr.str()


def test_a_spec_with_thousands_of_problems_lists_a_bounded_number(
    pytester: pytest.Pytester,
) -> None:
    """Every problem of a spec is one collection error, but its text stays bounded."""
    (pytester.path / "spec.md").write_text(HEAD + bash("AC-1", "true") * 500)
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "no:cacheprovider")
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*... and 449 more problems in this spec*"])
    assert result.stdout.str().count("duplicate criterion id AC-1") <= 2 * 50
