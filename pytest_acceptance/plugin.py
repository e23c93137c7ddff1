"""pytest entry point (``pytest11``): options and wiring of the stages. Work in progress."""

from __future__ import annotations

import pytest

# Stage modules that are pytest plugins of their own (options + hookimpls).
pytest_plugins: list[str] = []


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_acceptance import hookspecs

    pluginmanager.add_hookspecs(hookspecs)
