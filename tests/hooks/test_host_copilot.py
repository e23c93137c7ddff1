"""What the Copilot adapter and installer decide, in process: which prompt pins a flow, the
camelCase payloads read as the shared modules read them, the answers in the fields Copilot
reads, the agent's last message read from Copilot's transcript, what the guard protects
from Copilot's tools, the gate's cap never above Copilot's own, the hooks file the
installer writes (and the user's it never overwrites), and doctor. The host-neutral
decisions the hooks call are tested in test_prompt_flow.py; the whole through the real
Copilot CLI in test_copilot_flow.py."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import host_answer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Options
from pytest_acceptance.doctor import copilot as copilot_doctor
from pytest_acceptance.gate import caps, copilot_install, host_copilot, hosts
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow
from pytest_acceptance.gate.flow_state import session_key as session_key_of

HOOKS = Path(__file__).resolve().parents[2] / "hooks"


@pytest.mark.parametrize(
    ("prompt", "args"),
    [
        ("$acceptance-implement spec.md", "spec.md"),
        ("  $acceptance-implement specs/a.md please\n", "specs/a.md please"),
        ("please $acceptance-implement spec.md", None),
        ("$acceptance-implement-x spec.md", None),
        ("[pytest-acceptance stop guard] AC-1 fails", None),  # a block's reason, sent back
        ("", None),
    ],
)
def test_only_a_prompt_that_starts_with_the_flow_prompt_pins(prompt: str, args: str | None) -> None:
    assert host_copilot.ADAPTER.flow_prompt(prompt) == args


def test_the_camel_case_payloads_read_as_the_shared_modules_read_them() -> None:
    raw = {"sessionId": "s", "cwd": "/p", "toolName": "bash", "toolArgs": {"command": "ls"}}
    payload = host_copilot.neutral_payload(raw)
    assert payload["session_id"] == "s" and payload["tool_name"] == "bash"
    assert payload["tool_input"] == {"command": "ls"} and payload["sessionId"] == "s"


def test_context_and_a_denial_are_written_where_copilot_reads_them() -> None:
    """Copilot ignores hookSpecificOutput: it reads these fields at the top level."""
    render = host_copilot.ADAPTER.render
    context = {"hookSpecificOutput": {"hookEventName": "x", "additionalContext": "pinned"}}
    assert render(context) == {"additionalContext": "pinned"}
    deny = {"permissionDecision": "deny", "permissionDecisionReason": "no"}
    assert render({"hookSpecificOutput": {"hookEventName": "PreToolUse", **deny}}) == deny
    assert render({"decision": "block", "reason": "r"}) == {"decision": "block", "reason": "r"}


def test_a_forced_stop_is_no_block_on_copilot() -> None:
    """Copilot has no answer that ends the session: a forced stop writes nothing it could
    read as a block (the record says forced)."""
    forced = {"continue": False, "stopReason": "FORCED", "systemMessage": "FORCED"}
    assert host_copilot.ADAPTER.render(forced) == {}


STOP_HOOK_STARTED = ("hook.start", "")
FIRST_STOP, SECOND_STOP = 1795929583782, 1795929588686  # stop payloads' timestamps, in ms


def _stop_started(stamp: int) -> tuple[str, str]:
    """The hook.start Copilot writes for the stop whose payload has this timestamp."""
    return ("hook.start", str(stamp))


def _line(kind: str, text: str) -> str:
    if kind == "hook.start":
        started: dict[str, Any] = {"hookType": "agentStop"}
        if text:
            started["input"] = {"sessionId": "s", "timestamp": int(text), "cwd": "/p"}
        return json.dumps({"type": kind, "data": started})
    return json.dumps({"type": kind, "data": {"content": text}})


def _events(path: Path, *events: tuple[str, str]) -> str:
    path.write_text("".join(_line(kind, text) + "\n" for kind, text in events))
    return str(path)


def test_the_last_message_is_the_last_text_after_the_last_prompt(tmp_path: Path) -> None:
    path = _events(
        tmp_path / "events.jsonl",
        ("user.message", "fix it"),
        ("assistant.message", "ESCALATE: stuck"),
        ("user.message", "[pytest-acceptance stop guard] keep working"),
        ("assistant.message", "Done."),
        ("assistant.message", ""),  # a turn of tool calls only
        _stop_started(FIRST_STOP),
    )
    assert host_copilot.last_message(path) == "Done."
    stop = {"sessionId": "s", "timestamp": FIRST_STOP, "cwd": "/p", "transcriptPath": path}
    assert host_copilot.read(stop).last_message == "Done."


def test_an_earlier_escalation_is_not_the_last_message(tmp_path: Path, no_settling: None) -> None:
    """The control: an escalation before the last prompt is no escalation of this stop."""
    path = _events(
        tmp_path / "events.jsonl",
        ("assistant.message", "ESCALATE: stuck"),
        ("user.message", "keep working"),
    )
    assert host_copilot.last_message(path) is None
    assert host_copilot.last_message(str(tmp_path / "missing.jsonl")) is None


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # an environment only
@given(st.binary(max_size=2000))
def test_any_transcript_bytes_are_read_without_error(no_settling: None, data: bytes) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        found = host_copilot.last_message(file.name)
    assert found is None or isinstance(found, str)


def test_a_last_message_not_yet_written_is_waited_for(tmp_path: Path) -> None:
    """Copilot writes its transcript lazily: the stop's message may land after the hook
    starts; it is read once the stop's own hook.start is on disk."""
    path = tmp_path / "events.jsonl"
    _events(path, ("user.message", "fix it"))

    def write_later() -> None:
        time.sleep(0.3)
        with path.open("a") as events:
            events.write(_line("assistant.message", "ESCALATE: stuck") + "\n")
            events.write(_line(*STOP_HOOK_STARTED) + "\n")

    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        assert host_copilot.last_message(str(path)) == "ESCALATE: stuck"
    finally:
        writer.join()


