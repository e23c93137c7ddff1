"""The attack catalogue: every test in this folder is marked ``attack_catalogue`` but the one
each file names as its class's representative (``REPRESENTATIVE``), so the fast loop
``pytest -m "not e2e and not attack_catalogue"`` runs one attack per class and CI runs them
all. Every test here also carries its classification (support/attack_catalogue.py) as JUnit
properties, which the gate benchmark reads; one that cannot be classified fails."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest
from support import attack_catalogue

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = __file__.rsplit("/", 1)[0] + "/"
    for item in items:
        if not str(item.path).startswith(here):
            continue
        representative = getattr(item.module, "REPRESENTATIVE", None)
        if getattr(item, "originalname", item.name) != representative:
            item.add_marker(pytest.mark.attack_catalogue)
    attack_catalogue.record(items, HERE)


def pytest_runtest_setup(item: pytest.Item) -> None:
    attack_catalogue.refuse(item)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, None]:
    report = yield
    attack_catalogue.keep_refused(item, report.get_result())
