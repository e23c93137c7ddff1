"""Who judges each criterion is visible before it runs (--collect-only, -v); a judge is
asked for explicitly (``judge: ...``), and a pass condition outside the vocabulary is a
collection error with a did-you-mean, agent or no agent; without an agent the way out is
printed once per run."""

from __future__ import annotations

import sys

import pytest
from support.specs import bash, criterion, manual, spec

from pytest_acceptance.run.conditions import closest_phrase

SPEC = spec(
    bash("AC-1", "true", "Echo works"),
    bash("AC-2", "true", "Tests pass", pass_condition="judge: all tests pass"),
    bash("AC-3", "true", "Exit status", pass_condition="JUDGE: exit status is 0"),
    criterion("AC-4", "Design is clean", method="subagent", checks=["no globals"]),
    manual("AC-5", "Reads well"),
)


def test_collect_only_and_verbose_lines_show_who_judges(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=SPEC)
    collected = pytester.runpytest("--acceptance", "spec.md", "--collect-only")
    collected.stdout.fnmatch_lines(
        [
            "*<CriterionItem AC-1 Echo works [[]bash[]]>",
            "*<CriterionItem AC-2 Tests pass [[]bash, agent-judged[]]>",
            "*<CriterionItem AC-3 Exit status [[]bash, agent-judged[]]>",
            "*<CriterionItem AC-4 Design is clean [[]agent[]]>",
            "*<CriterionItem AC-5 Reads well [[]manual[]]>",
        ]
    )
    verbose = pytester.runpytest("--acceptance", "spec.md", "-v", "-n", "0", "-k", "AC-1")
    verbose.stdout.fnmatch_lines(["spec.md::AC-1 Echo works [[]bash[]] PASSED*"])


def test_without_an_agent_the_way_out_is_printed_once(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=SPEC)
    result = pytester.runpytest("--acceptance", "spec.md", "-n", "0", "--acceptance-agent", "none")
    assert result.ret == 11
    text = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "acceptance: no agent to judge 3 criteria (AC-2, AC-3, AC-4); they will be errors.*",
            "## Verification Results",
            "AC-2, AC-3, AC-4: an agent must judge them, and none is configured: the agent is "
            "switched off (--acceptance-agent none).",
            "  Configure one: `pip install 'pytest-acceptance[[]claude[]]'`*--acceptance-agent-"
            "command CMD`).",
            '  Or let a command decide: *`method: bash`*"exit code N"*',
            "",
            "### Errors (3)",
            "*the pass condition 'judge: all tests pass' of AC-2",
            "*the pass condition 'JUDGE: exit status is 0' of AC-3",
            "  Error: no agent configured to judge AC-4",
        ]
    )
    assert text.count("none is configured") == 1
    assert text.count("Configure one") == 1


def test_the_way_out_comes_before_a_long_list(pytester: pytest.Pytester) -> None:
    """Written after the fix: thirteen criteria of a prose spec, a failing bash criterion
    among them; the fix opens the verdict, in three lines, before every entry."""
    checks = [criterion(f"AC-{n}", f"Does {n}", method="subagent") for n in range(1, 14)]
    pytester.makefile(".md", spec=spec(bash("AC-20", "exit 1", "Fails", retries=0), *checks))
    result = pytester.runpytest("--acceptance", "spec.md", "-n", "0", "--acceptance-agent", "none")
    verdict = result.stdout.str().split("= acceptance verdict =")[1].splitlines()
    start = next(n for n, line in enumerate(verdict) if "none is configured" in line)
    first_entry = next(n for n, line in enumerate(verdict) if line.startswith("- AC-"))
    assert start < first_entry and start <= 6  # after the title and where commands ran
    assert verdict[start].startswith("AC-1, AC-2, AC-3, AC-4, AC-5, AC-6, … (13 criteria): ")
    assert verdict[start + 3] == ""  # three lines
    assert sum("Configure one" in line for line in result.stdout.lines) == 1


@pytest.mark.parametrize(
    ("condition", "meant"),
    [
        ("all tests pass", "exit code 0"),
        ("exit status is 0", "exit code N"),
        ("returns 0", "exit code N"),
        ("output includes 'done'", "output contains X"),
        ("stdout contains done", "output contains X"),
        ("the output is blank", "output is empty"),
        ("output match ^ok", "output matches REGEX"),
        ("file build/x.json exist", "file PATH exists"),
        ("file build/x.json does not exists", "file PATH does not exist"),
        ("multiple commits with criterion references", None),
        ("", None),
    ],
)
def test_did_you_mean_names_the_closest_phrase(condition: str, meant: str | None) -> None:
    assert closest_phrase(condition) == meant


TYPOS = spec(
    bash("AC-1", "true", "Exit", pass_condition="exitcode 0"),
    bash("AC-2", "echo a b c", "Words", pass_condition="ouput contains 3 words"),
    bash("AC-3", "exit 5", "Either", pass_condition="exit code 5 or exit code 0"),
)


@pytest.mark.parametrize("agent", ["none", "command"])
def test_a_condition_outside_the_vocabulary_is_a_collection_error_agent_or_not(
    pytester: pytest.Pytester, agent: str
) -> None:
    """With a judge configured (one that would say PASS to anything), the typos still never
    reach it: each is a collection error at its line, with the closest phrase."""
    pytester.makefile(".md", spec=TYPOS)
    judge = pytester.makepyfile(
        judge='import sys; sys.stdin.read(); print(\'{"passed": true, "issues": []}\')'
    )
    options = ["--acceptance-agent", "none"]
    if agent == "command":
        options = ["--acceptance-agent-command", f"{sys.executable} {judge}"]
    result = pytester.runpytest("--acceptance", "spec.md", "-n", "0", *options)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, nothing ran
    first = TYPOS.splitlines().index("```yaml") + 1  # AC-1's verification block
    result.stdout.fnmatch_lines_random(
        [
            f"*spec.md:{first}: AC-1: pass_condition 'exitcode 0': is not in the vocabulary: "
            'did you mean "exit code N"?*',
            "*AC-2: pass_condition 'ouput contains 3 words'*did you mean \"output contains X\"?*"
            "'judge: ouput contains 3 words'*",
            "*AC-3: pass_condition 'exit code 5 or exit code 0': \"or\" is not in the vocabulary*",
        ]
    )
    assert "PASSED" not in result.stdout.str()
