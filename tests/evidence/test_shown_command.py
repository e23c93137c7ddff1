"""What is shown is what ran: a bash criterion's command reads byte for byte in the terminal,
the JUnit report, the HTML report and report.md (quoted; cut only with a visible
ellipsis), since every one of them takes it from ``Criterion.method_detail``."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.specs import bash, spec

from pytest_acceptance.model import SHOWN_COMMAND_LIMIT, shown_command

# A run of spaces inside a quoted argument: folding it would show another command.
WORDY = "python -c 'import sys; print(len(sys.argv[1])); sys.exit(1)' 'hello   big world'"
# Tabs and a backtick, written after the fix: the same class, other white space.
TABBED = "printf '%s\\n' \"a\t\tb\"  `echo   c` ; exit 3"


@pytest.mark.parametrize("command", [WORDY, TABBED])
def test_every_output_shows_the_command_that_ran(pytester: pytest.Pytester, command: str) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", command, "Words", retries=0)))
    result = pytester.runpytest(
        "--acceptance", "spec.md", "-n", "0", "--junitxml=j.xml", "--acceptance-html=r.html"
    )
    assert result.ret == 1
    shown = shown_command(command)
    assert command in shown  # whole, unfolded
    assert f"  Method: bash {shown}" in result.stdout.lines
    junit = (pytester.path / "j.xml").read_text()
    assert f"Method: bash {html.escape(shown, quote=False)}" in junit
    page = (pytester.path / "r.html").read_text()
    assert f"bash {html.escape(shown)}" in page
    report = next((pytester.path / ".acceptance").rglob("report.md")).read_text()
    assert "  " not in command or any("  " in line for line in report.splitlines()[1:])


def test_report_md_keeps_a_run_of_spaces_in_the_output_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "echo 'a   b'; exit 1", "Spaces", retries=0)))
    pytester.runpytest("--acceptance", "spec.md", "-n", "0")
    report = next((pytester.path / ".acceptance").rglob("report.md")).read_text()
    assert 'last output line: "a   b"' in report


_ONE_LINE = st.text(
    st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from(" \t`'\""), max_size=80
)


def _between_fences(shown: str) -> str:
    fence = re.match("`+", shown)
    assert fence is not None
    inner = shown[fence.end() : shown.rindex(fence[0])]
    return inner[1:-1] if inner.startswith(" `") or inner.endswith("` ") else inner


@given(_ONE_LINE)
def test_a_one_line_command_is_shown_byte_for_byte(command: str) -> None:
    assert _between_fences(shown_command(command)) == command


@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=5))
def test_a_script_is_cut_at_its_first_line_with_a_visible_ellipsis(first: str, more: int) -> None:
    first = first.replace("\n", " ").replace("\r", " ")
    shown = shown_command("\n".join([first, *["echo next"] * more]))
    assert "…" in shown
    assert shown.endswith(f"(+{more} line{'s' if more != 1 else ''})")


def test_a_long_command_is_cut_with_a_visible_ellipsis() -> None:
    shown = shown_command("x" * (SHOWN_COMMAND_LIMIT + 50))
    assert shown == "`" + "x" * SHOWN_COMMAND_LIMIT + "…`"


def test_control_characters_show_as_escapes_not_as_terminal_actions() -> None:
    assert shown_command("echo \x1b[31mred") == "`echo \\x1b[31mred`"
