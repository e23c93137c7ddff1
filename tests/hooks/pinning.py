"""The table of pins taken in-process, for tests of one pin's check without a hook."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hook_transcripts import PLUGIN, SESSION_ID, TranscriptBuilder

from pytest_acceptance.gate import flow_state, transcript_pin
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pinned_collection import Collection, Criterion
from pytest_acceptance.gate.pins import table
from pytest_acceptance.gate.pins.base import Collected, Taking


def take_pins(
    flow: Flow, closure: dict[str, Any] | None = None, interpreters: dict[str, str] | None = None
) -> None:
    """Every pin of the table, as /implement takes them: `closure`, the gate probe's report
    of its interpreter's closure; `interpreters`, {sys.prefix: python} of the environments
    the criteria's pytest ran in (no witness collection runs)."""
    collected = Collected(tuple(sorted((interpreters or {}).items())), frozenset())
    table.take_all(
        flow,
        Taking({"closure": closure or {}, "startup_sources": []}, frozenset(), lambda: collected),
    )


def collected(
    python: str = "", prefix: str = "", criteria: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """flow.json's ``collection`` record, as /implement's probe writes it: each criterion
    given by the fields a test cares about, the rest as the probe reports a bare criterion."""
    full = [Criterion.from_json({**_BARE_CRITERION, **item}) for item in criteria]
    return Collection(tuple(full), None, (), python, prefix).to_json()


_BARE_CRITERION: dict[str, Any] = {
    "id": "AC-1",
    "title": "works",
    "method": "bash",
    "line": 1,
    "command": None,
    "pass_condition": None,
    "description": "",
    "agent": None,
    "checks": [],
    "model": None,
    "timeout": None,
    "retries": None,
    "priority": "MUST",
    "cwd": None,
}


def open_flow(repo: Path, tmp_path: Path, spec: str = "specs/feature.md") -> Path:
    """A flow pinned open for `spec` in SESSION_ID, as /implement leaves it (one criterion,
    AC-1), and the session's transcript so far."""
    prompt_id = str(uuid.uuid4())
    builder = TranscriptBuilder(repo, session_id=SESSION_ID)
    builder.command(f"{PLUGIN}:implement", spec, prompt_id=prompt_id)
    folder = Flow.folder_of(SESSION_ID)
    folder.mkdir(parents=True)
    transcript_pin.take(folder, None)
    data: dict[str, Any] = {
        "version": flow_state.STATE_VERSION,
        "session_id": SESSION_ID,
        "status": "open",
        "repo": str(repo),
        "spec_path": str(repo / spec),
        "spec_name": Path(spec).name,
        "args": spec,
        "prompt_id": prompt_id,
        "pinned_at": 1.0,
        "cwd": str(repo),
        "collection": collected(criteria=[{"id": "AC-1", "title": "works"}]),
    }
    Flow(folder, data).save()
    return builder.write(tmp_path / "session.jsonl")
