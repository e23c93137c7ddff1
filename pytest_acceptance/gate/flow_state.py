"""The pinned flow: what the plugin recorded, outside the project, when /implement started.

The agent can write every file of the project, and its own transcript. The pin lives in the
plugin's data folder instead (``$CLAUDE_PLUGIN_DATA``, which Claude Code sets for plugin
hooks; ``~/.claude/plugins/data/pytest-acceptance`` when it is unset), one folder per
session:

    flows/<session key>/flow.json      the pin: session, repository, spec, what /implement
                                       collected (pinned_collection.py), flow status
    flows/<session key>/pins/<name>.json  one record per input the gate trusts (pins/table.py)
    flows/<session key>/spec/<name>    the spec's bytes as they were at /implement
    flows/<session key>/config/...     the project's pytest configuration files and its
                                       sign-offs file, same moment
    flows/<session key>/results/*.json the gate's own verification results, by tree fingerprint
    flows/<session key>/hashes         the gate's file-hash cache (hash_cache.HashCache)
    flows/<session key>/tool-after-terminal  a file-writing tool call came after the gate
                                       let /done or /escalate through (the guard hook's note)
    flows/<session key>/transcript-pin.json  what the hooks have read of the transcript
                                       (transcript_pin.py)
    flows/<session key>/agent-acted    a tool call of the session came in the flow
                                       (flow_end.py)

Every write goes through a temporary file and a rename, so a reader never sees half a file.
Standard library only, like every hook module.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pytest_acceptance.gate import flow_records
from pytest_acceptance.gate.flow_records import Ended, LastStop, Terminal, ToolNote
from pytest_acceptance.gate.hook_io import HookInputError
from pytest_acceptance.tree.hostile import NotRegularFile, TooLarge, read_regular, write_atomic

# The guard imports this module before every tool call: what only the gate's run, the Stop
# hook or /implement read (results, the pinned collection, the pin's start) is imported
# where they read it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from pytest_acceptance.gate.gate_result import GateResult
    from pytest_acceptance.gate.pinned_collection import Collection

    _Record = TypeVar("_Record", Terminal, LastStop, Ended)

CONFIG_LIMIT = 16 << 20  # bytes of one configuration file the pin holds

# People's sign-offs of manual criteria (pytest_acceptance/verdict/signoff.py, which keeps
# the same name): pinned with the configuration, so the gate counts only those made before
# /implement.
SIGNOFF_FILE = "acceptance-signoffs.yaml"

# 2: the inputs the gate trusts are typed records of their own (pins/), no longer keys here;
# 3: criterion integrity and the witnessed criteria are ones of them; 4: what the probe
# collected at /implement is one typed record (pinned_collection.py); 5: the names a new
# project module must not take hold the namespace names too; 6: the project's distribution
# metadata is pinned (pins/project_distributions.py).
STATE_VERSION = 6
_FALLBACK_DATA = Path("~") / ".claude" / "plugins" / "data" / "pytest-acceptance"
STATUSES = ("open", "closed")


class FlowStateError(HookInputError):
    """The plugin's own state cannot be read or written; inside a flow that blocks."""


class OlderFlowError(FlowStateError):
    """The flow was pinned by an older version of the plugin, whose records this one does
    not read: it blocks like damaged state, and a new /implement may replace it."""


def data_dir() -> Path:
    configured = os.environ.get("CLAUDE_PLUGIN_DATA", "").strip()
    return Path(configured) if configured else _FALLBACK_DATA.expanduser()


