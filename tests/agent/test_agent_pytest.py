"""Agent criteria end to end: `pytest --acceptance spec.md` in a subprocess, judged by the
scripted command judge (see test_agent_command.Judge): verdict output, exit codes, the
cache across runs, and waves of xdist workers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.claude_cli import shadow_sdk
from support.judges import Judge, max_overlap
from support.specs import bash, criterion, spec


@pytest.fixture
def judge(tmp_path_factory: pytest.TempPathFactory) -> Judge:
    return Judge(tmp_path_factory.mktemp("judge"))


def agent(ident: str, title: str = "", **more: object) -> str:
    return criterion(
        ident, title, method="subagent", agent="pattern-checker", checks=["no raw Error()"], **more
    )


def project(pytester: pytest.Pytester, judge: Judge | None, *blocks: str) -> Path:
    ini = "[pytest]\n"
    if judge is not None:
        ini += f"acceptance_agent_command = {judge.command}\n"
    pytester.makeini(ini)
    # The judge's fail points at src/app.py:3: a line of the project, shown as a place.
    (pytester.path / "src").mkdir(exist_ok=True)
    (pytester.path / "src" / "app.py").write_text("import x\n\nraise Error()\n")
    return pytester.makefile(".md", spec=spec(*blocks))


def verdict(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def test_agent_failure_reaches_the_verification_results(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    judge.plan({"AC-2": ["fail"]})
    path = project(pytester, judge, agent("AC-1", "Readme"), agent("AC-2", "Error pattern"))
    result = pytester.runpytest_subprocess("--acceptance", path, "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "## Verification Results",
            "### Failed (1)",
            "- AC-2: Error pattern",
            "  Method: subagent (pattern-checker)",
            "  Location: src/app.py:3",
            "  Expected: AppError",
            "  Actual: Error()",
            "*",
            "### Passed (1)",
            "- AC-1: Readme ✓",
        ]
    )
    failed = next(c for c in verdict(pytester)["criteria"] if c["id"] == "AC-2")
    assert failed["status"] == "failed"
    assert failed["issues"] == [
        {"location": "src/app.py:3", "expected": "AppError", "actual": "Error()"}
    ]


def test_natural_language_condition_is_judged_by_the_agent(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    judge.plan({"AC-7": ["fail"]})
    condition = "judge: multiple commits with criterion references"
    path = project(pytester, judge, bash("AC-7", "echo 'abc123 wip'", pass_condition=condition))
    result = pytester.runpytest_subprocess("--acceptance", path, "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["- AC-7: *", "  Location: src/app.py:3"])
    assert "abc123 wip" in judge.prompt("AC-7")


def test_without_an_agent_the_verdict_is_an_error_never_a_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = pytester.mkdir("no-tools-here")
    monkeypatch.setenv("PATH", str(empty))  # no `claude` anywhere
    # ...and no bundled CLI: as after `pip install pytest-acceptance` without the extra
    monkeypatch.setenv("PYTHONPATH", str(shadow_sdk(pytester.mkdir("shadow"))))
    path = project(pytester, None, agent("AC-1", "Readme"))
    result = pytester.runpytest_subprocess("--acceptance", path, "-n", "0")
    assert result.ret == 11
    result.stdout.fnmatch_lines(["*no agent configured to judge AC-1*"])
    out = result.stdout.str()
    assert "the installed claude-agent-sdk) is missing or not executable" in out
    assert "`claude` is not on PATH" in out
    assert "pip install 'pytest-acceptance[claude]'" in out
    assert verdict(pytester)["status"] == "error"


def test_agent_none_switches_a_configured_agent_off(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    path = project(pytester, judge, agent("AC-1"))
    result = pytester.runpytest_subprocess(
        "--acceptance", path, "-n", "0", "--acceptance-agent", "none"
    )
    assert result.ret == 11
    result.stdout.fnmatch_lines(["*the agent is switched off (--acceptance-agent none)*"])
    assert judge.calls() == []


def test_agent_none_from_the_ini_is_named_as_the_ini_key(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    """The reason says where `none` came from, so the user knows what to change."""
    path = project(pytester, judge, agent("AC-1"))
    result = pytester.runpytest_subprocess(
        "--acceptance", path, "-n", "0", "-o", "acceptance_agent=none"
    )
    assert result.ret == 11
    result.stdout.fnmatch_lines(["*the agent is switched off (ini acceptance_agent = none)*"])
    assert judge.calls() == []


def test_command_choice_without_a_command_is_a_usage_error(pytester: pytest.Pytester) -> None:
    path = project(pytester, None, agent("AC-1"))
    result = pytester.runpytest_subprocess("--acceptance", path, "--acceptance-agent", "command")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*acceptance_agent = command needs the command*"])


def test_missing_implementation_log_is_a_usage_error(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    path = project(pytester, judge, agent("AC-1"))
    result = pytester.runpytest_subprocess("--acceptance", path, "--acceptance-log", "nope.md")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--acceptance-log nope.md: no such file*"])


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_cache_reuses_a_pass_on_an_unchanged_tree_and_asks_again_after_a_change(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    judge.plan({"AC-2": ["fail"]})
    path = project(pytester, judge, agent("AC-1", "Readme"), agent("AC-2", "Error pattern"))
    pytester.makefile(".py", app="raise Error()\n")
    # pytester keeps each run's stdout, stderr and temp dirs in the project: not its files.
    (pytester.path / ".gitignore").write_text("stdout\nstderr\nrunpytest-*\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "start")
    args = ("--acceptance", path, "-n", "0", "--acceptance-cache", "-p", "no:cacheprovider")

    assert pytester.runpytest_subprocess(*args).ret == 1
    assert (len(judge.calls("AC-1")), len(judge.calls("AC-2"))) == (1, 1)

    second = pytester.runpytest_subprocess(*args)
    assert second.ret == 1
    assert len(judge.calls("AC-1")) == 1  # zero agent calls for the unchanged pass
    assert len(judge.calls("AC-2")) == 2  # a fail is never cached
    reused = next(c for c in verdict(pytester)["criteria"] if c["id"] == "AC-1")
    assert reused["status"] == "passed"
    assert "cached pass" in reused["message"]

    (pytester.path / "app.py").write_text("raise AppError()\n")  # any change to the tree
    pytester.runpytest_subprocess(*args)
    assert len(judge.calls("AC-1")) == 2


def test_cache_is_off_by_default(pytester: pytest.Pytester, judge: Judge) -> None:
    path = project(pytester, judge, agent("AC-1"))
    for _ in range(2):
        assert pytester.runpytest_subprocess("--acceptance", path, "-n", "0").ret == 0
    assert len(judge.calls("AC-1")) == 2
    assert not (pytester.path / ".acceptance" / "cache").exists()


def test_without_n_agent_checks_run_a_wave_at_a_time_in_one_process_without_workers(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    judge.plan({"*": ["meet:5"]})
    path = project(pytester, judge, *(agent(f"AC-{n}") for n in range(1, 8)))
    result = pytester.runpytest_subprocess("--acceptance", path, "--acceptance-wave", "5")
    assert result.ret == 0, result.stdout.str()
    assert "created:" not in result.stdout.str()  # no xdist worker started
    assert max_overlap(judge.intervals()) == 5  # a wave: more at once never, fewer never


def test_wave_size_bounds_concurrent_agents_even_with_more_workers(
    pytester: pytest.Pytester, judge: Judge
) -> None:
    judge.plan({"*": ["meet:2"]})
    path = project(pytester, judge, *(agent(f"AC-{n}") for n in range(1, 5)))
    result = pytester.runpytest_subprocess(
        "--acceptance", path, "-n", "4", "--acceptance-wave", "2"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["created: 4/4 workers"])
    assert max_overlap(judge.intervals()) == 2


@pytest.mark.parametrize("args", [("-n", "0"), ("-p", "no:xdist"), ("--collect-only",)])
def test_explicit_choices_keep_agent_checks_in_one_process(
    pytester: pytest.Pytester, judge: Judge, args: tuple[str, ...]
) -> None:
    path = project(pytester, judge, agent("AC-1"), agent("AC-2"))
    result = pytester.runpytest_subprocess("--acceptance", path, *args)
    assert result.ret == 0
    assert "workers" not in result.stdout.str()


def test_bad_wave_size_is_a_usage_error(pytester: pytest.Pytester, judge: Judge) -> None:
    path = project(pytester, judge, agent("AC-1"))
    result = pytester.runpytest_subprocess("--acceptance", path, "--acceptance-wave", "0")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--acceptance-wave = 0: give a whole number of at least 1*"])