def test_a_file_ending_at_an_earlier_stop_holds_no_text_of_this_one(
    tmp_path: Path, no_settling: None
) -> None:
    """Copilot writes lazily: the second stop's hook may find the file ending at the first
    stop's hook.start, before the block's prompt and the new text. The first stop's text
    was judged there; read again as this stop's, an escalation refused on a passing tree
    would be refused forever."""
    path = _events(
        tmp_path / "events.jsonl",
        ("user.message", "fix it"),
        ("assistant.message", "ESCALATE: stuck"),
        _stop_started(FIRST_STOP),
    )
    assert host_copilot.last_message(path, SECOND_STOP) is None
    stop = {"sessionId": "s", "timestamp": SECOND_STOP, "cwd": "/p", "transcriptPath": path}
    assert host_copilot.read(stop).last_message is None


def test_the_stops_own_hook_start_completes_its_text(tmp_path: Path, no_settling: None) -> None:
    """The control: the same file read for the stop that wrote that hook.start (its
    timestamp in ms or, in the VS Code compatible payload, ISO 8601) holds its escalation."""
    path = _events(
        tmp_path / "events.jsonl",
        ("user.message", "fix it"),
        ("assistant.message", "ESCALATE: stuck"),
        _stop_started(FIRST_STOP),
    )
    assert host_copilot.last_message(path, FIRST_STOP) == "ESCALATE: stuck"
    compatible = {"timestamp": "2026-11-29T05:19:43.782Z", "stop_reason": "end_turn"}
    assert host_copilot.stop_stamp(compatible) == FIRST_STOP
    assert host_copilot.last_message(path, host_copilot.stop_stamp(compatible)) is not None


