"""The verdict's words fit their reader: seed 000's instructions inside a Claude Code
session (CLAUDECODE=1), advice for a person elsewhere; counts agree in number; -q lists
failures and counts passes; several specs are grouped; a failure's location is a project
file, never a file of an installed package."""

from __future__ import annotations

import pytest
from support.specs import bash, manual, spec


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDECODE", raising=False)


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")


def run(pytester: pytest.Pytester, text: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".md", spec=text)
    return pytester.runpytest("--acceptance", "spec.md", *args)


FAILING = spec(bash("AC-1", "true", "fine"), bash("AC-2", "exit 1", "broken", retries=0))


@pytest.mark.usefixtures("person")
def test_a_person_is_told_what_to_do_not_to_call_skills(pytester: pytest.Pytester) -> None:
    result = run(pytester, FAILING)
    result.stdout.fnmatch_lines(
        [
            "Not verified: 1 of 2 criteria failed. Fix what is listed above, then run the same "
            "pytest command again."
        ]
    )
    assert "/verify" not in result.stdout.str()


@pytest.mark.usefixtures("agent")
def test_inside_claude_code_the_agent_gets_the_seed_instructions(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, FAILING)
    result.stdout.fnmatch_lines(["Continue working on failed criteria, then call /verify again."])
    passing = run(pytester, spec(bash("AC-1", "true")))
    passing.stdout.fnmatch_lines(["1 criterion passes: verified. /done may follow."])


@pytest.mark.usefixtures("person")
@pytest.mark.parametrize(
    ("text", "line"),
    [
        (spec(bash("AC-1", "true")), "1 criterion passes: verified."),
        (spec(bash("AC-1", "true"), bash("AC-2", "true")), "All 2 criteria pass: verified."),
        (
            spec(bash("AC-1", "true"), manual("AC-2")),
            "1 automated criterion passes; 1 criterion needs a person: check the list above "
            "by hand, then record each check by adding --acceptance-sign-off AC-2 "
            "--acceptance-by 'Your Name' to this pytest command (a signed-off criterion "
            "counts as passed).",
        ),
        (
            spec(manual("AC-1"), manual("AC-2")),
            "No automated criteria were selected; 2 criteria need a person: *",
        ),
    ],
    ids=["one", "two", "manual-left", "manual-only"],
)
def test_counts_agree_in_number(pytester: pytest.Pytester, text: str, line: str) -> None:
    result = run(pytester, text)
    result.stdout.fnmatch_lines([line])
    assert "All 0" not in result.stdout.str() and "1 criteria" not in result.stdout.str()
    assert "/done" not in result.stdout.str() and "/escalate" not in result.stdout.str()


@pytest.mark.usefixtures("person")
def test_quiet_lists_failures_and_only_counts_passes(pytester: pytest.Pytester) -> None:
    result = run(pytester, FAILING, "-q")
    result.stdout.fnmatch_lines(["### Failed (1)", "- AC-2: broken", "*", "1 passed", "", "Not*"])
    assert "- AC-1: fine" not in result.stdout.str()
    assert "### Passed" not in result.stdout.str()  # no heading over an empty section
    verbose = run(pytester, FAILING)
    verbose.stdout.fnmatch_lines(["### Passed (1)", "- AC-1: fine ✓"])


