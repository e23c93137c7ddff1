"""Gherkin features through pytest: a directory collects .feature files, scenarios and
outline rows are criteria with their tags as markers, and the project's own runner runs
them — the real pytest-bdd and the real behave (both in the test extra) — or, without
one, an agent judges them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.judges import Judge

# The criteria's own pytest runs of the scenarios load pytest-bdd, as a project using it does.
pytestmark = pytest.mark.started_runs_load("pytest-bdd")

FEATURE = Path(__file__).parent / "format_specs" / "gherkin" / "features" / "cart.feature"

PYTEST_BDD_STEPS = """\
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("../features/cart.feature")


@given("an empty cart", target_fixture="cart")
def empty():
    return []


@when(parsers.parse('the customer adds "{name}"'))
def add(cart, name):
    cart.append(name)


@when(parsers.parse("the customer adds {count:d} items"))
def add_many(cart, count):
    cart.extend(["x"] * count)


@then(parsers.parse("the cart holds {count:d} item"))
@then(parsers.parse("the cart holds {count:d} items"))
def holds(cart, count):
    assert len(cart) == count
"""

BEHAVE_STEPS = """\
from behave import given, then, when


@given("an empty cart")
def empty(context):
    context.cart = []


@when('the customer adds "{name}"')
def add(context, name):
    context.cart.append(name)


@when("the customer adds {count:d} items")
def add_many(context, count):
    context.cart.extend(["x"] * count)


@then("the cart holds {count:d} item")
@then("the cart holds {count:d} items")
def holds(context, count):
    assert len(context.cart) == count
"""


def pytest_bdd_project(root: Path) -> None:
    (root / "features").mkdir()
    shutil.copy(FEATURE, root / "features" / "cart.feature")
    (root / "tests").mkdir()
    (root / "tests" / "test_cart.py").write_text(PYTEST_BDD_STEPS)
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    shop\n    smoke\n    bulk\n")


def behave_project(root: Path) -> None:
    (root / "features" / "steps").mkdir(parents=True)
    shutil.copy(FEATURE, root / "features" / "cart.feature")
    (root / "features" / "steps" / "cart.py").write_text(BEHAVE_STEPS)
    (root / "pytest.ini").write_text("[pytest]\n")


def statuses(root: Path) -> dict[str, str]:
    verdict = json.loads((root / ".acceptance" / "verdict.json").read_text())
    return {c["id"]: c["status"] for c in verdict["criteria"]}


def test_pytest_bdd_runs_each_scenario_and_outline_row(pytester: pytest.Pytester) -> None:
    pytest_bdd_project(pytester.path)
    result = pytester.runpytest_subprocess("--acceptance", "features", "-v", "-n", "0")
    assert result.ret == 1, result.stdout.str()  # no step removes items
    result.stdout.fnmatch_lines(
        ["*cart.feature::Add-several-items.2 Add several items (count=3) [[]bash: pytest-bdd "
         "runs this scenario[]] PASSED*"]
    )  # fmt: skip
    assert statuses(pytester.path) == {
        "Add-one-item": "passed",
        "Add-several-items.1": "passed",
        "Add-several-items.2": "passed",
        "Remove-an-item-that-is-not-there": "failed",
    }


def test_an_outline_row_runs_alone_and_tags_select_scenarios(pytester: pytest.Pytester) -> None:
    """Breaking only the count=3 row fails only Add-several-items.2; -m smoke selects the one
    scenario tagged @smoke."""
    pytest_bdd_project(pytester.path)
    feature = pytester.path / "features" / "cart.feature"
    feature.write_text(feature.read_text().replace("| 3     |", "| 3x    |"))
    pytester.runpytest_subprocess("--acceptance", "features", "-n", "0", "-k", "several")
    assert statuses(pytester.path) == {
        "Add-several-items.1": "passed",
        "Add-several-items.2": "failed",
    }
    smoke = pytester.runpytest_subprocess("--acceptance", "features", "-n", "0", "-m", "smoke")
    assert smoke.ret == 0, smoke.stdout.str()
    assert statuses(pytester.path) == {"Add-one-item": "passed"}


def test_a_scenario_no_pytest_bdd_test_binds_fails_saying_so(pytester: pytest.Pytester) -> None:
    pytest_bdd_project(pytester.path)
    extra = pytester.path / "features" / "extra.feature"
    extra.write_text("Feature: Extra\n  Scenario: Unbound\n    Given an empty cart\n")
    result = pytester.runpytest_subprocess("--acceptance", "features/extra.feature", "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*no pytest-bdd test binds scenario 'Unbound'*"])


def test_behave_runs_each_scenario_by_its_line(pytester: pytest.Pytester) -> None:
    behave_project(pytester.path)
    result = pytester.runpytest_subprocess("--acceptance", "features", "-v", "-n", "0")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*Add-one-item Add one item [[]bash: behave runs this scenario[]] PASSED*"]
    )
    assert statuses(pytester.path) == {
        "Add-one-item": "passed",
        "Add-several-items.1": "passed",
        "Add-several-items.2": "passed",
        "Remove-an-item-that-is-not-there": "failed",
    }


def test_without_a_runner_an_agent_judges_the_steps(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    judge = Judge(tmp_path_factory.mktemp("judge"))
    pytester.makeini(f"[pytest]\nacceptance_agent_command = {judge.command}\n")
    (pytester.path / "specs").mkdir()
    shutil.copy(FEATURE, pytester.path / "specs" / "cart.feature")
    result = pytester.runpytest_subprocess("--acceptance", "specs", "-n", "0", "--collect-only")
    result.stdout.fnmatch_lines(
        ["*<CriterionItem Add-one-item Add one item [[]agent: no pytest-bdd or behave in the "
         "project runs this scenario[]]>"]
    )  # fmt: skip
    ran = pytester.runpytest_subprocess("--acceptance", "specs", "-n", "0", "-k", "Add-one-item")
    assert ran.ret == 0, ran.stdout.str()
    assert 'When the customer adds "apple"' in judge.prompt("Add-one-item")
