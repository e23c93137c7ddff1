"""The host-neutral side of the gate: what a host's stop hook reads, and how it answers.

The decisions (stop_decision.py, gate.py) never name a host. They read one payload shape
(``session_id``, ``cwd``, ``transcript_path``, ``stop_hook_active``,
``last_assistant_message``) and answer in one vocabulary: ``{"decision": "block",
"reason": ...}`` to keep the agent working, ``{"continue": false, "stopReason": ...}`` for a
stop let through FORCED, ``{"systemMessage": ...}`` for a note to the user. A host is an
adapter (one module, ``host_<name>.py``) that:

- recognises its own payloads (a host that also reads another host's settings file must not
  have its payload judged as the other's, nor the gate run twice),
- reads its payload into a :class:`StopEvent` and from it the neutral payload, and
- renders the neutral answer in its own shape, from its documented contract
  (:class:`HostContract`, data only).

Adding a host is one adapter module and its contract, registered in host_registry.py.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_acceptance.gate.hook_io import HookInputError

BLOCKING = "blocking"  # the host's stop hook can refuse a stop: the gate keeps its promise
FOLLOW_UP = "follow-up only"  # the hook can only queue a message: the stop happens anyway
NOT_SUPPORTED = "not supported"  # no adapter: nothing of the gate runs there
SUPPORT_LEVELS = (BLOCKING, FOLLOW_UP, NOT_SUPPORTED)
STATE_FOLDER = "pytest-acceptance"  # the gate's state, under the home of a host that has one


@dataclass(frozen=True)
class HostContract:
    """One host's documented stop-hook contract, as data.

    `block_fields` and `reason_field` make the answer that refuses a stop (a follow-up-only
    host has no refusal: its `reason_field` is the follow-up message, and the stop happens).
    `exit_2`: what exit code 2 means there. `block_cap`: the host's own cap on consecutive
    blocks (None: it has none and the gate counts its own blocks). `settings_files`: the
    files whose hooks the host runs, the other hosts' included."""

    name: str
    title: str
    stop_event: str
    exit_2: str
    default_timeout: int  # in timeout_unit
    block_cap: int | None
    settings_files: tuple[str, ...]
    # What most hosts document alike: a stop refused by a decision and its reason.
    support: str = BLOCKING
    block_fields: tuple[tuple[str, str], ...] = (("decision", "block"),)
    reason_field: str = "reason"
    answer_exit_code: int = 0
    timeout_unit: str = "s"  # "s" or "ms": the unit of the hook's timeout setting
    timeout_fails_open: bool = True
    loop_flag: str | None = "stop_hook_active"  # the field that says a stop follows a block
    message_field: str | None = "systemMessage"  # where a note for the user goes; None: nowhere
    ends_session: bool = True  # it reads {"continue": false, "stopReason": ...}: a forced stop
    neutral_answers: bool = False  # it reads the neutral vocabulary as is: answers unchanged

    def __post_init__(self) -> None:
        if self.support not in SUPPORT_LEVELS:
            raise ValueError(f"{self.name}: support {self.support!r} not in {SUPPORT_LEVELS}")
        if self.timeout_unit not in ("s", "ms"):
            raise ValueError(f"{self.name}: timeout unit {self.timeout_unit!r}")

    @property
    def default_timeout_seconds(self) -> float:
        return self.default_timeout / (1000 if self.timeout_unit == "ms" else 1)


