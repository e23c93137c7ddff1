"""The attack catalogue: every test in this folder is marked ``attack_catalogue`` but the one
each file names as its class's representative (``REPRESENTATIVE``), so the fast loop
``pytest -m "not e2e and not attack_catalogue"`` runs one attack per class and CI runs them
all."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = __file__.rsplit("/", 1)[0] + "/"
    for item in items:
        if not str(item.path).startswith(here):
            continue
        representative = getattr(item.module, "REPRESENTATIVE", None)
        if getattr(item, "originalname", item.name) != representative:
            item.add_marker(pytest.mark.attack_catalogue)
