"""Agent criteria through the command backend, hookimpls called directly: a real scripted
judge process per dispatch (stdin prompt, stdout verdict), real timeouts and kills."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.judges import Judge

from pytest_acceptance.agent.backends import CommandBackend
from pytest_acceptance.agent.settings import AgentSettings
from pytest_acceptance.agent.verifier import AgentVerifier
from pytest_acceptance.model import Criterion, Issue, Location, Method, RunContext, Status

# A judge program driven by plan.json beside it: for each criterion id, one behaviour per
# dispatch (the last one repeats). It logs every call to calls.log and keeps each prompt.


@pytest.fixture
def judge(tmp_path_factory: pytest.TempPathFactory) -> Judge:
    return Judge(tmp_path_factory.mktemp("judge"))


def verifier(judge: Judge | None, **settings: object) -> AgentVerifier:
    values: dict[str, object] = {
        "backend": CommandBackend(judge.command.split()) if judge else None,
        "unavailable": "`claude` is not on PATH and no agent command is configured",
        "model": None,
        "wave": 5,
        "cache": False,
        "log_path": None,
    }
    values.update(settings)
    return AgentVerifier(AgentSettings(**values))  # type: ignore[arg-type]


def agent_criterion(rootdir: Path, ident: str = "AC-7", **fields: object) -> Criterion:
    values: dict[str, object] = {
        "id": ident,
        "title": "Error pattern",
        "method": Method.SUBAGENT,
        "location": Location(rootdir / "spec.md", 12),
        "description": "Handlers throw AppError.",
        "agent": "pattern-checker",
        "checks": ("no raw Error()",),
        "timeout": 30,
    }
    values.update(fields)
    return Criterion(**values)  # type: ignore[arg-type]


def test_pass_from_the_command_is_a_pass_with_its_summary(judge: Judge, tmp_path: Path) -> None:
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.PASSED
    assert result.message == "AC-7 holds"
    assert result.extra == {
        "backend": "command",
        "agent": "pattern-checker",
        "project_agent": None,
        "model": None,
        "cached": False,
        "dispatches": 1,
        "summary": "AC-7 holds",
        "usage": {
            "calls": 1,
            "cached": False,
            "cost_usd": 0.0,  # the judge reported none
            "input_tokens": 0,
            "output_tokens": 0,
            "turns": 0,
            "duration": result.extra["usage"]["duration"],
        },
    }
    assert judge.calls("AC-7")[0][3] == str(tmp_path)  # the agent runs in the root


def test_fail_carries_the_agents_file_line_issues(judge: Judge, tmp_path: Path) -> None:
    judge.plan({"AC-7": ["fail"]})
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import x\n\nraise Error()\n")  # the line exists
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.FAILED
    assert result.issues == (Issue("src/app.py:3", "AppError", "Error()"),)


def test_other_methods_are_left_to_their_runners(judge: Judge, tmp_path: Path) -> None:
    bash = agent_criterion(tmp_path, method=Method.BASH, command="true")
    assert verifier(judge).pytest_acceptance_run(bash, RunContext(tmp_path)) is None
    assert judge.calls() == []


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        ("garbage", "malformed verdict: the output is not one JSON object"),
        ("fail-without-issues", 'malformed verdict: "fail" without any issue'),
        ("crash", "exited with status 3"),
    ],
)
def test_unusable_answer_is_redispatched_once_then_an_error(
    judge: Judge, tmp_path: Path, first: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDECODE", raising=False)  # a person reads it: no /verify to call
    judge.plan({"AC-7": [first]})
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert len(judge.calls("AC-7")) == 2
    assert result.attempts == 2
    assert result.extra["dispatches"] == 2
    assert result.message.startswith("no valid verdict from the agent in 2 dispatches: 1) ")
    assert reason in result.message
    assert (
        "Next: fix the agent setup (see the output below), then run the same pytest"
        in result.message
    )


def test_crash_output_reaches_the_report(judge: Judge, tmp_path: Path) -> None:
    judge.plan({"AC-7": ["crash"]})
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert "Traceback: judge exploded" in result.output


def test_valid_answer_on_the_redispatch_counts_and_says_why(judge: Judge, tmp_path: Path) -> None:
    judge.plan({"AC-7": ["garbage", "fail"]})
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.FAILED
    assert result.attempts == 2
    assert "re-dispatched after: malformed verdict" in result.message
    assert result.extra["dispatch_errors"][0].startswith("malformed verdict")


def test_timeout_kills_the_agent_and_its_children_then_errors(judge: Judge, tmp_path: Path) -> None:
    judge.plan({"AC-7": ["hang"]})
    criterion = agent_criterion(tmp_path, timeout=1.5)
    result = verifier(judge).pytest_acceptance_run(criterion, RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert result.message.count("timed out after 1.5 s and was killed") == 2
    assert "Next: raise `timeout:` of AC-7 (now 1.5 s)" in result.message
    pids = [
        int(pid)
        for line in (judge.directory / "pids.log").read_text().splitlines()
        for pid in line.split()
    ]
    assert len(pids) == 4
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(pid) for pid in pids)


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_command_that_cannot_start_is_an_error_naming_it(tmp_path: Path) -> None:
    settings = verifier(None, backend=CommandBackend([str(tmp_path / "no-such-judge")]))
    result = settings.pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert f"could not start {tmp_path / 'no-such-judge'}" in result.message


def test_without_an_agent_both_hooks_end_in_an_error_saying_how_to_configure(
    tmp_path: Path,
) -> None:
    plugin = verifier(None)
    run = plugin.pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    bash = agent_criterion(
        tmp_path, method=Method.BASH, command="git log", pass_condition="judge: tidy"
    )
    judged = plugin.pytest_acceptance_judge(bash, RunContext(tmp_path), "exit code: 0")
    for result in (run, judged):
        assert result is not None
        assert result.status is Status.ERROR
        assert result.message.startswith("no agent configured to judge")
        assert "`--acceptance-agent-command CMD`" in result.extra["advice"]  # once per run
    assert judged is not None and "the pass condition 'judge: tidy' of AC-7" in judged.message


def test_judge_decides_a_natural_language_condition_from_the_evidence(
    judge: Judge, tmp_path: Path
) -> None:
    judge.plan({"AC-2": ["fail"]})
    bash = agent_criterion(
        tmp_path,
        "AC-2",
        method=Method.BASH,
        command="git log --oneline",
        agent=None,
        pass_condition="judge: multiple commits with criterion references",
    )
    evidence = "command: git log --oneline\nexit code: 0\noutput:\nabc123 wip"
    result = verifier(judge).pytest_acceptance_judge(bash, RunContext(tmp_path), evidence)
    assert result is not None
    assert result.status is Status.FAILED
    prompt = judge.prompt("AC-2")
    assert "pass condition: multiple commits with criterion references" in prompt
    assert "abc123 wip" in prompt


def test_implementation_log_tail_is_in_the_prompt(judge: Judge, tmp_path: Path) -> None:
    log = tmp_path / "implement-log-1.md"
    log.write_text("Tried AppError for AC-7: tests broke\n")
    verifier(judge).pytest_acceptance_run(
        agent_criterion(tmp_path), RunContext(tmp_path, log_path=log)
    )
    assert "Tried AppError for AC-7: tests broke" in judge.prompt("AC-7")


def test_missing_log_at_run_time_is_an_error_not_a_silent_omission(
    judge: Judge, tmp_path: Path
) -> None:
    context = RunContext(tmp_path, log_path=tmp_path / "gone.md")
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), context)
    assert result is not None
    assert result.status is Status.ERROR
    assert "the implementation log" in result.message and "cannot be read" in result.message
    assert judge.calls() == []


def test_project_agent_with_broken_frontmatter_is_an_error_naming_the_file(
    judge: Judge, tmp_path: Path
) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "pattern-checker.md").write_text("---\nname: [unclosed\n---\nCheck patterns.\n")
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert ".claude/agents/pattern-checker.md:" in result.message
    assert "frontmatter is not valid YAML" in result.message


@pytest.mark.parametrize(
    "frontmatter",
    ["model: " + "[" * 100_000 + "]" * 100_000, "a: &a [x]\n" + "b: [*a, *a, *a, *a]\n" * 4000],
    ids=["nested-100000-deep", "alias-bomb"],
)
def test_hostile_agent_frontmatter_is_an_error_naming_the_file_not_a_crash(
    judge: Judge, tmp_path: Path, frontmatter: str
) -> None:
    """The agent under verification can write .claude/agents/*.md: deep nesting or an alias
    bomb there is a bounded error for the criterion, never a RecursionError."""
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "pattern-checker.md").write_text(f"---\n{frontmatter}\n---\nCheck.\n")
    result = verifier(judge).pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    assert result is not None
    assert result.status is Status.ERROR
    assert ".claude/agents/pattern-checker.md:" in result.message
    assert len(result.message) < 5000
    assert judge.calls() == []


def test_project_agent_model_applies_unless_the_criterion_names_one(
    judge: Judge, tmp_path: Path
) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "pattern-checker.md").write_text("---\nmodel: haiku\n---\nCheck patterns.\n")
    plugin = verifier(judge, model="opus")
    by_agent = plugin.pytest_acceptance_run(agent_criterion(tmp_path), RunContext(tmp_path))
    named = agent_criterion(tmp_path, model="sonnet")
    by_criterion = plugin.pytest_acceptance_run(named, RunContext(tmp_path))
    assert by_agent is not None and by_agent.extra["model"] == "haiku"
    assert by_agent.extra["project_agent"] == ".claude/agents/pattern-checker.md"
    assert by_criterion is not None and by_criterion.extra["model"] == "sonnet"
    # a project agent is the agent itself, not a role line in the prompt
    assert "Your role for this check" not in judge.prompt("AC-7")
