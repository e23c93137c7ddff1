"""Criteria under pytest's own tools: pytest-rerunfailures, pytest-timeout, pytest-randomly.

- **pytest-rerunfailures** runs a failed item again. Every run of a criterion is one or
  more attempts of it; ``runs_result`` folds them into one result the way the criterion's
  own retries do: a pass after a failed run is flaky (never a plain pass), the attempts add
  up, and what each run found stays in the message and the output.
- **pytest-timeout** would cut a criterion with SIGALRM (a traceback of pytest's frames
  after a stack dump) or end the whole process (its ``thread`` method). Its timer hooks
  let a plugin take over: for criteria, the timeout becomes the budget of each run of the
  criterion (every attempt of it), which caps each attempt's own timeout; the runner kills
  the processes as on its own timeout and says who cut it. (pytest-timeout stops its own
  timer at a test's first failure, so a rerun would run untimed; a criterion's every run
  gets the budget.)
- **pytest-randomly** shuffles the items: criteria go back to their spec order (the steps
  of a spec often build on each other), in the places the shuffle gave them, so the rest
  of a project's tests stay shuffled. ``--ff`` and ``--nf`` still reorder after this.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_acceptance.model import Budget, Result
from pytest_acceptance.verdict.combine import attempts_result

# The timeout pytest-timeout gave a criterion item, in seconds.
TIMEOUT = pytest.StashKey[float]()


class PytestTools:
    """Registered on every process that runs criteria."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True)  # pytest-timeout may be absent
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        if getattr(item, "criterion", None) is None:
            return None  # not a criterion: pytest-timeout's own timer
        item.stash[TIMEOUT] = float(settings.timeout)
        return True

    @pytest.hookimpl(optionalhook=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        """No timer runs: each run of the criterion takes its budget as it starts."""
        return None if getattr(item, "criterion", None) is None else True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Right after pytest-randomly's shuffle (done before every implementation that is
        not a wrapper), before anything that selects by position (--sw)."""
        if not _randomly_reorders(self.config):
            return
        places = [i for i, item in enumerate(items) if hasattr(item, "collected_as")]
        in_order = sorted((items[i] for i in places), key=lambda item: item.collected_as)  # type: ignore[attr-defined]
        for place, item in zip(places, in_order, strict=True):
            items[place] = item


def budget_of(item: pytest.Item) -> Budget | None:
    """The budget of the run of a criterion item starting now, if pytest-timeout gave one."""
    seconds = item.stash.get(TIMEOUT, None)
    if seconds is None:
        return None
    return Budget(time.monotonic() + seconds, f"pytest-timeout's timeout of {seconds:g} s")


def _randomly_reorders(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("randomly") and bool(
        config.getoption("randomly_reorganize", False)
    )


def runs_result(runs: Sequence[Result]) -> Result:
    """One result for every run of a criterion in one pytest run of its item
    (pytest-rerunfailures runs a failed item again): attempts, folded by the one rule."""
    return attempts_result(runs, "pytest-rerunfailures")