@pytest.mark.usefixtures("person")
def test_quiet_names_the_passes_that_were_flaky_or_signed_off(pytester: pytest.Pytester) -> None:
    """-q lists no passes, but one that needed a retry or a person is named in the count."""
    flaky = "if [ -f once ]; then exit 0; fi; touch once; exit 1"
    text = spec(
        bash("AC-1", "true", "fine"),
        bash("AC-2", flaky, "flaky", retries=1),
        manual("AC-3", "reads well", checks=["friendly"]),
    )
    pytester.makefile(".md", spec=text)
    signed = pytester.runpytest("--acceptance", "spec.md", "--acceptance-sign-off", "AC-3",
                                "--acceptance-by", "Ada")  # fmt: skip
    assert signed.ret == 0
    result = run(pytester, text, "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["3 passed (flaky: AC-2; signed off: AC-3)"])


@pytest.mark.usefixtures("person")
def test_several_specs_are_grouped_by_spec(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", one=spec(bash("AC-1", "true", "first")))
    pytester.makefile(".md", two=spec(bash("AC-1", "true", "second")))
    result = pytester.runpytest("--acceptance", "one.md", "--acceptance", "two.md")
    result.stdout.fnmatch_lines(
        ["### Passed (2)", "one.md:", "- AC-1: first ✓", "two.md:", "- AC-1: second ✓"]
    )
    single = run(pytester, spec(bash("AC-1", "true", "alone")))
    assert "spec.md:\n" not in single.stdout.str()


@pytest.mark.usefixtures("person")
def test_a_failure_location_is_a_project_file_not_an_installed_package(
    pytester: pytest.Pytester,
) -> None:
    """A warning from a package in the project's .venv comes first in the output; the
    failure's location is still the project file."""
    installed = pytester.mkdir(".venv") / "lib" / "python3.11" / "site-packages" / "pkg"
    installed.mkdir(parents=True)
    (installed / "mod.py").write_text("x = 1\n" * 20)
    pytester.makepyfile(app="x = 1\n" * 5)
    command = (
        'echo "$PWD/.venv/lib/python3.11/site-packages/pkg/mod.py:12: DeprecationWarning: old";'
        " echo 'app.py:3: AssertionError'; exit 1"
    )
    result = run(pytester, spec(bash("AC-1", command, "crashes", retries=0)))
    result.stdout.fnmatch_lines(["- AC-1: crashes", "  Method: *", "  Location: app.py:3"])
    only_installed = run(
        pytester,
        spec(bash("AC-1", "echo '.venv/lib/python3.11/site-packages/pkg/mod.py:2: E'; exit 1")),
    )
    only_installed.stdout.fnmatch_lines(["  Location: spec.md:*"])


@pytest.mark.usefixtures("person")
def test_a_failure_states_its_full_text_once_and_one_line_elsewhere(
    pytester: pytest.Pytester,
) -> None:
    """The verdict block holds the whole failure once ("Actual: ...", no restating "expected
    ...; found ..." line, what the message adds, the output); pytest's FAILURES section and
    short summary give it one line each."""
    result = run(pytester, spec(bash("AC-1", "echo nope; exit 1", "broken", retries=1)))
    text = result.stdout.str()
    failures = text.split("= FAILURES =")[1].split("= acceptance verdict =")[0]
    said = [line for line in failures.splitlines() if line.strip("=_ ") and "AC-1" in line]
    assert said[1:] == ["AC-1: broken — failed (details in the acceptance verdict below)"]
    verdict = text.split("= acceptance verdict =")[1].split("= acceptance evidence =")[0]
    assert 'Actual: exit code 1; last output line: "nope"' in verdict
    assert "Note: (all 2 attempts failed)" in verdict
    assert "Output (last lines):\n    nope" in verdict
    assert "found exit code 1" not in text
    assert text.count("Actual: exit code 1") == 1
    result.stdout.fnmatch_lines(["FAILED spec.md::AC-1 - AC-1: broken — failed"])


@pytest.mark.usefixtures("person")
def test_every_problem_of_a_collection_error_sits_under_its_bullet(
    pytester: pytest.Pytester,
) -> None:
    text = "# S\n\n## AC-1: a\n```yaml\nmethod: bash\n```\n\n## AC-2: b\n```yaml\nmethod: x\n```\n"
    result = run(pytester, text)
    result.stdout.fnmatch_lines(
        ["- collection error: spec.md:5: AC-1: *", "  spec.md:10: AC-2: unknown method 'x'*"]
    )


@pytest.mark.usefixtures("person")
def test_skipped_markdown_files_are_named_in_plain_words(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true")), README="# Hello\n", NOTES="# n\n")
    result = pytester.runpytest("--acceptance", ".")
    result.stdout.fnmatch_lines(
        ["acceptance: skipped 2 markdown files that are not specs: NOTES.md, README.md"]
    )
