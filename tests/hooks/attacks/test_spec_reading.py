"""Attacks through how the spec is read: the gate's run makes something else of the spec than
the honest run (``pytest --acceptance SPEC`` in the project) makes of it.

The gate collects a copy of the spec pinned in its own state, with its own configuration
and without the project's conftest files or plugins. Closed by three mechanisms:

- the copy is read as the spec it stands for (``--acceptance-spec-origin``;
  ``spec.load.parse_spec_as``): every decision taken from where the spec lies (which BDD
  runner runs a scenario, the feature's path, an OpenSpec capability) is the origin's, in
  the gate's run and in /implement's probe alike;
- what the gate ran is what /implement pinned, field by field (``verdict_check.
  unlike_the_pin``): a criterion run with another method, command or pass condition than
  its pinned one refuses, naming the criterion and the field;
- the project's own implementations of pytest-acceptance's deciding hooks (``formats``,
  ``run``, ``judge``, ``verdict``) are found by /implement's probe wherever the honest run
  would load them (conftest files, ``pytest_plugins``, ``-p`` in addopts, installed
  plugins; ``project_hooks``): the gate cannot verify such a project, says so naming each
  one (file:line), and only an escalation ends the flow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hook_transcripts import make_repo, spec_with
from support.attack_kit import ask, assert_refused, commit_all, pin, refused_before_the_attack

from pytest_acceptance.gate import verdict_check
from pytest_acceptance.gate.pinned_collection import Criterion as Pinned
from pytest_acceptance.project_hooks import implementations
from pytest_acceptance.spec.bdd import BEHAVE_PASSED

REPRESENTATIVE = "test_a_behave_scenario_is_run_by_behave_never_judged_by_an_agent"
SPEC = "specs/feature.md"
FEATURE = "features/value.feature"


def honest_exit(repo: Path, spec: str) -> int:
    """`pytest --acceptance SPEC` in the project, as a person or CI runs it (this
    interpreter's folder first on PATH, plugins as the environment has them)."""
    env = dict(os.environ)
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--acceptance", spec, "-q"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done.returncode


# --- the runner of a Gherkin scenario, decided where the spec lies ------------------------

FEATURE_TEXT = """\
Feature: the value

  Scenario: the value is two
    Given the app
    Then its value is two
"""
BEHAVE_STEPS = """\
from behave import given, then

import app


@given("the app")
def step_app(context):
    context.app = app


@then("its value is two")
def step_two(context):
    assert context.app.VALUE == 2
"""
PYTEST_BDD_STEPS = """\
from pytest_bdd import given, scenarios, then

import app

scenarios("../features/value.feature")


@given("the app", target_fixture="the_app")
def the_app():
    return app


@then("its value is two")
def two(the_app):
    assert the_app.VALUE == 2
"""
# A judge of agent criteria that passes whatever it is shown, and notes that it was asked.
JUDGE = """\
import pathlib, sys
sys.stdin.read()
pathlib.Path({marker!r}).write_text("asked\\n")
print('{{"status": "pass", "summary": "the steps are implemented", "issues": []}}')
"""


def gherkin_project(tmp_path: Path, value: int, runner: str = "behave") -> tuple[Path, Path]:
    """A project whose one scenario passes once app.VALUE is 2, run by `runner`, with an
    agent judge configured for agent criteria (a pinned acceptance_* setting): (repo, the
    file the judge writes when asked)."""
    marker = tmp_path / "judge-was-asked"
    judge = tmp_path / "judge.py"
    judge.write_text(JUDGE.format(marker=str(marker)))
    repo = make_repo(tmp_path / "repo")
    (repo / "features").mkdir()
    (repo / FEATURE).write_text(FEATURE_TEXT)
    if runner == "behave":
        (repo / "features" / "steps").mkdir()
        (repo / "features" / "steps" / "steps.py").write_text(BEHAVE_STEPS)
    else:
        (repo / "tests").mkdir()
        (repo / "tests" / "test_value.py").write_text(PYTEST_BDD_STEPS)
    (repo / "app.py").write_text(f"VALUE = {value}\n")
    (repo / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\nacceptance_agent_command = "{sys.executable} {judge}"\n'
    )
    commit_all(repo, f"a {runner} project")
    return repo, marker


@pytest.mark.usefixtures("installed_plugins")
def test_a_behave_scenario_is_run_by_behave_never_judged_by_an_agent(tmp_path: Path) -> None:
    """app.py says VALUE = 1 throughout: behave fails the scenario in every honest run.
    The gate's copy lies under no `features/steps/`: read as itself, the scenario became an
    agent criterion that a lenient judge passed. The agent only calls /verify and /done."""
    repo, marker = gherkin_project(tmp_path, value=1)
    assert honest_exit(repo, FEATURE) != 0, "behave fails the scenario"
    builder = pin(repo, spec=FEATURE)
    builder.verify(repo / FEATURE)
    assert_refused(ask(builder, repo, tmp_path))
    assert not marker.exists(), "the gate asked a judge about a scenario behave runs"


@pytest.mark.parametrize("runner", ["behave", "pytest-bdd"])
@pytest.mark.usefixtures("installed_plugins")
def test_honest_gherkin_project_is_let_through(tmp_path: Path, runner: str) -> None:
    """Control: VALUE = 2 passes honestly (the project's runner runs the scenario) and the
    gate lets /done through, its runner having run it too (a pytest-bdd scenario collected
    from the copy used to be bound to no test: a false block)."""
    repo, marker = gherkin_project(tmp_path, value=2, runner=runner)
    assert honest_exit(repo, FEATURE) == 0
    builder = pin(repo, spec=FEATURE)
    builder.verify(repo / FEATURE)
    done = ask(builder, repo, tmp_path)
    assert not done.denied, done.stdout
    assert not marker.exists(), "no judge: the project's runner decided"


@pytest.mark.usefixtures("installed_plugins")
def test_a_pytest_bdd_scenario_failing_honestly_is_refused(tmp_path: Path) -> None:
    """Second variant, written after the fix: the same scenario under pytest-bdd, which
    binds it by the feature's path, with VALUE = 1. Refused with no code of its own."""
    repo, marker = gherkin_project(tmp_path, value=1, runner="pytest-bdd")
    assert honest_exit(repo, FEATURE) != 0, "pytest-bdd fails the scenario"
    builder = pin(repo, spec=FEATURE)
    builder.verify(repo / FEATURE)
    assert_refused(ask(builder, repo, tmp_path))
    assert not marker.exists()


# --- the project's own hooks, which the gate's run does not load ------------------------------

POLICY = """\
import importlib


def pytest_acceptance_verdict(config, verdict, facts):
    import app

    importlib.reload(app)
    if app.VALUE != 2:
        return ["release policy: app.VALUE must be 2"]
    return None
"""


def policy_project(tmp_path: Path, files: dict[str, str]) -> Path:
    """AC-1 only imports app; `files` (committed before /implement) hold the project's
    release policy, a verdict hook that forbids a pass while app.VALUE is not 2."""
    repo = make_repo(tmp_path / "repo", spec_with("python3 -c 'import app'"))
    for name, text in files.items():
        (repo / name).write_text(text)
    commit_all(repo, "the project's release policy")
    return repo


def refused_naming(repo: Path, tmp_path: Path, where: str) -> None:
    """The gate refuses /done, naming the hook's file and line, and says what to do."""
    assert honest_exit(repo, SPEC) != 0, "the project's pytest refuses the pass"
    builder = pin(repo)
    (repo / "app.py").write_text("VALUE = 1  # the agent's work: nothing\n")
    builder.verify(repo / SPEC)
    done = ask(builder, repo, tmp_path)
    assert_refused(done)
    assert f"{repo / where}:" in done.deny_reason, done.deny_reason
    assert "pytest_acceptance_verdict" in done.deny_reason
    assert "escalate" in done.deny_reason


def test_the_projects_verdict_hook_is_never_left_out_silently(tmp_path: Path) -> None:
    """The project's conftest.py forbids a pass while app.VALUE is not 2; the agent leaves
    VALUE = 1. The gate's run (--noconftest) would pass where every honest run fails."""
    repo = policy_project(tmp_path, {"conftest.py": POLICY})
    refused_naming(repo, tmp_path, "conftest.py")


def test_a_verdict_hook_in_a_pytest_plugins_module_is_named(tmp_path: Path) -> None:
    """Second variant, written after the fix: the policy lives in a module the conftest
    loads through `pytest_plugins`, its conftest.py naming no hook. Refused, naming it."""
    files = {"conftest.py": 'pytest_plugins = ["release_policy"]\n', "release_policy.py": POLICY}
    repo = policy_project(tmp_path, files)
    refused_naming(repo, tmp_path, "release_policy.py")


REPORTER = """\
import pytest


def pytest_acceptance_result(config, criterion, result):
    print("reported", criterion.id, result.status.value)


@pytest.fixture
def value():
    return 2
"""


def test_honest_project_with_its_own_reporter_hook_is_let_through(tmp_path: Path) -> None:
    """Control: a conftest.py with a fixture and a `pytest_acceptance_result` reporter
    (whose return no verdict reads) is no hook that decides: the honest work (VALUE = 2)
    ends verified."""
    repo = make_repo(tmp_path / "repo", spec_with("python3 -c 'import app; assert app.VALUE == 2'"))
    (repo / "conftest.py").write_text(REPORTER)
    commit_all(repo, "a reporter")
    builder = pin(repo)
    refused_before_the_attack(builder, repo, tmp_path)
    (repo / "notes.txt").unlink()
    (repo / "app.py").write_text("VALUE = 2\n")
    commit_all(repo, "the work")
    assert honest_exit(repo, SPEC) == 0
    builder.verify(repo / SPEC)
    done = ask(builder, repo, tmp_path)
    assert not done.denied, done.stdout


def test_every_place_pytest_loads_a_deciding_hook_from_is_named(tmp_path: Path) -> None:
    """The probe's finding, in-process: conftest files from the rootdir down to the spec's
    folder (not beside it), `pytest_plugins` followed, `-p` of addopts, a hookimpl under
    another name (`specname=`); a reporter hook alone is none."""
    (tmp_path / "specs" / "deep").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = "chained"\n')
    (tmp_path / "chained.py").write_text("def pytest_acceptance_formats():\n    return []\n")
    (tmp_path / "specs" / "conftest.py").write_text(REPORTER)
    (tmp_path / "specs" / "deep" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(specname='pytest_acceptance_run')\n"
        "def runner(criterion, context):\n    return None\n"
    )
    (tmp_path / "other" / "conftest.py").write_text(POLICY)  # not on the spec's way
    (tmp_path / "by_addopts.py").write_text("pytest_acceptance_judge = print\n")
    spec = tmp_path / "specs" / "deep" / "spec.md"
    spec.write_text("# Spec\n")
    found = implementations(spec, tmp_path, "-q -p by_addopts -p no:cacheprovider")
    assert sorted(found) == sorted(
        [
            f"{tmp_path / 'chained.py'}:1: pytest_acceptance_formats",
            f"{tmp_path / 'specs' / 'deep' / 'conftest.py'}:4: pytest_acceptance_run",
            f"{tmp_path / 'by_addopts.py'}:1: pytest_acceptance_judge",
        ]
    )


def test_plugins_named_however_they_are_given_are_followed_or_named(tmp_path: Path) -> None:
    """A chain of `pytest_plugins` ten modules deep, one given with an annotation and one
    with +=, is followed to the hook at its end; a `pytest_plugins` only running the file
    could read (a call) is named as such, never skipped."""
    (tmp_path / "conftest.py").write_text('pytest_plugins: list[str] = ["link0"]\n')
    for number in range(10):
        following = f'pytest_plugins = []\npytest_plugins += ["link{number + 1}"]\n'
        (tmp_path / f"link{number}.py").write_text(following)
    (tmp_path / "link10.py").write_text("def pytest_acceptance_verdict():\n    return []\n")
    spec = tmp_path / "spec.md"
    spec.write_text("# Spec\n")
    assert implementations(spec, tmp_path) == [
        f"{tmp_path / 'link10.py'}:1: pytest_acceptance_verdict"
    ]
    (tmp_path / "conftest.py").write_text("import os\n\npytest_plugins = os.environ['P'].split()\n")
    assert implementations(spec, tmp_path) == [
        f"{tmp_path / 'conftest.py'}:3: pytest_plugins only running it can read"
    ]


# --- what the gate ran, against what it pinned -------------------------------------------------

PINNED = Pinned(
    id="AC-1",
    title="the value is two",
    method="bash",
    line=3,
    command="python -m behave --no-color --format progress features/value.feature:3",
    pass_condition=BEHAVE_PASSED,
    description="",
    agent=None,
    checks=(),
    model=None,
    timeout=None,
    retries=None,
    priority="MUST",
    cwd=None,
)


def verdict_of(**criterion: object) -> bytes:
    """A verdict of the shape pytest-acceptance writes, its one criterion passed."""
    entry = {"id": "AC-1", "title": "t", "status": "passed", "method": "bash"}
    entry |= {"command": PINNED.command, "pass_condition": PINNED.pass_condition}
    verdict = {
        "schema": "pytest-acceptance/verdict", "version": 1, "status": "pass", "exit_code": 0,
        "started_at": "2026-01-01T00:00:00+00:00", "finished_at": "2026-01-01T00:00:01+00:00",
        "started_at_epoch": 1.0, "finished_at_epoch": 2.0, "rootdir": "/repo",
        "fingerprint": "f", "fingerprint_after": "f", "complete": True,
        "specs": [{"path": "/s.md", "criteria_total": 1, "selected": 1}],
        "counts": {"passed": 1}, "criteria": [{**entry, **criterion}], "problems": [],
    }  # fmt: skip
    return json.dumps(verdict).encode()


@pytest.mark.parametrize(
    "field, ran",
    [("method", "subagent"), ("command", "python -m behave other.feature:3"),
     ("pass_condition", None)],
)  # fmt: skip
def test_a_criterion_run_otherwise_than_pinned_is_refused_naming_it(
    field: str, ran: object
) -> None:
    """Whatever made the run read the spec otherwise, a criterion it ran with another
    method, command or pass condition than /implement pinned is no verdict on the pinned
    criterion: refused, naming the criterion and the field."""
    verdict, why = verdict_check.parse(verdict_of(**{field: ran}), ["AC-1"], [PINNED])
    assert verdict is None and why is not None
    assert "criterion AC-1" in why and field in why, why
    unsaid, why = verdict_check.parse(verdict_of(), ["AC-1"], [PINNED])
    assert unsaid is not None and why is None, "the same criterion, run as pinned, is a verdict"
    missing = json.loads(verdict_of())
    del missing["criteria"][0][field]
    verdict, why = verdict_check.parse(json.dumps(missing).encode(), ["AC-1"], [PINNED])
    assert verdict is None and why is not None and field in why, "a verdict that does not say"