@dataclass(frozen=True)
class StopEvent:
    """What every host's stop payload says, read by that host's adapter."""

    host: str
    session_id: str | None
    cwd: str | None
    transcript_path: str | None
    loop: bool  # this stop follows a block of the hook (the host's loop flag)
    last_message: str | None

    def neutral_payload(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The payload the decisions read: the host's own fields kept (a decision may read
        one the host documents, e.g. the background tasks), the shared ones set from this
        event where the host sent them."""
        payload = dict(raw)
        for key, value in (
            ("session_id", self.session_id),
            ("cwd", self.cwd),
            ("transcript_path", self.transcript_path),
            ("last_assistant_message", self.last_message),
        ):
            if value is not None:
                payload[key] = value
        payload["stop_hook_active"] = self.loop
        return payload


def text(payload: Mapping[str, Any], *keys: str) -> str | None:
    """The first of `keys` that holds a non-empty string."""
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


Recogniser = Callable[[Mapping[str, Any]], bool]
Reader = Callable[[Mapping[str, Any]], StopEvent]


def same_words(reason: str) -> str:
    return reason


def runs_every_hook(cwd: str | None) -> str | None:
    return None


def no_flow_prompt(prompt: str | None) -> str | None:
    return None


def specific_output_as_is(specific: Mapping[str, Any]) -> dict[str, Any]:
    return {"hookSpecificOutput": dict(specific)}


@dataclass(frozen=True)
class HostAdapter:
    """A host: its contract, how to tell its stop payload, how to read it; its answers are
    rendered from the contract. The rest is what a host without a skill tool brings to a
    flow pinned from the user's own prompt (prompt_flow.py); the defaults are a host with
    one, whose flow the transcript shows (stop_decision.py).

    `flow_prompt`: the arguments of a user's prompt that starts an /implement flow, None
    for any other prompt. `skipped_hooks`: the warning to give when the host would skip a
    hook of ours in the project at `cwd` (None: it runs them all). `words`: the gate's
    reasons, which name the slash commands, in the steps the host's agent can take.
    `specific_output`: a prompt or tool hook's ``hookSpecificOutput`` (the context for the
    model, a tool call's denial) in the fields the host reads. `home`: the host's own folder
    outside the project, where the flow's state lives (None: $CLAUDE_PLUGIN_DATA as given).
    `hook_payload`: a prompt or tool hook's payload in the field names the shared modules
    read (``session_id``, ``tool_name``, ``tool_input``)."""

    contract: HostContract
    recognises: Recogniser
    read: Reader
    flow_prompt: Callable[[str | None], str | None] = no_flow_prompt
    skipped_hooks: Callable[[str | None], str | None] = runs_every_hook
    words: Callable[[str], str] = same_words
    specific_output: Callable[[Mapping[str, Any]], dict[str, Any]] = specific_output_as_is
    home: Callable[[], Path] | None = None
    hook_payload: Callable[[Mapping[str, Any]], dict[str, Any]] = dict

    def state_dir(self) -> Path | None:
        return self.home() / STATE_FOLDER if self.home is not None else None

    def use_state(self) -> None:
        """The shared flow modules keep their state in $CLAUDE_PLUGIN_DATA: on a host with a
        home of its own, that is the state folder under it, whatever the environment says."""
        folder = self.state_dir()
        if folder is not None:
            os.environ["CLAUDE_PLUGIN_DATA"] = str(folder)

    def shares_settings_with(self, other: HostAdapter) -> bool:
        """Whether one of the two runs the hooks of a settings file the other reads."""
        return bool(set(self.contract.settings_files) & set(other.contract.settings_files))

    def render(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The neutral answer in this host's shape. A block keeps its reason (and a note for
        the user, where the host shows one); a forced stop is said in the host's words
        where it has them, else as a note; a note alone goes where the host shows notes."""
        contract = self.contract
        if contract.neutral_answers:
            return dict(answer)
        out: dict[str, Any] = {}
        note = answer.get("systemMessage")
        if answer.get("decision") == "block":
            out.update(contract.block_fields)
            out[contract.reason_field] = str(answer.get("reason") or "")
        elif answer.get("continue") is False:
            if contract.ends_session:
                out["continue"] = False
                out["stopReason"] = str(answer.get("stopReason") or "")
            else:
                note = note or answer.get("stopReason")
        if isinstance(note, str) and note and contract.message_field is not None:
            out[contract.message_field] = note
        specific = answer.get("hookSpecificOutput")
        if isinstance(specific, Mapping):  # a PreToolUse or prompt answer: the host's own
            out.update(self.specific_output(specific))
        return out


def claude_style_loop(payload: Mapping[str, Any]) -> bool:
    return payload.get("stop_hook_active") is True


def claude_style_stop(host: str, payload: Mapping[str, Any], last_message_key: str) -> StopEvent:
    """A stop payload in the field names most hosts share (``session_id``, ``cwd``,
    ``transcript_path``, ``stop_hook_active``), the agent's last text under
    `last_message_key`."""
    return StopEvent(
        host=host,
        session_id=text(payload, "session_id"),
        cwd=text(payload, "cwd"),
        transcript_path=text(payload, "transcript_path"),
        loop=claude_style_loop(payload),
        last_message=text(payload, last_message_key),
    )


# The prompt that starts an /implement flow on a host with no skill tool: the word the
# hook sets install, then the spec (and anything after it).
IMPLEMENT_SKILL = "acceptance-implement"
IMPLEMENT_PROMPT = f"${IMPLEMENT_SKILL}"
_IMPLEMENT = re.compile(rf"\A\s*{re.escape(IMPLEMENT_PROMPT)}(?![\w-])(.*)\Z", re.DOTALL)


def implement_args(prompt: str | None) -> str | None:
    """The arguments of a prompt that starts an /implement flow, None for any other."""
    matched = _IMPLEMENT.match(prompt or "")
    return matched.group(1).strip() if matched else None


def installer_command(
    hook_set: str, project: object = "<project>", plugin: object = "<plugin>"
) -> str:
    """The command that installs (again) the hook set of `hook_set` (its folder under the
    plugin's hooks/) into `project`."""
    return f"python3 {plugin}/hooks/{hook_set}/install.py {project}"


def not_fully_gated(hook_set: str, problems: list[str]) -> str | None:
    """The warning for a session of the host of `hook_set` (its folder under the plugin's
    hooks/) that would skip a hook of ours; None when nothing is wrong."""
    if not problems:
        return None
    return (
        f"pytest-acceptance: THIS {hook_set.upper()} SESSION IS NOT FULLY GATED: "
        + "; ".join(problems)
        + f". Fix: run the installer again (`{installer_command(hook_set)}`)."
    )


class InstallError(RuntimeError):
    """A host's hook set could not be installed (a file of the user's in its place, say)."""


def install_main(argv: list[str], install: Callable[[Path], Path], done: str) -> int:
    """An installer's command line, `install.py [PROJECT]`: install into PROJECT (default:
    the current folder); `done` said on success (``{file}``: the file written, ``{project}``),
    the reason on stderr and exit code 1 on failure."""
    project = Path(argv[0] if argv else os.getcwd())
    try:
        written = install(project)
    except (InstallError, OSError, HookInputError) as error:  # a state file unreadable too
        print(f"pytest-acceptance: {error}", file=sys.stderr)
        return 1
    print("pytest-acceptance: " + done.format(file=written, project=project))
    return 0


def json_object(path: Path) -> dict[str, Any] | None:
    """A host's settings or hooks file as the JSON object it must be; None when it is
    missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
