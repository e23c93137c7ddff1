"""Which flow the hooks judge: the pinned one, checked against what the transcript shows.

The pin (flow_state.py, outside the project) is the reference; the transcript is a file the
agent can truncate, delete, rewrite or append to. A pinned, open flow the transcript no
longer shows, a later /implement the plugin never saw, or history the hooks already read
that reads differently now (transcript_pin.py) is tampering, and the hooks block on it.

The transcript never ends a pinned flow: it says what happened inside it (our skills that
ran). A pinned flow ends only in the plugin's state, on the person's act (flow_end.py,
pin.end_finished_flow).
"""

from __future__ import annotations

from pytest_acceptance.gate import hook_io, transcript_pin
from pytest_acceptance.gate.flow_state import Flow as PinnedFlow
from pytest_acceptance.gate.flow_state import FlowStateError
from pytest_acceptance.gate.transcript import ImplementFlow, SkillEvent, Transcript, format_epoch

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any


class Situation:
    """The flow to judge (None: not in a flow) or why the transcript contradicts the pin."""

    def __init__(
        self,
        flow: ImplementFlow | None = None,
        tamper: str | None = None,
        pin: PinnedFlow | None = None,
    ) -> None:
        self.flow = flow
        self.tamper = tamper
        self.pin = pin


def resolve(pin: PinnedFlow | None, transcript: Transcript) -> Situation:
    commands = [
        event
        for event in transcript.skill_events()
        if event.skill == "implement" and event.via == "command"
    ]
    if pin is None:
        flow = transcript.open_flow()
        if flow is None:
            return Situation()
        return Situation(
            flow,
            tamper=(
                f"The transcript shows an /implement of {flow.spec_argument()!r} that this "
                "plugin never pinned (its prompt hook did not see it, or the line was written "
                "into the transcript). The gate only verifies a flow it pinned: the user "
                "starts one by typing /pytest-acceptance:implement <spec>."
            ),
        )
    event = pinned_event(pin, transcript, commands)
    later = [e for e in commands if event is None or e.offset > event.offset]
    if not pin.is_open:
        if later:
            return Situation(
                ImplementFlow(later[-1], []),
                tamper=(
                    f"The transcript shows an /implement of {later[-1].args!r} after the "
                    "plugin's last pinned flow ended, which the plugin never saw."
                ),
                pin=pin,
            )
        return Situation(pin=pin)
    rewritten = transcript_pin.check(
        pin.folder, transcript.path, transcript.data, pin.spec_path or pin.args
    )
    if rewritten is not None:
        stand_in = ImplementFlow(event or stand_in_event(pin), [])
        return Situation(stand_in, tamper=rewritten, pin=pin)
    if event is None:
        return Situation(
            ImplementFlow(stand_in_event(pin), []),
            tamper=(
                f"The /implement flow pinned at {format_epoch(pin.pinned_at)} for "
                f"{pin.spec_path or pin.args!r} is open, but the transcript no longer "
                "shows it (truncated, deleted or rewritten). The flow still holds: finish "
                "it with /pytest-acceptance:done or /pytest-acceptance:escalate."
            ),
            pin=pin,
        )
    after = [e for e in transcript.skill_events() if e.offset > event.offset]
    flow = ImplementFlow(event, [e for e in after if e.skill != "implement"])
    if later:
        return Situation(
            flow,
            tamper=(
                f"The transcript shows an /implement of {later[-1].args!r} that the plugin never "
                f"saw, after the pinned flow for {pin.spec_path!r}: the pinned flow holds."
            ),
            pin=pin,
        )
    return Situation(flow, pin=pin)


def pinned_event(
    pin: PinnedFlow, transcript: Transcript, commands: list[SkillEvent]
) -> SkillEvent | None:
    """The transcript's line of the pinned /implement: the first with its prompt id (the
    CLI writes it once, on the line, as promptId: a copy written later is not it), else the
    last with the same arguments."""
    prompt_id = pin.prompt_id
    if prompt_id:
        offsets = {
            start
            for start, _, entry in transcript.lines_with(prompt_id.encode())
            if entry.get("promptId") == prompt_id
        }
        return next((event for event in commands if event.offset in offsets), None)
    matches = [event for event in commands if event.args == pin.args]
    return matches[-1] if matches else None


def stand_in_event(pin: PinnedFlow) -> SkillEvent:
    """The pinned /implement, for a transcript that no longer holds it (the block caps count
    from the start of the file then)."""
    entry: dict[str, Any] = {"cwd": pin.cwd}
    return SkillEvent("implement", 0, pin.args or "", entry, "command")


def inside_flow_in_doubt(seen: dict[str, Any]) -> PinnedFlow | bool | None:
    """For a hook's fail-closed handler: the open pin it loaded (or loads now), True when
    the state cannot be read (in doubt: inside), None when outside any open flow."""
    if "pin" in seen:
        pin = seen["pin"]
    else:
        session_id = hook_io.session_id(seen.get("payload") or {})
        try:
            pin = PinnedFlow.load(session_id) if session_id else None
        except FlowStateError:
            return True
    return pin if pin is not None and pin.is_open else None
