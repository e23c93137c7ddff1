"""The gate's pinned PATH and HOME (gate/gate_env.py, gate/pins/path_and_home.py), as a
library: which tools a criterion names, and a pin that cannot be made. The attacks they stop
run through the real hooks in tests/hooks/attacks/test_environment.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pinning import collected

from pytest_acceptance.gate import gate_env
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import path_and_home, table
from pytest_acceptance.gate.pins.base import Collected, PinError, Taking


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("grep -qx 2 value.txt", {"grep"}),
        ("cat app.py | awk '{print}' && jq . x.json", {"cat", "awk", "jq"}),
        ("LC_ALL=C sort a | env FOO=1 uniq -c; (cd sub && make test)", {"sort", "uniq", "make"}),
        ("./scripts/check.sh && /usr/bin/true", set()),
        ("timeout 60 nice -n 5 pytest -q", {"timeout", "nice", "pytest"}),
    ],
)
def test_the_tools_a_command_names_are_the_first_words_of_its_simple_commands(
    command: str, named: set[str]
) -> None:
    """Tools after pipes and operators count, a wrapper and the command it runs are both
    looked up, assignments are skipped, and a path is no PATH lookup; the shells and
    Pythons are always pinned."""
    tools = gate_env.named_tools([command])
    assert set(tools) - set(gate_env.ALWAYS_PINNED) - {"cd"} == named
    assert set(gate_env.ALWAYS_PINNED) <= set(tools)


def test_a_pin_that_cannot_be_made_blocks_every_run(tmp_path: Path) -> None:
    """The pin's tools folder cannot be created (a file stands in its place): the error is
    recorded, and the gate's check before its run refuses with it instead of running with
    the session's PATH."""
    criteria = [{"method": "bash", "command": "grep x y"}]
    flow = Flow(tmp_path, {"collection": collected(criteria=criteria), "repo": str(tmp_path)})
    (tmp_path / "tools").write_text("not a folder")
    table.take_all(
        flow, Taking({"startup_sources": []}, frozenset(), lambda: Collected((), frozenset()))
    )
    with pytest.raises(PinError, match=r"could not be pinned at /implement: FileExistsError"):
        path_and_home.PIN.before_run(flow)
    with pytest.raises(PinError, match="could not be pinned"):
        table.before_run(flow)
