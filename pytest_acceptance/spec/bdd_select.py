"""A pytest plugin for the run of one Gherkin scenario through pytest-bdd (``spec.bdd``):
``-p pytest_acceptance.spec.bdd_select --acceptance-bdd-feature=F --acceptance-bdd-scenario=S``
keeps only the tests pytest-bdd bound to scenario S of feature file F (and, with
``--acceptance-bdd-example=N``, to its N-th example row), and stops the run with a usage
error when none is: a scenario that no test binds has not passed."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance-bdd")
    group.addoption("--acceptance-bdd-feature", default=None)
    group.addoption("--acceptance-bdd-scenario", default=None)
    group.addoption("--acceptance-bdd-example", type=int, default=0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    feature = config.getoption("acceptance_bdd_feature")
    name = config.getoption("acceptance_bdd_scenario")
    if not feature or name is None:
        return
    example = config.getoption("acceptance_bdd_example")
    chosen = [item for item in items if _binds(item, feature, name, example)]
    if not chosen:
        row = f", example row {example}" if example else ""
        raise pytest.UsageError(
            f"no pytest-bdd test binds scenario {name!r}{row} of {feature}: bind it with "
            "scenarios() or @scenario() in a test module"
        )
    config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
    items[:] = chosen


def _binds(item: pytest.Item, feature: str, name: str, example: int) -> bool:
    try:
        from pytest_bdd.scenario import scenario_wrapper_template_registry
    except ImportError:  # another pytest-bdd: its tests cannot be told apart
        return False
    function = getattr(item, "obj", None)
    try:
        template = scenario_wrapper_template_registry.get(function)  # type: ignore[arg-type]
    except TypeError:
        return False
    if template is None or template.name != name:
        return False
    if os.path.realpath(template.feature.filename) != os.path.realpath(feature):
        return False
    if not example:
        return True
    callspec = getattr(item, "callspec", None)
    index = callspec.indices.get("_pytest_bdd_example") if callspec is not None else None
    return index == example - 1
