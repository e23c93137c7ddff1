"""What agent checks cost, the budget that bounds them, several judges per check, what a
command judge is told, and how many processes a run starts: `pytest --acceptance` in a
subprocess with a scripted command judge that reports its cost and logs its environment."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from support.judges import max_overlap
from support.specs import bash, criterion, spec

from pytest_acceptance.agent.budget import Budget, BudgetExhausted

# A judge whose plan (plan.json beside it) gives, per criterion id, one answer per call
# (the last repeats): {"status": "pass"|"fail", "usage": {...}, "sleep": s, "meet": n}; "meet"
# waits until that many calls of the criterion started. Its calls are
# numbered under a lock, so concurrent calls of one criterion take the plan's steps in turn.
JUDGE = textwrap.dedent(
    """
    import fcntl, json, os, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    sys.stdin.read()
    ident = os.environ["PYTEST_ACCEPTANCE_CRITERION"]
    with open(os.path.join(here, "calls.log"), "a+") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.seek(0)
        number = sum(1 for line in log if json.loads(line)["id"] == ident) + 1
        env = {k: v for k, v in os.environ.items() if k.startswith("PYTEST_ACCEPTANCE_")}
        log.write(json.dumps({"id": ident, "n": number, "start": time.time(), "env": env}) + "\\n")
    steps = json.load(open(os.path.join(here, "plan.json"))).get(ident, [{}])
    step = steps[min(number, len(steps)) - 1]
    deadline = time.time() + 60
    while time.time() < deadline and step.get("meet", 0) > sum(
        1 for line in open(os.path.join(here, "calls.log")) if json.loads(line)["id"] == ident
    ):
        time.sleep(0.05)
    time.sleep(step.get("sleep", 0))
    status = step.get("status", "pass")
    answer = {"status": status, "summary": f"{ident} call {number}", "issues": []}
    if status == "fail":
        where = f"src/{ident}.py:{number}"
        answer["issues"] = [{"location": where, "expected": "x", "actual": "y"}]
    if "usage" in step:
        answer["usage"] = step["usage"]
    print(json.dumps(answer))
    with open(os.path.join(here, "ends.log"), "a") as log:
        log.write(json.dumps({"id": ident, "end": time.time()}) + "\\n")
    """
)


class CostJudge:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        (directory / "judge.py").write_text(JUDGE)
        self.plan({})

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.directory / 'judge.py'}"

    def plan(self, steps: dict[str, list[dict[str, Any]]]) -> None:
        (self.directory / "plan.json").write_text(json.dumps(steps))

    def calls(self, ident: str | None = None) -> list[dict[str, Any]]:
        log = self.directory / "calls.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [c for c in map(json.loads, lines) if ident is None or c["id"] == ident]

    def ended(self, ident: str) -> int:
        log = self.directory / "ends.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return sum(json.loads(line)["id"] == ident for line in lines)

    def intervals(self) -> list[tuple[float, float]]:
        ends: dict[str, list[float]] = {}
        for line in (self.directory / "ends.log").read_text().splitlines():
            entry = json.loads(line)
            ends.setdefault(entry["id"], []).append(entry["end"])
        starts = sorted(self.calls(), key=lambda c: c["start"])
        return [(c["start"], ends[c["id"]].pop(0)) for c in starts]


@pytest.fixture
def judge(tmp_path_factory: pytest.TempPathFactory) -> CostJudge:
    return CostJudge(tmp_path_factory.mktemp("judge"))


def agent(ident: str, title: str = "", **more: object) -> str:
    return criterion(ident, title, method="subagent", checks=["it holds"], **more)


def project(pytester: pytest.Pytester, judge: CostJudge, *blocks: str, ini: str = "") -> Path:
    pytester.makeini(f"[pytest]\nacceptance_agent_command = {judge.command}\n{ini}")
    return pytester.makefile(".md", spec=spec(*blocks))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--acceptance", "spec.md", "-p", "no:cacheprovider", *args)


def verdict(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


def by_id(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in verdict(pytester)["criteria"]}


USAGE = {"cost_usd": 0.25, "input_tokens": 1000, "output_tokens": 50, "turns": 3}


# --- cost ------------------------------------------------------------------------------------


def test_cost_reaches_verdict_json_report_html_junit_and_ends_the_terminal_summary(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    judge.plan({"AC-1": [{"usage": USAGE}], "AC-2": [{"status": "fail", "usage": USAGE}]})
    project(pytester, judge, agent("AC-1"), agent("AC-2"))
    result = run(
        pytester,
        "-n", "0", "--junitxml=junit.xml", "--acceptance-html=run.html",
        "-o", "junit_family=xunit1",  # per-testcase properties: xunit1 only
    )  # fmt: skip
    assert result.ret == 1
    usage = by_id(pytester)["AC-1"]["usage"]
    assert {k: usage[k] for k in (*USAGE, "calls", "cached")} == {
        **USAGE,
        "calls": 1,
        "cached": False,
    }
    assert usage["duration"] > 0
    totals = verdict(pytester)["agent"]
    assert (totals["calls"], totals["cost_usd"], totals["input_tokens"]) == (2, 0.5, 2000)
    summary = result.stdout.lines[-2]  # the last line before pytest's own
    assert summary.startswith(
        "agents: 2 agent calls for 2 criteria (0 cached), $0.5000, 2,000 input and 100 "
        "output tokens, 6 turns, "
    ), result.stdout.str()
    [report] = (pytester.path / ".acceptance" / "specs").glob("*/report.md")
    assert "- Agents: 2 agent calls for 2 criteria (0 cached), $0.5000" in report.read_text()
    assert "- Agent: $0.2500, 1,000 input and 50 output tokens, 3 turns, 1 call," in (
        report.read_text()
    )
    assert "$0.2500, 1,000 input and 50 output tokens" in (pytester.path / "run.html").read_text()
    properties = {
        p.get("name"): p.get("value")
        for p in ET.parse(pytester.path / "junit.xml").iter("property")
    }
    assert properties["agent_cost_usd"] == "0.25"
    assert properties["agent_output_tokens"] == "50"
    assert properties["acceptance_agent"].startswith(
        "2 agent calls for 2 criteria (0 cached), $0.5000"
    )


def test_a_usage_the_judge_reports_off_contract_is_an_unusable_answer(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    judge.plan({"AC-1": [{"usage": {"cost_usd": -1}}]})
    project(pytester, judge, agent("AC-1"))
    assert run(pytester, "-n", "0").ret == 11
    message = by_id(pytester)["AC-1"]["message"]
    assert message.count('malformed verdict: "usage"."cost_usd" is -1') == 2


# --- the budget ------------------------------------------------------------------------------


def test_once_the_budget_is_spent_the_agent_criteria_left_are_errors_never_passes(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    spend = [{"usage": {"cost_usd": 0.6}}]
    judge.plan({"AC-1": spend, "AC-2": spend, "AC-3": spend})
    project(pytester, judge, agent("AC-1"), agent("AC-2"), agent("AC-3"))
    result = run(pytester, "--acceptance-max-cost", "1", "--acceptance-wave", "1")
    assert result.ret == 11
    criteria = by_id(pytester)
    assert [criteria[i]["status"] for i in ("AC-1", "AC-2", "AC-3")] == [
        "passed",
        "passed",
        "error",
    ]
    assert criteria["AC-3"]["message"].startswith(
        "budget exhausted: $1.2000 of the $1 budget (--acceptance-max-cost) spent; AC-3 was "
        "not judged. Next: raise --acceptance-max-cost"
    )
    assert judge.calls("AC-3") == []  # never asked
    shares = [c["env"]["PYTEST_ACCEPTANCE_MAX_COST_USD"] for c in judge.calls()]
    assert shares == ["1.000000", "0.400000"]  # what was left when each call started
    assert result.stdout.lines[-2].endswith("(budget $1)")


def test_the_budget_is_one_for_the_whole_run_across_xdist_workers(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    spend = [{"usage": {"cost_usd": 0.6}}]
    judge.plan({f"AC-{n}": spend for n in range(1, 4)})
    project(pytester, judge, agent("AC-1"), agent("AC-2"), agent("AC-3"))
    result = run(pytester, "-n", "3", "--acceptance-max-cost", "1", "--acceptance-wave", "1")
    assert result.ret == 11, result.stdout.str()
    statuses = sorted(c["status"] for c in verdict(pytester)["criteria"])
    assert statuses == ["error", "passed", "passed"]  # whichever worker ran last was refused
    shares = [c["env"]["PYTEST_ACCEPTANCE_MAX_COST_USD"] for c in judge.calls()]
    assert shares == ["1.000000", "0.400000"]


def test_the_checks_of_a_wave_share_what_is_left_of_the_budget_evenly(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    slow = [{"sleep": 1, "usage": {"cost_usd": 0.01}}]
    judge.plan({"AC-1": slow, "AC-2": slow})
    project(pytester, judge, agent("AC-1"), agent("AC-2"), ini="acceptance_max_cost = 1\n")
    assert run(pytester, "--acceptance-wave", "2").ret == 0
    shares = sorted(c["env"]["PYTEST_ACCEPTANCE_MAX_COST_USD"] for c in judge.calls())
    assert shares == ["0.500000", "0.500000"]


def test_budget_shares_never_add_up_past_the_limit(tmp_path: Path) -> None:
    budget = Budget(tmp_path / "ledger.json", 1.0, wave=4)
    shares = [budget.reserve() for _ in range(4)]
    assert shares == [0.25, 0.25, 0.25, 0.25]
    budget.settle(shares[0], 0.05)  # spent less than its share: the rest is free again
    assert budget.reserve() == pytest.approx(0.2)
    for share in shares[1:]:
        budget.settle(share, 0.4)
    budget.settle(0.2, 0.0)
    assert budget.spent() == pytest.approx(1.25)
    with pytest.raises(BudgetExhausted, match=r"\$1.2500 of the \$1 budget"):
        budget.reserve()


@pytest.mark.parametrize(
    ("args", "ini", "error"),
    [
        (["--acceptance-max-cost", "0"], "", "--acceptance-max-cost = 0.0: give an amount"),
        ([], "acceptance_max_cost = lots\n", "ini acceptance_max_cost = 'lots': give an amount"),
        (["--acceptance-votes", "0"], "", "--acceptance-votes = 0: give a whole number"),
        (["--acceptance-claude", "nope"], "", "--acceptance-claude: nope (given) is not an"),
    ],
)
def test_bad_agent_settings_are_usage_errors(
    pytester: pytest.Pytester, judge: CostJudge, args: list[str], ini: str, error: str
) -> None:
    project(pytester, judge, agent("AC-1"), ini=ini)
    if "--acceptance-claude" in args:
        pytester.makeini("[pytest]\n")  # the CLI backend, as by default
    result = run(pytester, *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"*{error}*"])


# --- what a command judge is told ------------------------------------------------------------


def test_a_command_judge_is_told_what_it_judges_in_its_environment(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    project(
        pytester,
        judge,
        agent("AC-1", "Error pattern", model="claude-haiku-4-5", priority="SHOULD"),
        bash("AC-2", "echo hi", "Greeting", pass_condition="judge: a friendly greeting"),
    )
    assert run(pytester, "-n", "0").ret == 0
    first, second = (judge.calls(i)[0]["env"] for i in ("AC-1", "AC-2"))
    spec_path = str((pytester.path / "spec.md").resolve())
    assert first == {
        "PYTEST_ACCEPTANCE_CRITERION": "AC-1",
        "PYTEST_ACCEPTANCE_TITLE": "Error pattern",
        "PYTEST_ACCEPTANCE_SPEC": spec_path,
        "PYTEST_ACCEPTANCE_SPEC_LINE": "7",
        "PYTEST_ACCEPTANCE_PRIORITY": "SHOULD",
        "PYTEST_ACCEPTANCE_MODEL": "claude-haiku-4-5",
        "PYTEST_ACCEPTANCE_AGENT": "",
        "PYTEST_ACCEPTANCE_JUDGING": "criterion",
    }
    assert second["PYTEST_ACCEPTANCE_JUDGING"] == "condition"
    assert second["PYTEST_ACCEPTANCE_MODEL"] == ""


# --- votes -----------------------------------------------------------------------------------


def test_judges_that_disagree_make_the_majority_pass_unstable_and_visible(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    judge.plan({"AC-1": [{"meet": 3}, {"status": "fail", "meet": 3}, {"meet": 3}]})
    project(pytester, judge, agent("AC-1", "Errors"), agent("AC-2", "Readme"))
    result = run(pytester, "-n", "0", "--acceptance-votes", "3", "-v")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*AC-1 Errors*UNSTABLE*", "- AC-1: Errors ✓ (unstable: 2 of 3*"])
    assert "1 unstable" in result.stdout.lines[-1]
    ac1 = by_id(pytester)["AC-1"]
    assert (ac1["status"], ac1["unstable"]) == ("passed", True)
    assert ac1["votes"]["passed"] == 2 and ac1["votes"]["failed"] == 1
    assert [a["status"] for a in ac1["votes"]["answers"]].count("fail") == 1
    assert by_id(pytester)["AC-2"]["unstable"] is False
    assert max_overlap(judge.intervals()) >= 3  # the judges of a check met: they ran at once


def test_a_majority_of_failing_judges_fails_with_their_issues(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    judge.plan({"AC-1": [{"status": "fail"}, {"status": "fail"}, {}]})
    project(pytester, judge, agent("AC-1"), ini="acceptance_votes = 3\n")
    (pytester.path / "src").mkdir()
    (pytester.path / "src" / "AC-1.py").write_text("one\ntwo\n")  # the judges' lines exist
    assert run(pytester, "-n", "0").ret == 1
    ac1 = by_id(pytester)["AC-1"]
    assert (ac1["status"], ac1["unstable"]) == ("failed", True)
    assert sorted(i["location"] for i in ac1["issues"]) == ["src/AC-1.py:1", "src/AC-1.py:2"]
    assert "1 of 3 judges passed, 2 failed; unstable" in ac1["message"]


def test_a_criterions_votes_key_wins_over_the_ini(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    project(pytester, judge, agent("AC-1", votes=3), agent("AC-2"), ini="acceptance_votes = 1\n")
    assert run(pytester, "-n", "0").ret == 0
    assert (len(judge.calls("AC-1")), len(judge.calls("AC-2"))) == (3, 1)
    assert by_id(pytester)["AC-1"]["votes"]["passed"] == 3


def test_a_votes_key_below_one_is_a_spec_error_naming_its_line(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    project(pytester, judge, agent("AC-1", votes=0))
    result = run(pytester)
    assert result.ret == 2
    result.stdout.fnmatch_lines(['*spec.md:*"votes" must be a whole number of judges >= 1*'])


# --- processes -------------------------------------------------------------------------------


def test_a_stopped_run_never_starts_the_checks_left_and_stops_the_running_one(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    judge.plan({"AC-1": [{"status": "fail"}], "AC-2": [{"sleep": 300}]})
    project(pytester, judge, agent("AC-1"), agent("AC-2"), agent("AC-3"))
    result = run(pytester, "-x", "--acceptance-wave", "1")
    assert result.ret == 1
    assert judge.ended("AC-2") == 0  # killed, not left to finish
    assert judge.calls("AC-3") == []


def test_one_selected_criterion_starts_no_worker(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    project(pytester, judge, agent("AC-1"), bash("AC-2", "true"), bash("AC-3", "true"))
    result = run(pytester, "-k", "AC-1")
    assert result.ret == 0, result.stdout.str()
    assert "created:" not in result.stdout.str()


def test_bash_and_agent_criteria_start_as_many_workers_as_can_be_busy_and_warn_once(
    pytester: pytest.Pytester, judge: CostJudge
) -> None:
    cpus = len(os.sched_getaffinity(0))
    project(
        pytester,
        judge,
        agent("AC-1"),
        *(bash(f"AC-{n}", "true") for n in range(2, 5)),
        ini="acceptance_not_a_key = 1\n",
    )
    result = run(pytester, "--acceptance-wave", "3")
    assert result.ret == 0, result.stdout.str()
    expected = min(3, 4, cpus)
    if expected > 1:
        result.stdout.fnmatch_lines([f"created: {expected}/{expected} workers"])
    else:
        assert "created:" not in result.stdout.str()
    assert result.stdout.str().count("Unknown config option: acceptance_not_a_key") == 1


@pytest.mark.parametrize(
    "selection", [("--deselect", "spec.md::AC-2"), ("-m", "not bash"), ("spec.md::AC-1",)]
)
def test_deselected_and_manual_criteria_start_no_worker(
    pytester: pytest.Pytester, judge: CostJudge, selection: tuple[str, ...]
) -> None:
    """Without the selection, one agent and one bash criterion would take two workers."""
    project(
        pytester,
        judge,
        agent("AC-1"),
        bash("AC-2", "true"),
        criterion("AC-3", method="manual"),
    )
    result = run(pytester, *selection)
    assert result.ret in (0, 10), result.stdout.str()
    assert "created:" not in result.stdout.str()