def test_the_second_stops_text_is_waited_for_past_the_first_stops_hook(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _events(
        path,
        ("assistant.message", "ESCALATE: stuck"),
        _stop_started(FIRST_STOP),
    )

    def write_later() -> None:
        time.sleep(0.3)
        with path.open("a") as events:
            for kind, text in (
                ("user.message", "[pytest-acceptance stop guard] nothing to escalate"),
                ("assistant.message", "AC-1 is met."),
                _stop_started(SECOND_STOP),
            ):
                events.write(_line(kind, text) + "\n")

    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        assert host_copilot.last_message(str(path), SECOND_STOP) == "AC-1 is met."
    finally:
        writer.join()


@pytest.mark.parametrize("stamp", [None, True, "yesterday", "2026-11-29T05:19:43", [1], 1.5])
def test_a_stamp_that_names_no_moment_is_none_or_its_ms(stamp: Any) -> None:
    expected = 1 if stamp == 1.5 else None
    assert host_copilot.stop_stamp({"timestamp": stamp}) == expected


def test_the_gates_cap_is_never_above_copilots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEPTANCE_HOOK_MAX_BLOCKS", "50")
    monkeypatch.setenv("ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS", "50")
    cap = host_copilot.CONTRACT.block_cap
    assert cap == 8
    at_cap, past = caps.StopCount(cap, 1, None), caps.StopCount(cap + 1, 1, None)
    assert caps.force_reason(at_cap, cap) is None
    why = caps.force_reason(past, cap)
    assert why is not None and "the host's own cap of 8 blocks" in why
    assert caps.force_reason(past, None) is None  # a host with no cap: the gate's own


@pytest.fixture
def pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flow:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    (project / ".github" / "hooks").mkdir(parents=True)
    (project / "spec.md").write_text("# spec\n")
    folder = tmp_path / "flow"
    folder.mkdir()
    data = {
        "version": STATE_VERSION,
        "session_id": "s",
        "status": "open",
        "repo": str(project),
        "spec_path": str(project / "spec.md"),
    }
    return Flow(folder, data)


def _call(pin: Flow, tool: str, tool_args: Any) -> dict[str, Any]:
    return host_copilot.neutral_payload({"toolName": tool, "toolArgs": tool_args, "cwd": pin.repo})


PATCH = "*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n"


@pytest.mark.parametrize(
    ("tool", "tool_args"),
    [
        ("bash", {"command": "echo '{}' > .github/hooks/pytest-acceptance.json"}),
        ("bash", {"command": "rm -rf .github/hooks"}),
        ("bash", {"command": "sed -i s/x/y/ spec.md"}),
        ("bash", {"command": "echo '{}' > ~/.copilot/settings.json"}),
        ("create", {"path": ".github/hooks/other.json", "file_text": "{}"}),
        ("create", {"path": ".claude/settings.json", "file_text": "{}"}),
        ("edit", {"path": "spec.md", "old_str": "spec", "new_str": "x"}),
        ("edit", {"path": "~/.copilot/pytest-acceptance/flows/x", "old_str": "a"}),
        ("apply_patch", PATCH.format("spec.md")),
        ("apply_patch", PATCH.format(".github/hooks/pytest-acceptance.json")),
    ],
)
def test_the_guard_denies_a_write_to_the_spec_or_copilots_hooks(
    pin: Flow, tool: str, tool_args: Any
) -> None:
    assert host_copilot.protected_target(pin, _call(pin, tool, tool_args)) is not None


@pytest.mark.parametrize(
    ("tool", "tool_args"),
    [
        ("bash", {"command": "echo 2 > value.txt"}),
        ("bash", {"command": "cat .github/hooks/pytest-acceptance.json spec.md"}),
        ("create", {"path": "value.txt", "file_text": "2\n"}),
        ("edit", {"path": "src/app.py", "old_str": "1", "new_str": "2"}),
        ("apply_patch", PATCH.format("value.txt")),
        ("view", {"path": "spec.md"}),
        ("edit", {"old_str": "no path"}),
    ],
)
def test_the_guard_lets_an_ordinary_call_through(pin: Flow, tool: str, tool_args: Any) -> None:
    """The control beside the attacks: the code and a read of the protected files pass."""
    assert host_copilot.protected_target(pin, _call(pin, tool, tool_args)) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the pin is only read
@given(
    tool=st.sampled_from(["bash", "create", "edit", "apply_patch", "view", ""]),
    tool_args=JSON,
)
def test_any_tool_call_is_read_without_error(pin: Flow, tool: str, tool_args: Any) -> None:
    found = host_copilot.protected_target(pin, _call(pin, tool, tool_args))
    assert found is None or isinstance(found, str)


def test_the_gates_reasons_name_no_claude_command_on_copilot() -> None:
    told = host_copilot.ADAPTER.words(
        "Run /pytest-acceptance:verify, then /pytest-acceptance:done."
    )
    assert "/pytest-acceptance:" not in told


# --- the installer and doctor ----------------------------------------------------------------


def _installed_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    assert copilot_install.main([str(project)]) == 0
    return project


def test_the_installer_writes_its_own_file_the_same_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _installed_project(tmp_path, monkeypatch)
    hooks_file = project / host_copilot.HOOKS_FILE
    first = hooks_file.read_bytes()
    assert copilot_install.main([str(project)]) == 0
    assert hooks_file.read_bytes() == first
    config = json.loads(first)
    assert config["version"] == 1 and set(config["hooks"]) == {e for e, _, _ in host_copilot.HOOKS}
    assert host_copilot.hooks_problems(project) == []


@pytest.mark.parametrize(
    "theirs",
    [
        {"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./lint.sh"}]}},
        "not json",
        {"version": 1, "hooks": {}, "disableAllHooks": True},
    ],
    ids=["a hook of the user's", "not JSON", "a key of the user's"],
)
def test_the_installer_never_overwrites_a_file_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theirs: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    hooks_file = tmp_path / "project" / host_copilot.HOOKS_FILE
    hooks_file.parent.mkdir(parents=True)
    text = theirs if isinstance(theirs, str) else json.dumps(theirs)
    hooks_file.write_text(text)
    assert copilot_install.main([str(tmp_path / "project")]) == 1
    assert hooks_file.read_text() == text
    assert "not pytest-acceptance's" in capsys.readouterr().err


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("where", "change", "said"),
    [
        ("project", lambda c: c["hooks"].pop("agentStop"), "no agentStop hook of ours"),
        ("project", lambda c: c["hooks"]["agentStop"][0].update(timeoutSec=30), "timeoutSec"),
        ("project", lambda c: c.update(disableAllHooks=True), "runs no hook"),
        ("project", lambda c: c.update(version=2), "version 1"),
        ("user", lambda s: s.update(disableAllHooks=True), "runs no hook"),
    ],
    ids=["stop hook removed", "timeout at the default", "hooks off", "version", "user: off"],
)
def test_a_hook_copilot_would_skip_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, change: Any, said: str
) -> None:
    project = _installed_project(tmp_path, monkeypatch)
    assert host_copilot.skipped_hooks(str(project)) is None  # the control: as installed
    target = (
        project / host_copilot.HOOKS_FILE
        if where == "project"
        else tmp_path / "home" / ".copilot" / "settings.json"
    )
    _edit(target, change)
    warning = host_copilot.skipped_hooks(str(project))
    assert warning is not None and said in warning and "NOT FULLY GATED" in warning


