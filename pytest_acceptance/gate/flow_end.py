"""What may end an open flow that was not finished: only an act of the person, when it happens.

A finished flow (flow_state.Flow.finished) ends at the person's next typed prompt (pin.py).
An unfinished one ends on one act only: the person interrupted /implement before the agent
did anything, and typed something else. That is decided once, by the prompt hook, at that
prompt (the first typed since the pin), never later from the transcript: lines the agent
writes afterwards, or a prompt sent once it has run a tool (a `claude -p --resume` it
started), cannot release the flow. Each of these must hold at that moment:

- no hook of the agent's work came since the pin: no tool call the guard hook saw
  (``agent-acted`` in the flow's folder, written by it whether or not the guard is switched
  on) and no Stop (``last_stop``); a process the agent starts needs a tool call first;
- the prompt does not ask to go on ("continue", "go on"): that resumes the flow;
- the transcript, as far as its pinned history allows (transcript_pin.py), shows the pinned
  /implement followed by the CLI's interrupt line with no answer of the model between.
"""

from __future__ import annotations

import time

from pytest_acceptance.gate import pinned_flow
from pytest_acceptance.gate.flow_state import Flow, write_json
from pytest_acceptance.gate.hook_io import HookInputError, settle_seconds, text_field
from pytest_acceptance.gate.transcript import Transcript, is_resume

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any

ACTED_FILE = "agent-acted"
RELEASED = "the user interrupted /implement before any work and typed another prompt"
_SETTLE_POLL = 0.02
# The CLI writes the interrupt line before it takes the next prompt: only its flush can lag.
# A prompt typed while the model has not answered yet, with no interrupt, waits this long.
_INTERRUPT_SETTLE = 2.0


def note_agent_acted(flow: Flow | None) -> None:
    """A tool call of the session in this open flow (the guard hook's first note is enough).
    Raises FlowStateError when it cannot be written: the hook then fails closed."""
    if flow is None or not flow.is_open:
        return
    acted = flow.folder / ACTED_FILE
    if not acted.exists():
        write_json(acted, {"at": time.time()})


def agent_acted(flow: Flow) -> bool:
    """A hook of the agent's work came since the pin: a tool call or a Stop."""
    return (flow.folder / ACTED_FILE).exists() or flow.last_stop is not None


def released_by_interrupt(flow: Flow, payload: dict[str, Any]) -> bool:
    """Whether the person's prompt in `payload`, typed into the open, unfinished `flow`,
    ends it as an /implement interrupted before any work (see the module's docstring)."""
    if flow.prompts_after_pin > 0 or agent_acted(flow):
        return False
    if is_resume(text_field(payload, "prompt") or ""):
        return False
    return _transcript_shows_the_interrupt(flow, payload.get("transcript_path"))


def _transcript_shows_the_interrupt(flow: Flow, path: object) -> bool:
    """The CLI writes its transcript lazily: the interrupt line may land just after the
    prompt hook starts. Polls for it for at most ACCEPTANCE_HOOK_SETTLE_SECONDS (2 s at
    most), until the model's answer shows that it came first."""
    deadline = time.monotonic() + max(0.0, min(settle_seconds(), _INTERRUPT_SETTLE))
    while True:
        try:
            transcript = Transcript.load(path)
        except HookInputError:
            return False  # cannot tell: the flow holds
        situation = pinned_flow.resolve(flow, transcript)
        if situation.tamper is not None or situation.flow is None:
            return False
        if transcript.interrupted_before_any_work(situation.flow):
            return True
        if transcript.answered_after(situation.flow) or time.monotonic() >= deadline:
            return False  # the model answered first: no later line can change that
        time.sleep(_SETTLE_POLL)
