"""The open /implement flow of a session, for the guard hooks (protected paths, settings).

The pin (flow_state.py) is the reference and the transcript says what happened since
(pinned_flow.resolve): a flow closed by /done or /escalate and a new prompt, or released by
an interrupt before any work, is not open. A pinned, open flow whose transcript cannot be
read is still open: the guards then protect with what the pin says (fail closed).

Inside a pinned, open flow that names its spec, the transcript cannot change the answer:
the guard only pins the lines written since the hooks' last read (transcript_pin.note_tail),
which costs what was written since, not the whole transcript. The hooks that decide on the
transcript check all of it (pinned_flow.resolve).
"""

from __future__ import annotations

from pathlib import Path

from pytest_acceptance.gate import hook_io, pinned_flow, transcript_pin
from pytest_acceptance.gate.flow_state import Flow as PinnedFlow
from pytest_acceptance.gate.transcript import Transcript

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any


class OpenFlow:
    """An open flow: its spec (pinned, else as the transcript names it) and its identity."""

    def __init__(self, spec: Path | None, key: str) -> None:
        self.spec = spec
        self.key = key  # stable for the flow's lifetime: names its settings snapshot


def pin_of(payload: dict[str, Any]) -> PinnedFlow | None:
    """The session's pin (None: never pinned). Raises HookInputError (FlowStateError) when
    the plugin's state cannot be read: the caller cannot tell, and fails closed."""
    session = hook_io.session_id(payload)
    return PinnedFlow.load(session) if session else None


def open_flow(payload: dict[str, Any], pin: PinnedFlow | None) -> OpenFlow | None:
    """The session's open flow, None outside one; `pin` is pin_of(payload)."""
    session = hook_io.session_id(payload) or ""
    cwd = hook_io.text_field(payload, "cwd")
    try:
        transcript = Transcript.load_for(payload)  # PreToolUse: once it holds the call
    except hook_io.HookInputError:
        if pin is not None and pin.is_open:
            return OpenFlow(_pinned_spec(pin), _key(session, pin.pinned_at))
        return None
    if pin is not None and pin.is_open and pin.spec_path:
        transcript_pin.note_tail(pin.folder, transcript.path, transcript.data)
        return OpenFlow(Path(pin.spec_path), _key(session, pin.pinned_at))
    situation = pinned_flow.resolve(pin, transcript)
    if situation.flow is None:
        return None
    if pin is None:  # a transcript flow without a pin: its /implement line names it
        return OpenFlow(situation.flow.spec_path(cwd), _key(session, situation.flow.offset))
    # The pin names the flow whatever the transcript shows: a truncated transcript must not
    # give the same flow a new key, and so a fresh snapshot of already-changed settings.
    spec = _pinned_spec(pin) or situation.flow.spec_path(cwd)
    return OpenFlow(spec, _key(session, pin.pinned_at))


def _pinned_spec(pin: PinnedFlow) -> Path | None:
    return Path(pin.spec_path) if pin.spec_path else None


def _key(session: str, marker: object) -> str:
    safe = "".join(char for char in session if char.isalnum() or char in "-_") or "session"
    return f"{safe}-{marker}"