def _doctor(project: Path, synthetic: bool = False) -> dict[str, str]:
    options = Options(project, synthetic_stop=synthetic)
    return {check.name: check.status for check in copilot_doctor.checks(options)}


def test_doctor_says_an_installed_project_is_gated_and_a_weakened_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _doctor(project) == {"installed": NOT_INSTALLED}
    project = _installed_project(tmp_path, monkeypatch)
    found = _doctor(project, synthetic=True)
    assert found["hooks installed"] == found["hooks' python3"] == OK, found
    assert found["synthetic stop"] == OK, found
    _edit(
        project / host_copilot.HOOKS_FILE,
        lambda c: c["hooks"]["agentStop"][0].update(timeoutSec=30),
    )
    assert _doctor(project)["hooks installed"] == FAIL


def test_doctors_synthetic_stop_fails_when_the_stop_hook_lets_it_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control of the synthetic stop: a stop command that answers nothing fails it."""
    project = _installed_project(tmp_path, monkeypatch)
    _edit(
        project / host_copilot.HOOKS_FILE,
        lambda c: c["hooks"]["agentStop"][0].update(bash="true # /hooks/copilot/stop.py"),
    )
    assert _doctor(project, synthetic=True)["synthetic stop"] == FAIL


# --- the hook scripts themselves, as Copilot starts them ------------------------------------


def _run_hook(script: str, payload: dict[str, object], home: Path) -> dict[str, object]:
    return host_answer("copilot", script, payload, {"HOME": str(home)}, home.parent)


def test_the_guard_denies_in_copilots_shape_inside_a_flow(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".github" / "hooks").mkdir(parents=True)
    folder = home / ".copilot" / hosts.STATE_FOLDER / "flows" / session_key_of("open")
    folder.mkdir(parents=True)
    data = {"version": STATE_VERSION, "session_id": "open", "status": "open", "repo": str(project)}
    (folder / "flow.json").write_text(json.dumps(data))
    call = {"sessionId": "open", "timestamp": 1, "cwd": str(project)}
    tamper = {"toolName": "create", "toolArgs": {"path": ".github/hooks/x.json", "file_text": "{}"}}
    edit = {"toolName": "create", "toolArgs": {"path": "value.txt", "file_text": "2"}}
    denied = _run_hook("pretool.py", {**call, **tamper}, home)
    assert denied["permissionDecision"] == "deny"
    assert "[pytest-acceptance guard]" in str(denied["permissionDecisionReason"])
    assert _run_hook("pretool.py", {**call, **edit}, home) == {}


def test_a_stop_whose_state_is_damaged_is_blocked(tmp_path: Path) -> None:
    """The pin cannot be read: the stop is blocked (whether a flow is open is unknown);
    Copilot's own cap of 8 ends a session stuck on it."""
    home = tmp_path / "home"
    folder = home / ".copilot" / hosts.STATE_FOLDER / "flows" / session_key_of("bad")
    folder.mkdir(parents=True)
    (folder / "flow.json").write_text("{damaged")
    stop = {"sessionId": "bad", "timestamp": 1, "cwd": str(tmp_path), "stopReason": "end_turn"}
    answer = _run_hook("stop.py", stop, home)
    assert answer["decision"] == "block" and "could not check this stop" in str(answer["reason"])


def test_a_prompt_with_unreadable_input_is_let_through(tmp_path: Path) -> None:
    """The control beside it: the prompt hook never refuses a prompt for its own error."""
    answer = _run_hook("prompt.py", {"timestamp": 1, "prompt": "hi"}, tmp_path / "home")
    assert answer.get("decision") is None


def test_the_doctors_synthetic_stop_finds_its_text_at_once(
    tmp_path: Path, no_settling: None
) -> None:
    """The synthetic stop's events.jsonl is written up to that stop's own hook.start, as
    Copilot writes it: read once (no settle time), it holds the stop's text, so the doctor
    never waits for a transcript that will not grow."""
    stop = {"sessionId": "s-1", "timestamp": 1764000000000, "cwd": str(tmp_path)}
    path = copilot_doctor.stop_transcript(tmp_path / "events.jsonl", stop)
    found = host_copilot.last_message(str(path), host_copilot.stop_stamp(stop))
    assert found == copilot_doctor.LAST_MESSAGE
