"""The criterion integrity pin (gate/pins/criterion_integrity.py), in-process: /done's check
of the tests a bash criterion runs decides on a record read back only in its exact shape,
and a record absent, damaged, off its shape or failed at /implement refuses /done instead of
reading as "nothing to check". Each refusal stands beside the honest control it differs
from."""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pinning import collected, take_pins

from pytest_acceptance.gate import gate
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.gate_runtime import GateError
from pytest_acceptance.gate.pins import base, criterion_integrity, table

PINNED_TEST = "import app\n\n\ndef test_value():\n    assert app.VALUE == 2\n"


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    """A flow whose one bash criterion runs `pytest tests/test_app.py`, pinned in-process."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_app.py").write_text(PINNED_TEST)
    folder = tmp_path / "flow"
    folder.mkdir()
    criterion = {"id": "AC-1", "method": "bash", "command": "pytest tests/test_app.py"}
    found = Flow(
        folder, {"repo": str(repo), "collection": collected(sys.executable, "", [criterion])}
    )
    take_pins(found)
    return found


def record(flow: Flow) -> dict[str, Any]:
    return dict(json.loads(base.record_path(flow, criterion_integrity.NAME).read_text()))


def rewrite(flow: Flow, value: object) -> None:
    base.record_path(flow, criterion_integrity.NAME).write_text(json.dumps(value))


def test_honest_an_untouched_tree_passes_the_check(flow: Flow) -> None:
    """Control: the pin names the criterion's test, and nothing weakened finds nothing."""
    assert "tests/test_app.py" in record(flow)["files"]
    assert gate.integrity_findings(flow) == []
    assert table.before_run(flow) == []


def test_an_assertion_removed_is_found(flow: Flow) -> None:
    """The check is live: the same flow with its test's assertion gone is refused."""
    Path(flow.repo, "tests", "test_app.py").write_text(
        "import app\n\n\ndef test_value():\n    pass\n"
    )
    (finding,) = gate.integrity_findings(flow)
    assert finding.startswith("tests/test_app.py::test_value: assertions removed (1 -> 0)")


def test_a_missing_record_refuses_done(flow: Flow) -> None:
    base.record_path(flow, criterion_integrity.NAME).unlink()
    with pytest.raises(GateError, match="test by test was not pinned at /implement"):
        gate.integrity_findings(flow)


def test_a_record_with_a_field_too_many_refuses_done(flow: Flow) -> None:
    rewrite(flow, {**record(flow), "skip": True})
    with pytest.raises(GateError, match="is damaged"):
        gate.integrity_findings(flow)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda r: {k: v for k, v in r.items() if k != "files"}, id="files-missing"),
        pytest.param(lambda r: {**r, "files": []}, id="files-not-an-object"),
        pytest.param(lambda r: {**r, "version": "4"}, id="version-not-a-number"),
        pytest.param(lambda r: {**r, "watch": [{"dir": ""}]}, id="watch-off-its-shape"),
        pytest.param(lambda r: None, id="null"),
    ],
)
def test_a_malformed_record_refuses_done(flow: Flow, damage: Any) -> None:
    """A part missing or of the wrong type is never read as "that part pins nothing"."""
    rewrite(flow, damage(record(flow)))
    with pytest.raises(GateError, match="is damaged"):
        gate.integrity_findings(flow)


def test_a_record_of_another_schema_refuses_done(flow: Flow) -> None:
    rewrite(flow, {**record(flow), "schema": "something else"})
    with pytest.raises(GateError, match="not a snapshot of this version"):
        gate.integrity_findings(flow)


def test_a_snapshot_that_failed_at_implement_refuses_done_and_every_run(
    flow: Flow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot raising is the pin's failure, recorded with its reason."""

    def broken(root: str, commands: list[str]) -> dict[str, Any]:
        raise RuntimeError("the project could not be read")

    monkeypatch.setattr(criterion_integrity.integrity_module(), "snapshot", broken)
    take_pins(flow)
    with pytest.raises(GateError, match="could not be pinned at /implement: RuntimeError"):
        gate.integrity_findings(flow)
    with pytest.raises(base.PinError, match="could not be pinned"):
        table.before_run(flow)


def test_no_integrity_package_at_implement_refuses_never_skips(
    flow: Flow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integrity package that cannot be imported is no "nothing to check": the pin fails
    and /done is refused, saying why."""
    real_import = builtins.__import__

    def without_integrity(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pytest_acceptance" and "integrity" in (args[2] if len(args) > 2 else ()):
            raise ImportError("no integrity here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_integrity)
    take_pins(flow)
    monkeypatch.undo()
    with pytest.raises(GateError, match="could not be pinned at /implement: ImportError"):
        gate.integrity_findings(flow)


def test_a_check_that_cannot_be_made_refuses_done(
    flow: Flow, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(root: str, pinned: dict[str, Any]) -> list[Any]:
        raise OSError("the tree cannot be read")

    monkeypatch.setattr(criterion_integrity.integrity_module(), "weakened", broken)
    with pytest.raises(GateError, match="cannot check the integrity of the criteria's tests"):
        gate.integrity_findings(flow)
