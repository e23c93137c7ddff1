"""Every input the gate trusts, as one table: a new one is a module of this folder and a line
here (and its row in docs/threat-model.md, which a test holds to this tuple).

The pin at /implement (:func:`take_all`), the checks before the gate's run and after it
(:func:`before_run`, :func:`after_run`) and the run's read-only view (:func:`read_only`,
for apart.trusted) are loops over :data:`PINS`, in its order: a pin may read the records of
those before it.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import (
    base,
    criteria_environments,
    criterion_integrity,
    declared_inputs,
    gate_environment,
    interpreter_path,
    path_and_home,
    path_folders,
    project_configuration,
    project_distributions,
    shadowed_names,
    witnessed_criteria,
)

PINS: tuple[base.Pin, ...] = (
    criterion_integrity.PIN,
    declared_inputs.PIN,
    project_configuration.PIN,
    path_and_home.PIN,
    path_folders.PIN,
    interpreter_path.PIN,
    gate_environment.PIN,
    shadowed_names.PIN,
    project_distributions.PIN,
    criteria_environments.PIN,
    witnessed_criteria.PIN,
)

# While /implement takes the pins: the names of those taken so far. The witness's collection
# of the criteria runs during the take, and sees read-only what is pinned by then.
_taken: set[str] | None = None


def take_all(flow: Flow, taking: base.Taking) -> None:
    """Take every pin; one that cannot be taken is recorded as failed (the gate then refuses
    every run of the flow, saying why)."""
    with _pinning() as taken:
        for pin in PINS:
            try:
                pin.take(flow, taking)
            except (base.PinError, OSError) as error:
                base.write_failure(flow, pin.name, str(error) or type(error).__name__)
            taken.add(pin.name)


@contextlib.contextmanager
def _pinning() -> Iterator[set[str]]:
    global _taken
    _taken = set()
    try:
        yield _taken
    finally:
        _taken = None


def before_run(flow: Flow) -> list[str]:
    """What changed since /implement of every pinned input; PinError when a pin is absent,
    damaged or failed."""
    return [change for pin in PINS for change in pin.before_run(flow)]


def after_run(flow: Flow) -> list[str]:
    """What the gate's run changed of what is pinned; PinError as :func:`before_run`."""
    return [change for pin in PINS for change in pin.after_run(flow)]


def read_only(flow: Flow) -> list[str]:
    """The paths the run must see read-only. PinError as :func:`before_run`, but while the
    pins are being taken: then those taken so far (a failed one is refused later)."""
    if _taken is None:
        return [path for pin in PINS for path in pin.read_only(flow)]
    found: list[str] = []
    for pin in PINS:
        if pin.name in _taken:
            with contextlib.suppress(base.PinError):
                found += pin.read_only(flow)
    return found
