"""The one transcript model of the pytest-acceptance hooks: our skills, flows, follow-ups.

The transcript is the JSON-lines session file Claude Code writes (format of the pinned CLI
2.1.328). It is mapped into memory once and searched at the bytes level for the few markers
that matter; only lines holding a marker are JSON-decoded, so a 100 MB transcript costs a
few passes of ``bytes.find``, not 100 MB of JSON parsing. The markers are long (a long
needle is a fast one) and assume the compact JSON the CLI writes (``"name":"Skill"``). File
order is time order: an event's byte offset is its position in the session.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import time
from pathlib import Path

from pytest_acceptance.gate.hook_io import PLUGIN_NAME, HookInputError, settle_seconds
from pytest_acceptance.tree.hostile import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from collections.abc import Iterator
    from typing import Any

SKILL_NAMES = frozenset({"implement", "verify", "done", "escalate"})
# Every Stop block reason starts with this tag. Claude Code feeds the reason back as a user
# line "Stop hook feedback:\n<reason>", which is how blocks are counted without any state.
BLOCK_TAG = "[pytest-acceptance stop guard]"

# Patterns, compiled by re (and kept in its cache) when first used: the guard imports this
# module before every tool call, and inside a pinned flow never parses a line.
_COMMAND_NAME = r"<command-name>\s*([^<\s]+)\s*</command-name>"
_COMMAND_ARGS = r"(?s)<command-args>(.*?)</command-args>"
_BASE_DIR = "Base directory for this skill:"
_META_WINDOW = 1 << 16  # a command's skill text is written right after the command line
_TASK_CREATED = r"Task #(\S+) created"
# The user line Claude Code writes when the user interrupts a turn (Esc, or an SDK interrupt);
# "[Request interrupted by user for tool use]" when a tool was running.
INTERRUPTED = "[Request interrupted by user"
# A first prompt after an interrupted /implement that takes the flow up again.
_RESUME_WORDS = frozenset(
    [
        "continue",
        "go",
        "on",
        "resume",
        "proceed",
        "carry",
        "keep",
        "going",
        "ahead",
        "yes",
        "ok",
        "okay",
        "please",
        "implement",
        "it",
        "the",
        "flow",
        "work",
        "now",
    ]
)
SETTLE_POLL_SECONDS = 0.02


# --- the transcript ------------------------------------------------------------------------


class SkillEvent:
    """One of our skills that really ran in the main conversation."""

    __slots__ = ("args", "cwd", "offset", "skill", "timestamp", "via")

    def __init__(self, skill: str, offset: int, args: str, entry: dict[str, Any], via: str) -> None:
        self.skill = skill
        self.offset = offset
        self.args = args
        self.via = via  # "command" (user typed it) or "tool" (Skill tool call)
        self.timestamp = parse_timestamp(entry.get("timestamp"))
        cwd = entry.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) and cwd else None

    def __repr__(self) -> str:
        return f"SkillEvent({self.skill!r}, offset={self.offset}, via={self.via!r})"


class Transcript:
    def __init__(self, data: bytes | mmap.mmap, path: str) -> None:
        self.data = data
        self.path = path
        self._skills: list[SkillEvent] | None = None

    @classmethod
    def load(cls, path_value: object) -> Transcript:
        if not isinstance(path_value, str) or not path_value:
            raise HookInputError("the payload has no transcript_path string")
        try:
            # A FIFO put in the transcript's place must not hang the hook until the CLI's
            # timeout lets the event through; anything but a regular file is refused.
            descriptor = open_regular(path_value)
        except OSError as error:
            raise HookInputError(
                f"cannot read transcript {path_value}: {error.strerror or error}"
            ) from None
        status = os.fstat(descriptor)
        with os.fdopen(descriptor, "rb") as handle:
            if status.st_size == 0:
                return cls(b"", path_value)
            try:
                return cls(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), path_value)
            except (OSError, ValueError):  # not mappable: read it
                return cls(handle.read(), path_value)

    # -- bytes-level access

    def _line(self, pos: int) -> tuple[int, int]:
        start = self.data.rfind(b"\n", 0, pos) + 1
        end = self.data.find(b"\n", pos)
        return start, len(self.data) if end < 0 else end

    def _decode(self, start: int, end: int) -> dict[str, Any] | None:
        try:
            entry = json.loads(self.data[start:end])
        except ValueError:  # a garbage or half-written line is skipped, never fatal
            return None
        return entry if isinstance(entry, dict) else None

    def entry_at(self, offset: int) -> dict[str, Any] | None:
        """The line that holds `offset`, decoded (None when it is not a JSON object)."""
        return self._decode(*self._line(offset))

    def lines_with(
        self, needle: bytes, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """(start, end, entry) of each main-conversation line in [start, end) holding needle.

        Sidechain lines (subagents) never describe the main conversation and are skipped.
        """
        stop = len(self.data) if end is None else end
        pos = start
        while pos < stop:
            hit = self.data.find(needle, pos, stop)
            if hit < 0:
                return
            line_start, line_end = self._line(hit)
            pos = line_end + 1
            entry = self._decode(line_start, line_end)
            if entry is not None and entry.get("isSidechain") is not True:
                yield line_start, line_end, entry

    def _last_lines_with(self, needle: bytes) -> Iterator[dict[str, Any]]:
        """The main-conversation lines holding needle, as lines_with, the last one first."""
        pos = len(self.data)
        while pos > 0:
            hit = self.data.rfind(needle, 0, pos)
            if hit < 0:
                return
            line_start, line_end = self._line(hit)
            pos = line_start
            entry = self._decode(line_start, line_end)
            if entry is not None and entry.get("isSidechain") is not True:
                yield entry

    # -- our skills

    def skill_events(self) -> list[SkillEvent]:
        """Every run of one of our skills, in session order (cached)."""
        if self._skills is None:
            events = [*self._command_events(), *self._tool_events()]
            self._skills = sorted(events, key=lambda event: event.offset)
        return self._skills

    def _command_events(self) -> Iterator[SkillEvent]:
        """Slash commands the user typed: `<command-name>/pytest-acceptance:x</command-name>`."""
        for start, end, entry in self.lines_with(b"<command-name>"):
            if entry.get("type") != "user" or entry.get("isMeta") is True:
                continue
            text = _prompt_text(entry)
            # Only a prompt that IS a command counts, not text that mentions one.
            if text is None or not text.lstrip().startswith(("<command-message>", "<command-")):
                continue
            match = re.search(_COMMAND_NAME, text)
            parsed = skill_name(match.group(1)) if match else None
            if parsed is None:
                continue
            short, qualified = parsed
            if not qualified and not self._command_ran_our_skill(end, entry, short):
                continue
            args = re.search(_COMMAND_ARGS, text)
            yield SkillEvent(short, start, args.group(1).strip() if args else "", entry, "command")

    def _command_ran_our_skill(self, end: int, entry: dict[str, Any], short: str) -> bool:
        """A bare `/done` counts only if the skill text that followed it is ours."""
        for _, _, meta in self.lines_with(_BASE_DIR.encode(), end, end + _META_WINDOW):
            if meta.get("parentUuid") == entry.get("uuid"):
                return is_our_skill_dir(skill_base_dir(meta), short)
        return False

    def _tool_events(self) -> Iterator[SkillEvent]:
        """Skill tool calls that really ran: their tool_result exists and is not an error."""
        for start, end, entry in self.lines_with(b'"name":"Skill"'):
            if entry.get("type") != "assistant":
                continue
            for block in tool_uses(entry, "Skill"):
                tool_input = block.get("input")
                raw = tool_input.get("skill") if isinstance(tool_input, dict) else None
                parsed = skill_name(raw) if isinstance(raw, str) else None
                if parsed is None:
                    continue
                short, qualified = parsed
                follow = self.follow_up(block.get("id"), end, need_meta=not qualified)
                if not follow.ran:
                    continue  # never ran: denied by a hook, refused, or still pending
                if not qualified and not is_our_skill_dir(skill_base_dir(follow.meta), short):
                    continue  # a bare name that resolved to another plugin's skill
                args = tool_input.get("args") if isinstance(tool_input, dict) else None
                yield SkillEvent(short, start, args if isinstance(args, str) else "", entry, "tool")

    def follow_up(self, tool_id: object, after: int, need_meta: bool = False) -> FollowUp:
        """What became of the tool call `tool_id`: its tool_result and, if asked, the isMeta
        line holding a skill's text (both are written after the call's own line)."""
        follow = FollowUp()
        if not isinstance(tool_id, str) or not tool_id:
            return follow
        limit = len(self.data)
        for _, line_end, entry in self.lines_with(tool_id.encode(), after, limit):
            if entry.get("type") != "user":
                continue
            if follow.block is None:
                follow.block = _tool_result(entry, tool_id)
                if follow.block is not None:
                    follow.entry = entry
                    limit = min(limit, line_end + _META_WINDOW)
            if entry.get("sourceToolUseID") == tool_id:
                follow.meta = entry
            if follow.block is not None and (follow.meta is not None or not need_meta):
                break
        return follow

    def current_flow(self) -> ImplementFlow | None:
        """The flow of the last /implement; a second /implement abandons the first."""
        events = self.skill_events()
        starts = [index for index, event in enumerate(events) if event.skill == "implement"]
        if not starts:
            return None
        return ImplementFlow(events[starts[-1]], events[starts[-1] + 1 :])

    def open_flow(self) -> ImplementFlow | None:
        """The current flow while it still holds the session; None when there is none, when
        its /done or /escalate let the session stop and the user moved on, or when the user
        interrupted its /implement before any work and moved on to something else."""
        flow = self.current_flow()
        if flow is None or self.closed(flow) or self.released_by_interrupt(flow):
            return None
        return flow

    def closed(self, flow: ImplementFlow) -> bool:
        """A flow whose /done or /escalate let the session stop is over once the user types a
        new prompt: later, unrelated work in the session is not held to the spec. A flow whose
        last stop was blocked stays enforced, whatever the user says next."""
        terminal = flow.terminal()
        if terminal is None:
            return False
        prompt = self.user_prompt_after(terminal.offset)
        return prompt is not None and not self.our_block_offsets(terminal.offset, prompt)

    def released_by_interrupt(self, flow: ImplementFlow) -> bool:
        """A typed /implement that the user interrupted before the model answered at all, and
        after which the user asked for something else (or nothing yet), was never started.
        Once the model answered, an interrupt is a pause: the flow holds. A first prompt
        after the interrupt that only says to go on ("continue", "go on") resumes it. (For
        a flow the plugin never pinned; a pinned one ends only at the person's prompt:
        flow_end.py.)"""
        interrupt = self._interrupt_before_any_work(flow)
        if interrupt is None:
            return False
        prompt = self.user_prompt_after(interrupt)
        return prompt is None or not is_resume(self._prompt_at(prompt))

    def interrupted_before_any_work(self, flow: ImplementFlow) -> bool:
        """The typed /implement of `flow` was interrupted before the model answered at all."""
        return self._interrupt_before_any_work(flow) is not None

    def answered_after(self, flow: ImplementFlow) -> bool:
        """The model answered after the /implement of `flow` (in the main conversation)."""
        return self._assistant_between(flow.offset, len(self.data))

    def _interrupt_before_any_work(self, flow: ImplementFlow) -> int | None:
        if flow.implement.via != "command":
            return None
        interrupt = self._first_interrupt_after(flow.offset)
        if interrupt is None or self._assistant_between(flow.offset, interrupt):
            return None
        return interrupt

    def _first_interrupt_after(self, offset: int) -> int | None:
        for start, _, entry in self.lines_with(INTERRUPTED.encode(), offset):
            if start > offset and is_interrupt(entry):
                return start
        return None

    def _assistant_between(self, start: int, end: int) -> bool:
        return any(True for _ in self.lines_with(b'"type":"assistant"', start, end))

    def _prompt_at(self, offset: int) -> str:
        line_start, line_end = self._line(offset)
        entry = self._decode(line_start, line_end)
        return (_prompt_text(entry) if entry else None) or ""

    def holds_message(self, message: object) -> bool:
        """Whether the transcript already holds `message` as its last assistant text (the
        Stop payload's last_assistant_message): the CLI writes its transcript lazily."""
        wanted = " ".join(message.split()) if isinstance(message, str) else ""
        if not wanted:
            return True  # nothing to wait for
        return " ".join(self.last_assistant_text().split()).endswith(wanted)

    def holds_tool_use(self, tool_use_id: object) -> bool:
        """Whether the transcript already holds the assistant line that made the tool call
        `tool_use_id` (a PreToolUse payload's): everything before that call is then on disk."""
        if not isinstance(tool_use_id, str) or not tool_use_id:
            return True  # nothing to wait for
        marker = json.dumps(tool_use_id).encode()
        return any(
            block.get("id") == tool_use_id
            for entry in self._last_lines_with(marker)  # the call is at the end, mostly
            for block in tool_uses(entry)
        )

    def holds_event(self, payload: dict[str, Any]) -> bool:
        """Whether the transcript holds what a hook event is about: a Stop's
        last_assistant_message, a PreToolUse's tool call (each true when absent). A
        subagent's tool call (the CLI names its ``agent_id``) goes to the subagent's own
        transcript, never to this one: waiting for it here would cost the whole settle time
        on each of its calls."""
        tool_use_id = None if payload.get("agent_id") else payload.get("tool_use_id")
        return self.holds_message(payload.get("last_assistant_message")) and self.holds_tool_use(
            tool_use_id
        )

    @classmethod
    def load_for(cls, payload: dict[str, Any]) -> Transcript:
        """The payload's transcript once it holds the event (holds_event): the CLI writes it
        lazily, and under load the lines of the last ~0.1 s -- the /verify before a /done,
        the /done before a stop -- can be missing when a hook starts. Polls with short
        sleeps for at most ACCEPTANCE_HOOK_SETTLE_SECONDS; after that, judged as written."""
        deadline = time.monotonic() + max(0.0, settle_seconds())
        while True:
            transcript = cls.load(payload.get("transcript_path"))
            if transcript.holds_event(payload) or time.monotonic() >= deadline:
                return transcript
            time.sleep(SETTLE_POLL_SECONDS)

    # -- what the stop hook needs besides skills

    def our_block_offsets(self, after: int, before: int | None = None) -> list[int]:
        """Offsets of the Stop hook feedback lines that carry one of our block reasons."""
        offsets = []
        for start, _, entry in self.lines_with(b"Stop hook feedback:", after, before):
            text = _prompt_text(entry) if entry.get("type") == "user" else None
            if text and text.startswith("Stop hook feedback:") and BLOCK_TAG in text:
                offsets.append(start)
        return offsets

    def user_prompt_after(self, offset: int) -> int | None:
        """Offset of the first prompt the user typed after the line at `offset` (not a tool
        result, not a skill's text or hook feedback, not a system notification)."""
        for start, _, entry in self.lines_with(b'"type":"user"', offset):
            if start > offset and _is_user_prompt(entry):
                return start
        return None

    def tool_call_between(self, start: int, end: int) -> bool:
        """True when the main conversation made a tool call in [start, end)."""
        for _, _, entry in self.lines_with(b'"tool_use"', start, end):
            if entry.get("type") == "assistant" and any(True for _ in tool_uses(entry)):
                return True
        return False

    def unfinished_todos(self, after: int) -> list[str]:
        """Unfinished items of the flow's task list, as "'title' (status)".

        Two task tools exist: TodoWrite (each call replaces the whole list) and, in CLI 2.1.x
        where TodoWrite is disabled, TaskCreate/TaskUpdate (one task per call). Only calls that
        ran count, and only tasks created within the flow. One pass finds both (tools "T...").
        """
        todo_list: list[Any] = []
        tasks: dict[str, tuple[str, str]] = {}
        for _, end, entry in self.lines_with(b'"name":"T', after):
            for block in tool_uses(entry):
                name, tool_input = block.get("name"), _input(block)
                if name not in ("TodoWrite", "TaskCreate", "TaskUpdate"):
                    continue
                follow = self.follow_up(block.get("id"), end)
                if not follow.ran:
                    continue
                if name == "TodoWrite":
                    todos = tool_input.get("todos")
                    todo_list = todos if isinstance(todos, list) else todo_list
                elif name == "TaskCreate":
                    task_id = _created_task_id(follow)
                    if task_id is not None:
                        tasks[task_id] = (_todo_title(tool_input), "pending")
                else:
                    task_id, status = str(tool_input.get("taskId", "")), tool_input.get("status")
                    if task_id in tasks and isinstance(status, str):
                        tasks[task_id] = (tasks[task_id][0], status)
        unfinished = [
            f"{_todo_title(item)} ({item.get('status', 'no status')})"
            for item in todo_list
            if isinstance(item, dict) and item.get("status") != "completed"
        ]
        return unfinished + [
            f"{title} ({status})"
            for title, status in tasks.values()
            if status not in ("completed", "deleted")
        ]

    def last_assistant_text(self, max_lines: int = 400) -> str:
        """The text of the main conversation's last assistant message, read from the end
        (one message is written as several lines, one per content block, with one id)."""
        texts: list[str] = []
        first_id: object = None
        end = len(self.data)
        for _ in range(max_lines):
            if end <= 0:
                break
            start = self.data.rfind(b"\n", 0, end) + 1
            entry = self._decode(start, end) if end > start else None
            end = start - 1
            if entry is None or entry.get("isSidechain") is True:
                continue
            kind = entry.get("type")
            if kind == "user" and first_id is not None:
                break
            if kind != "assistant":
                continue
            message = entry.get("message")
            this_id = message.get("id") if isinstance(message, dict) else None
            if first_id is None:
                first_id = this_id if this_id is not None else object()
            elif this_id != first_id:
                break
            texts[:0] = _assistant_texts(entry)
        return "\n".join(texts)


class FollowUp:
    """What became of one tool call, found in the lines after it."""

    __slots__ = ("block", "entry", "meta")

    def __init__(self) -> None:
        self.entry: dict[str, Any] | None = None  # the user line holding the tool_result
        self.block: dict[str, Any] | None = None  # the tool_result block itself
        self.meta: dict[str, Any] | None = None  # the isMeta line with a skill's text

    @property
    def ran(self) -> bool:
        """A result exists and is not an error (a hook's deny is an error result)."""
        return self.block is not None and self.block.get("is_error") is not True


class ImplementFlow:
    """The current /implement flow: its /implement and our skills that ran after it."""

    def __init__(self, implement: SkillEvent, after: list[SkillEvent]) -> None:
        self.implement = implement
        self.after = after

    @property
    def offset(self) -> int:
        return self.implement.offset

    @property
    def started_at(self) -> float | None:
        return self.implement.timestamp

    def called(self, skill: str) -> bool:
        return any(event.skill == skill for event in self.after)

    def terminal(self) -> SkillEvent | None:
        """The last /done or /escalate of the flow: it decides which rules apply."""
        ends = [event for event in self.after if event.skill in ("done", "escalate")]
        return ends[-1] if ends else None

    def spec_argument(self) -> str | None:
        """The spec path named by /implement's arguments (first word, quotes allowed)."""
        return first_word(self.implement.args)

    def spec_path(self, fallback_cwd: str | None) -> Path | None:
        argument = self.spec_argument()
        if argument is None:
            return None
        base = self.implement.cwd or fallback_cwd or os.getcwd()
        return Path(os.path.realpath(os.path.join(base, os.path.expanduser(argument))))


# --- small pure helpers --------------------------------------------------------------------


def skill_name(raw: str) -> tuple[str, bool] | None:
    """("done", True) for "pytest-acceptance:done" (a leading "/" is allowed, as the CLI
    accepts it), ("done", False) for a bare "done"; None for anything that is not ours."""
    name = raw.strip().lstrip("/")
    plugin, colon, short = name.rpartition(":")
    if colon:
        return (short, True) if plugin == PLUGIN_NAME and short in SKILL_NAMES else None
    return (name, False) if name in SKILL_NAMES else None


def gated_skill(payload: dict[str, Any]) -> tuple[str, bool] | None:
    """The skill a PreToolUse payload's Skill call asks for, as skill_name reads it, when it
    is one the /done and /escalate gate judges; None for every other call. Cheap: the gate's
    hook answers every other Skill call on this alone."""
    if payload.get("tool_name") != "Skill":
        return None
    tool_input = payload.get("tool_input")
    skill = tool_input.get("skill") if isinstance(tool_input, dict) else None
    parsed = skill_name(skill) if isinstance(skill, str) else None
    return parsed if parsed is not None and parsed[0] in ("done", "escalate") else None


def is_our_skill_dir(base_dir: str | None, short: str) -> bool:
    """Whether a skill's base directory is `<a pytest-acceptance plugin>/skills/<short>`."""
    if not base_dir:
        return False
    directory = Path(base_dir)
    if directory.name != short:
        return False
    manifest = directory.parent.parent / ".claude-plugin" / "plugin.json"
    try:
        return bool(json.loads(manifest.read_text(encoding="utf-8")).get("name") == PLUGIN_NAME)
    except (OSError, ValueError, AttributeError):
        return False


def skill_base_dir(meta: dict[str, Any] | None) -> str | None:
    text = _prompt_text(meta) if meta else None
    if not text or not text.startswith(_BASE_DIR):
        return None
    return text[len(_BASE_DIR) :].split("\n", 1)[0].strip() or None


def first_word(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    if text[0] in "\"'":
        closing = text.find(text[0], 1)
        if closing > 1:
            return text[1:closing]
    return text.split()[0]


def parse_timestamp(value: object) -> float | None:
    """Epoch seconds of an ISO-8601 transcript timestamp ("2026-01-17T10:00:00.123Z")."""
    if not isinstance(value, str) or not value:
        return None
    from datetime import datetime, timezone

    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def format_epoch(epoch: float | None) -> str:
    if epoch is None:
        return "an unknown time"
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def tool_uses(entry: dict[str, Any], name: str | None = None) -> Iterator[dict[str, Any]]:
    """The tool_use blocks of an assistant line (optionally only those of one tool)."""
    if entry.get("type") != "assistant":
        return
    for block in _blocks(entry):
        if block.get("type") == "tool_use" and (name is None or block.get("name") == name):
            yield block


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of a line's message ([] when its content is a string or absent)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]


def _prompt_text(entry: dict[str, Any]) -> str | None:
    """A user line's text: its string content, or its first text block."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    blocks = _blocks(entry)
    if blocks and blocks[0].get("type") == "text" and isinstance(blocks[0].get("text"), str):
        return str(blocks[0]["text"])
    return None


def is_interrupt(entry: dict[str, Any]) -> bool:
    """The line Claude Code writes when the user interrupts a turn."""
    if entry.get("type") != "user" or entry.get("isSidechain") is True:
        return False
    text = _prompt_text(entry)
    return text is not None and text.startswith(INTERRUPTED)


def is_resume(prompt: str) -> bool:
    """A prompt that only says to go on ("continue", "go on"): it resumes a flow."""
    words = re.findall(r"[a-z]+", prompt.lower())
    return bool(words) and len(words) <= 6 and all(word in _RESUME_WORDS for word in words)


def _is_user_prompt(entry: dict[str, Any]) -> bool:
    if entry.get("type") != "user" or entry.get("isMeta") is True or is_interrupt(entry):
        return False
    if entry.get("promptSource") == "system" or "origin" in entry:
        return False  # e.g. a <task-notification> the CLI queues as a user turn
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return not content.startswith("Stop hook feedback:")
    return bool(content) and all(block.get("type") in ("text", "image") for block in _blocks(entry))


def _assistant_texts(entry: dict[str, Any]) -> list[str]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    return [
        str(block["text"])
        for block in _blocks(entry)
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _tool_result(entry: dict[str, Any], tool_id: str) -> dict[str, Any] | None:
    for block in _blocks(entry):
        if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id:
            return block
    return None


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    texts = (
        [b.get("text") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    )
    return "\n".join(text for text in texts if isinstance(text, str))


def _created_task_id(follow: FollowUp) -> str | None:
    extra = follow.entry.get("toolUseResult") if follow.entry else None
    task = extra.get("task") if isinstance(extra, dict) else None
    if isinstance(task, dict) and task.get("id") is not None:
        return str(task["id"])
    match = re.search(_TASK_CREATED, _result_text(follow.block or {}))
    return match.group(1) if match else None


def _input(block: dict[str, Any]) -> dict[str, Any]:
    value = block.get("input")
    return value if isinstance(value, dict) else {}


def _todo_title(item: dict[str, Any]) -> str:
    for key in ("content", "subject", "activeForm"):
        if isinstance(item.get(key), str) and item[key].strip():
            return repr(item[key].strip())
    return "an untitled item"
