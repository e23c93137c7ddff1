"""Whether anything of the session could have acted beside the main conversation: the one
condition under which the stop may reuse the result of the gate's run that let /done or
/escalate through, instead of running the gate again.

A stored result describes the state the run read, and that state reaches past what any key
can cover (a file outside the project a criterion opened, ``.git/``, ``.acceptance/``). It
stands for the stop only when nothing of the session could have changed any of it between
the run's start and the stop. The main conversation is sequential: a tool call it made
before /done got its result before the /done call went out, and one after /done is seen
(the transcript, the guard's note). Everything else counts, whenever it started:

- a background task or a scheduled wake-up the Stop payload lists, ended or not;
- a tool call of the session asking to run in the background (``run_in_background``, on any
  tool: a shell, a subagent);
- any subagent: a sidechain line in the transcript, a call of the subagent tool, or a
  subagent transcript beside the session's (``<session>/subagents/``: where CLI 2.1.328
  writes them);
- another tool call in the same assistant message as the terminal skill's call (the CLI may
  run the calls of one message side by side).

Read as needles over the transcript's bytes, never line by line: a 100 MB transcript is read
in the time of a few ``bytes.find``. Standard library only, like every hook module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_acceptance.gate.transcript import SkillEvent, Transcript, tool_uses

BACKGROUND = b'"run_in_background":true'
SIDECHAIN = b'"isSidechain":true'
SUBAGENT_TOOLS = frozenset({"Agent", "Task"})  # the CLI's subagent tool, old and new names


def beside_the_conversation(
    transcript: Transcript, terminal: SkillEvent, payload: dict[str, Any]
) -> str | None:
    """What of the session could have acted beside the main conversation (a short
    description), or None when nothing could."""
    for key, kind in (("background_tasks", "a background task"), ("session_crons", "a wake-up")):
        listed = payload.get(key, [])  # CLI 2.1.328 sends both, empty when nothing is listed
        if not isinstance(listed, list) or listed:
            return f"{kind} of the session ({key} in the stop's payload)"
    data = transcript.data
    if data.find(BACKGROUND) >= 0 or data.find(b'"run_in_background": true') >= 0:
        return "a tool call that ran in the background"
    if data.find(SIDECHAIN) >= 0 or data.find(b'"isSidechain": true') >= 0:
        return "a subagent (sidechain lines in the transcript)"
    for name in sorted(SUBAGENT_TOOLS):
        for _, _, entry in transcript.lines_with(f'"name":"{name}"'.encode()):
            if any(True for _ in tool_uses(entry, name)):
                return f"a subagent (a call of the {name} tool)"
    if _subagent_transcripts(transcript.path):
        return "a subagent (its transcript beside the session's)"
    if _beside_in_its_message(transcript, terminal):
        return "another tool call in the same message as the terminal skill's"
    return None


def _subagent_transcripts(path: str) -> bool:
    """Anything in the session's ``subagents`` folder (an unreadable one counts)."""
    folder = Path(path).with_suffix("") / "subagents"
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _beside_in_its_message(transcript: Transcript, terminal: SkillEvent) -> bool:
    """Another tool_use block of the assistant message that made the terminal call."""
    entry = transcript.entry_at(terminal.offset)
    message = entry.get("message") if entry is not None else None
    ident = message.get("id") if isinstance(message, dict) else None
    if not isinstance(ident, str) or not ident:
        return False  # a line the CLI wrote without a message id: nothing to join on
    calls = 0
    for _, _, other in transcript.lines_with(f'"id":"{ident}"'.encode()):
        found = other.get("message")
        if isinstance(found, dict) and found.get("id") == ident:
            calls += sum(1 for _ in tool_uses(other))
    return calls > 1
