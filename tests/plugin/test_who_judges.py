"""Who judges each criterion is visible before it runs (--collect-only, -v), and without an
agent the way out is printed once per run, with a did-you-mean for each pass condition
that is not in the vocabulary."""

from __future__ import annotations

import pytest
from support.specs import bash, criterion, manual, spec

from pytest_acceptance.run.conditions import closest_phrase

SPEC = spec(
    bash("AC-1", "true", "Echo works"),
    bash("AC-2", "true", "Tests pass", pass_condition="all tests pass"),
    bash("AC-3", "true", "Exit status", pass_condition="exit status is 0"),
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
            "  Error: no agent configured to judge the pass condition 'all tests pass' of AC-2 "
            '(not in the vocabulary: did you mean "exit code 0"?)',
            "*the pass condition 'exit status is 0' of AC-3 "
            '(not in the vocabulary: did you mean "exit code N"?)',
            "  Error: no agent configured to judge AC-4",
            "AC-2, AC-3, AC-4: an agent must judge them, and none is configured: the agent is "
            "switched off (--acceptance-agent none). Either configure one: *--acceptance-agent-"
            "command CMD* Or let a command decide: give each criterion a yaml verification "
            "block (in a list item, indented under the item), e.g.",
            "```yaml",
            "method: bash",
            "*",
            'with a pass_condition from the vocabulary: "exit code N"; *',
        ]
    )
    assert text.count("none is configured") == 1
    assert text.count("Either configure one") == 1


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