def session_key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Flow:
    """One session's pin and everything the gate recorded about it (flow.json).

    Every field is read through a property of its own type. A field the hooks decide on
    that is not of its type is damaged state (FlowStateError, which blocks), never read as
    absent or as "nothing to check"; the few that only label (in a message) say so.
    """

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.folder = folder
        self.data = data

    # -- where things are

    @classmethod
    def folder_of(cls, session_id: str) -> Path:
        return data_dir() / "flows" / session_key(session_id)

    @property
    def spec_copy(self) -> Path:
        return self.folder / "spec" / self._required_text("spec_name")

    @property
    def config_folder(self) -> Path:
        return self.folder / "config"

    @property
    def results_folder(self) -> Path:
        return self.folder / "results"

    @property
    def hashes_file(self) -> Path:
        return self.folder / "hashes"

    # -- the pin's fields

    @property
    def is_open(self) -> bool:
        """Whether the flow is open; a status that is neither open nor closed is damaged
        state (read as closed, the guards would let everything through)."""
        status: object = self.data.get("status")
        if status not in STATUSES:
            raise FlowStateError(f"the flow's status in {self.folder} is damaged: {status!r:.100}")
        return status == "open"

    @property
    def session_id(self) -> str:
        return self._required_text("session_id")

    @property
    def repo(self) -> str:
        return self._required_text("repo")

    @property
    def cwd(self) -> str | None:
        """Where /implement was typed (its spec argument is relative to it)."""
        return self._text("cwd")

    @property
    def args(self) -> str | None:
        """/implement's arguments as typed: the pinned line of the transcript carries them."""
        return self._text("args")

    @property
    def spec_argument(self) -> str | None:
        """The spec as /implement named it (its first argument)."""
        return self._text("spec_argument")

    @property
    def prompt_id(self) -> str | None:
        """The prompt id of the /implement: the pinned line of the transcript is the first
        with it, and a prompt with it is that same turn, never the person's next one."""
        return self._text("prompt_id")

    @property
    def pinned_at(self) -> float | None:
        """When /implement was pinned: with the session, it names the flow's settings
        snapshot for its whole life."""
        value = self.data.get("pinned_at")
        if value is None:
            return None
        if not _is_number(value):
            message = f"the flow's pinned_at in {self.folder} is damaged: {value!r:.100}"
            raise FlowStateError(message)
        return float(value)

    @property
    def spec_path(self) -> str | None:
        return self._text("spec_path")

    @property
    def problem(self) -> str | None:
        """Why the pin holds no spec to verify (e.g. the spec did not exist at /implement)."""
        return self._text("problem")

    @property
    def collection(self) -> Collection | None:
        """What /implement's probe collected (pinned_collection.py); None when no interpreter
        could collect the spec then. FlowStateError when the record is damaged."""
        from pytest_acceptance.gate.pinned_collection import Collection, DamagedCollection

        value = self.data.get("collection")
        if value is None:
            return None
        try:
            return Collection.from_json(value)
        except DamagedCollection as error:
            message = f"the pinned collection of {self.folder} is damaged: {error}"
            raise FlowStateError(message) from None

    def pin_collection(self, collection: Collection) -> None:
        self.data["collection"] = collection.to_json()

    @property
    def spec_sha256(self) -> str | None:
        """The pinned spec's digest (None when the spec did not exist at /implement)."""
        return self._text("spec_sha256")

    @property
    def pin_pending(self) -> str | None:
        """Why no interpreter could collect the spec at /implement."""
        return self._text("pin_pending")

    @property
    def python(self) -> str:
        """The gate's interpreter, pinned at /implement ("" when none could be)."""
        collection = self.collection
        return collection.python if collection is not None else ""

    @property
    def prefix(self) -> str:
        """Its environment (sys.prefix), pinned at /implement."""
        collection = self.collection
        return collection.prefix if collection is not None else ""

    def bash_commands(self) -> list[str]:
        """The commands of the pinned bash criteria."""
        collection = self.collection
        return collection.bash_commands() if collection is not None else []

    def note_pin_pending(self, why: str) -> None:
        """No interpreter could collect the spec at /implement: /done is refused."""
        self.data["pin_pending"] = why

    # -- the person's prompts typed into the open flow (pin.py, flow_end.py)

    @property
    def prompts_after_pin(self) -> int:
        """How many prompts of the person came since the pin: only the first may release
        an interrupted flow, so a damaged count is damaged state, never none."""
        return self._count("prompts_after_pin")

    @property
    def last_prompt_id(self) -> str | None:
        """The prompt id of the person's last prompt counted: a prompt with it is the same
        turn (a subagent's result handed over), never a new one."""
        return self._text("last_prompt_id")

    def note_prompt(self, prompt_id: str | None) -> None:
        """One more prompt of the person in the open flow; written by the next save."""
        self.data["prompts_after_pin"] = self.prompts_after_pin + 1
        self.data["last_prompt_id"] = prompt_id

    # -- load and save

    @classmethod
    def load(cls, session_id: str) -> Flow | None:
        """The session's pin, None when the plugin never pinned a flow for it."""
        folder = cls.folder_of(session_id)
        path = folder / "flow.json"
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise FlowStateError(f"cannot read the pinned flow {path}: {error}") from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise FlowStateError(f"the pinned flow {path} is not JSON (damaged?)") from None
        if isinstance(data, dict) and _older(data.get("version")):
            raise OlderFlowError(
                f"the /implement flow of this session was pinned by an older version of "
                f"pytest-acceptance ({path}), which this one cannot check. Start a new "
                "/pytest-acceptance:implement to pin it again"
            )
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise FlowStateError(f"the pinned flow {path} has an unknown format")
        if data.get("session_id") != session_id:
            raise FlowStateError(f"the pinned flow {path} belongs to another session")
        flow = cls(folder, data)
        flow.is_open  # noqa: B018 -- a damaged status is damaged state at once, in every hook
        return flow

    def save(self) -> None:
        write_json(self.folder / "flow.json", self.data)

    # -- flow status

    def note_terminal(self, skill: str, fingerprint: str | None) -> None:
        """/done or /escalate was let through by the gate; written by the next save (the
        Stop hook's record_stop: one write per Stop)."""
        run = self.gate_runs or None  # the gate's run that let it through (None: no run)
        terminal = Terminal(skill, time.time(), fingerprint, run)
        self.data["terminal"] = flow_records.write(terminal)

    def record_terminal(self, skill: str, fingerprint: str | None) -> None:
        """/done or /escalate was let through by the gate, written now."""
        self.note_terminal(skill, fingerprint)
        self.save()

    def record_stop(self, decision: str, checked_from: float | None = None) -> None:
        """What the Stop hook decided last: "allow" or "block"; `checked_from` is when it
        began to judge (a tool call noted after that moment is not covered by its check)."""
        now = time.time()
        stop = LastStop(decision, now, now if checked_from is None else checked_from)
        self.data["last_stop"] = flow_records.write(stop)
        self.save()

    @property
    def terminal(self) -> Terminal | None:
        """The /done or /escalate the gate let through last; FlowStateError when damaged."""
        return self._record(Terminal, "terminal")

    @property
    def last_stop(self) -> LastStop | None:
        """The Stop hook's last decision; FlowStateError when damaged."""
        return self._record(LastStop, "last_stop")

    @property
    def closed(self) -> Ended | None:
        """When and why the flow was closed; FlowStateError when damaged."""
        return self._record(Ended, "closed")

    @property
    def forced(self) -> Ended | None:
        """When and why a stop was forced through past the cap; FlowStateError when damaged."""
        return self._record(Ended, "forced")

    def note_forced(self, why: str) -> None:
        """A stop was let through, FORCED, past the cap on blocks; written by the next save."""
        self.data["forced"] = flow_records.write(Ended(time.time(), why))

    def _text(self, key: str) -> str | None:
        """A text field of the pin; None when absent, FlowStateError when not a text."""
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise FlowStateError(f"the flow's {key} in {self.folder} is damaged: {value!r:.100}")
        return value

    def _required_text(self, key: str) -> str:
        """A text field every pin has; FlowStateError when absent or not a text."""
        value = self._text(key)
        if value is None:
            raise FlowStateError(f"the flow's {key} in {self.folder} is missing")
        return value

    def _count(self, key: str) -> int:
        """A count of the flow; 0 when absent, FlowStateError when not a count."""
        value = self.data.get(key, 0)
        if not _is_number(value) or not isinstance(value, int) or value < 0:
            raise FlowStateError(f"the flow's {key} in {self.folder} is damaged: {value!r:.100}")
        return value

    def _record(self, kind: type[_Record], key: str) -> _Record | None:
        value = self.data.get(key)
        if value is None:
            return None
        try:
            return flow_records.read(kind, value)
        except flow_records.Damaged as error:
            raise FlowStateError(f"the flow's {key} in {self.folder} is damaged: {error}") from None

    # -- tool calls after the accepted /done or /escalate (a file of its own: the guard hooks
    #    of parallel tool calls write it at once, and must never race flow.json's updates)

    def note_tool_after_terminal(self) -> None:
        """A file-writing tool call after the gate let /done or /escalate through (from the
        main conversation, a subagent or another CLI process on this session): its stored
        result is not reused at the next stop, whatever the transcript shows, and the flow
        is not finished until a stop after it was allowed. Written once per stop, not per
        call: the first call after the last stop's check began is the one that matters."""
        terminal = self.terminal
        if terminal is None:
            return
        note = self._tool_note()
        if note is None or note.terminal_at != terminal.at or note.at < self._checked_from():
            note = ToolNote(terminal.at, time.time())
            write_json(self.folder / "tool-after-terminal", flow_records.write(note))

    def tool_after_terminal(self) -> bool:
        """A tool call was noted after the terminal skill, or since the last stop began to
        judge (the stop notes the terminal again when it lets it through: a call during its
        gate run must not be forgotten with the old terminal)."""
        terminal = self.terminal
        if terminal is None:
            return False
        note = self._tool_note()
        return note is not None and (
            note.terminal_at == terminal.at or self._noted_since_last_stop(note)
        )

    def _tool_note(self) -> ToolNote | None:
        """The guard's note; a damaged one reads as "something ran just now"."""
        try:
            raw = (self.folder / "tool-after-terminal").read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            raw = b""
        try:
            return flow_records.read(ToolNote, json.loads(raw))
        except (ValueError, flow_records.Damaged):
            terminal = self.terminal
            return ToolNote(terminal.at if terminal is not None else None, float("inf"))

    def _checked_from(self) -> float:
        """When the last stop began to judge the tree (0 when no stop was recorded)."""
        stop = self.last_stop
        return 0.0 if stop is None else stop.checked_from

    def finished(self) -> bool:
        """The gate let /done or /escalate through, a stop after it was allowed (the gate
        judged the tree then), and no tool call was noted since that stop began to judge.
        Only a finished flow is ended by the user's next prompt, or replaced by a new
        /implement: a tool call after the terminal skill -- the main conversation's, a
        subagent's started before it, or another CLI process resuming the session -- keeps
        the flow open until a stop has judged the tree again."""
        terminal, stop = self.terminal, self.last_stop
        if terminal is None or stop is None or stop.decision != "allow":
            return False
        if stop.at < terminal.at:
            return False  # the terminal skill came after the last stop
        note = self._tool_note()
        return note is None or not self._noted_since_last_stop(note)

    def _noted_since_last_stop(self, note: ToolNote) -> bool:
        return note.at >= self._checked_from()

    def close(self, why: str) -> None:
        self.data["status"] = "closed"
        self.data["closed"] = flow_records.write(Ended(time.time(), why))
        self.save()

    # -- the gate's results, by tree fingerprint

    def result_path(self, fingerprint: str) -> Path:
        return self.results_folder / (sha256_bytes(fingerprint.encode()) + ".json")

    def result_for(self, key: str) -> GateResult | None:
        """The gate's result stored under `key` (gate.reuse_key) by the very run that let
        the terminal skill through, or None: a result of an earlier run of the same files
        stands for nothing the session did since that run started."""
        try:
            data = json.loads(self.result_path(key).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise FlowStateError(f"cannot read the gate's result: {error}") from None
        if not isinstance(data, dict) or data.get("reuse_key") != key:
            return None
        from pytest_acceptance.gate.gate_result import GateResult

        terminal = self.terminal
        run = terminal.run if terminal is not None else None
        if run is None or data.get("run") != run:
            return None
        return GateResult.from_json(data)

    @property
    def gate_runs(self) -> int:
        """How many runs of the gate this flow made: a stored result stands only for the
        run that let the terminal skill through, so a damaged count is damaged state."""
        return self._count("gate_runs")

    def store_result(self, result: GateResult, key: str) -> None:
        """File a trustworthy result under `key`, for the next check of the same files."""
        run = self.gate_runs or None  # count_run counted this run first
        write_json(self.result_path(key), {**result.to_json(), "reuse_key": key, "run": run})

    def count_run(self, result: GateResult) -> None:
        """One more run of the gate in this flow (a real one when it selected criteria)."""
        self.data["gate_runs"] = self.gate_runs + 1
        if result.real_run:  # bookkeeping only: no decision reads it
            self.data["real_run_at"] = time.time()
        self.save()


def _is_number(value: object) -> bool:
    """An int or a finite float of JSON, never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not isinstance(value, float) or value - value == 0.0  # inf and nan are not


def _older(version: object) -> bool:
    return isinstance(version, int) and not isinstance(version, bool) and version < STATE_VERSION


def start(session_id: str, data: dict[str, Any], spec_bytes: bytes | None, repo: Path) -> Flow:
    """A new pin for the session: whatever an earlier /implement pinned is replaced."""
    import shutil

    from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES

    folder = Flow.folder_of(session_id)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, mode=0o700)
    flow = Flow(folder, {"version": STATE_VERSION, "session_id": session_id, **data})
    if spec_bytes is not None:
        write_bytes(flow.spec_copy, spec_bytes)
    flow.config_folder.mkdir(mode=0o700)
    for name in (*PYTEST_CONFIG_FILES, SIGNOFF_FILE):  # the gate runs with those of this moment
        content = _pinned_configuration(repo / name)
        if content is not None:
            write_bytes(flow.config_folder / name, content)
    flow.save()
    return flow


def _pinned_configuration(source: Path) -> bytes | None:
    """What pytest reads of a configuration file: a symbolic link is followed, as pytest
    follows it; None where pytest finds no file (missing, a folder, a FIFO: never opened
    blocking). FlowStateError for one too large to pin."""
    try:
        return read_regular(source, CONFIG_LIMIT)
    except TooLarge:
        raise FlowStateError(
            f"the project's {source.name} is larger than {CONFIG_LIMIT} bytes: the gate "
            "cannot pin it"
        ) from None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, NotRegularFile):
        return None
    except OSError as error:
        import errno  # /implement's only: the guard never pins

        if error.errno == errno.ELOOP:  # a link that leads nowhere: pytest sees no file
            return None
        raise FlowStateError(f"cannot pin the project's {source.name}: {error}") from None


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, data, mode=0o600)


def write_json(path: Path, data: Any) -> None:
    try:
        write_bytes(path, json.dumps(data, indent=1).encode("utf-8"))
    except OSError as error:
        raise FlowStateError(f"cannot write the plugin's state {path}: {error}") from None
