"""The host adapters against their hosts' documented contracts (hosts.py, host_*.py).

Each host's stop payload, as its documentation gives it (and as the real Gemini and Copilot
CLIs were seen to send it, tests/hooks/test_gemini_cli.py and test_copilot_cli.py), is
recognised as that host's and read into the same StopEvent; the gate's neutral answers are
written in each host's documented shape. A host that runs the hooks of
``.claude/settings.json`` gets no decision from Claude Code's stop hook on a stop of its own
(its adapter judges it), unless a flow of ours is open in that session: then it is judged,
fail-closed, as any.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import NO_SETTLING, SESSION_ID, run_hook, run_host_script
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate import (
    host_claude,
    host_codex,
    host_copilot,
    host_cursor,
    host_gemini,
    host_registry,
    hosts,
)
from pytest_acceptance.gate.flow_state import STATE_VERSION
from pytest_acceptance.gate.flow_state import session_key as session_key_of
from pytest_acceptance.gate.hosts import BLOCKING, FOLLOW_UP, HostAdapter, StopEvent

REPO_ROOT = Path(__file__).resolve().parents[2]
CLAUDE, CODEX = host_claude.ADAPTER, host_codex.ADAPTER
COPILOT, GEMINI, CURSOR = host_copilot.ADAPTER, host_gemini.ADAPTER, host_cursor.ADAPTER
REASON = "[pytest-acceptance gate] AC-1 still fails"

# (adapter, documented stop payload, what the adapter reads from it)
DOCUMENTED: list[tuple[HostAdapter, dict[str, Any], StopEvent]] = [
    (
        CLAUDE,
        {
            "session_id": "s-1",
            "transcript_path": "/home/u/.claude/projects/p/s-1.jsonl",
            "cwd": "/work/p",
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": True,
            "last_assistant_message": "All done.",
        },
        StopEvent(
            "claude-code",
            "s-1",
            "/work/p",
            "/home/u/.claude/projects/p/s-1.jsonl",
            True,
            "All done.",
        ),
    ),
    (
        CODEX,
        {
            "session_id": "s-2",
            "turn_id": "t-1",
            "transcript_path": "/home/u/.codex/sessions/2026/11/28/rollout-s-2.jsonl",
            "cwd": "/work/p",
            "hook_event_name": "Stop",
            "model": "gpt-5.5",
            "stop_hook_active": False,
            "last_assistant_message": "ESCALATE: blocked",
        },
        StopEvent(
            "codex",
            "s-2",
            "/work/p",
            "/home/u/.codex/sessions/2026/11/28/rollout-s-2.jsonl",
            False,
            "ESCALATE: blocked",
        ),
    ),
    (
        COPILOT,
        {
            "sessionId": "s-3",
            "timestamp": 1795864685396,
            "cwd": "/work/p",
            "transcriptPath": "/home/u/.copilot/session-state/s-3/events.jsonl",
            "stopReason": "end_turn",
            "stop_hook_active": False,
        },
        StopEvent(
            "copilot-cli",
            "s-3",
            "/work/p",
            "/home/u/.copilot/session-state/s-3/events.jsonl",
            False,
            None,
        ),
    ),
    (
        COPILOT,  # the VS Code compatible shape: what a .claude/settings.json Stop hook gets
        {
            "hook_event_name": "Stop",
            "session_id": "s-4",
            "timestamp": "2026-11-28T11:18:15.130Z",
            "cwd": "/work/p",
            "transcript_path": "/home/u/.copilot/session-state/s-4/events.jsonl",
            "stop_reason": "end_turn",
            "stop_hook_active": True,
        },
        StopEvent(
            "copilot-cli",
            "s-4",
            "/work/p",
            "/home/u/.copilot/session-state/s-4/events.jsonl",
            True,
            None,
        ),
    ),
    (
        GEMINI,
        {
            "session_id": "s-5",
            "transcript_path": "/home/u/.gemini/tmp/p/chats/session-s-5.jsonl",
            "cwd": "/work/p",
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-11-28T11:13:19.364Z",
            "prompt": "Make AC-1 pass.",
            "prompt_response": "Done.",
            "stop_hook_active": False,
        },
        StopEvent(
            "gemini-cli",
            "s-5",
            "/work/p",
            "/home/u/.gemini/tmp/p/chats/session-s-5.jsonl",
            False,
            "Done.",
        ),
    ),
    (
        CURSOR,
        {
            "conversation_id": "c-6",
            "generation_id": "g-1",
            "model": "auto",
            "hook_event_name": "stop",
            "cursor_version": "3.7.21",
            "workspace_roots": ["/work/p"],
            "user_email": None,
            "transcript_path": None,
            "status": "completed",
            "loop_count": 2,
        },
        StopEvent("cursor", "c-6", "/work/p", None, True, None),
    ),
]
IDS = [f"{adapter.contract.name}-{i}" for i, (adapter, _, _) in enumerate(DOCUMENTED)]


@pytest.mark.parametrize(("adapter", "payload", "event"), DOCUMENTED, ids=IDS)
def test_each_documented_payload_is_its_hosts_and_reads_the_same(
    adapter: HostAdapter, payload: dict[str, Any], event: StopEvent, no_settling: None
) -> None:
    """Copilot's adapter waits for a transcript written lazily: these payloads name
    transcripts that are never written (no_settling)."""
    assert host_registry.whose(payload) is adapter
    assert adapter.read(payload) == event
    neutral = event.neutral_payload(payload)
    assert neutral["session_id"] == event.session_id
    assert neutral["stop_hook_active"] is event.loop
    assert neutral.get("last_assistant_message") == event.last_message


@pytest.mark.parametrize(("adapter", "payload", "event"), DOCUMENTED, ids=IDS)
def test_no_other_host_claims_a_documented_payload(
    adapter: HostAdapter, payload: dict[str, Any], event: StopEvent
) -> None:
    """Only Claude Code's adapter takes what it is given (it is asked last)."""
    claiming = [
        other
        for other in host_registry.ADAPTERS
        if other is not CLAUDE and other.recognises(payload)
    ]
    assert claiming == ([] if adapter is CLAUDE else [adapter])


@pytest.mark.parametrize(
    ("adapter", "answer"),
    [
        (CLAUDE, {"decision": "block", "reason": REASON}),
        (CODEX, {"decision": "block", "reason": REASON}),
        (COPILOT, {"decision": "block", "reason": REASON}),
        (GEMINI, {"decision": "deny", "reason": REASON}),
        (CURSOR, {"followup_message": REASON}),
    ],
)
def test_a_block_is_written_in_the_hosts_documented_shape(
    adapter: HostAdapter, answer: dict[str, str]
) -> None:
    assert adapter.render({"decision": "block", "reason": REASON}) == answer


FORCED = {"continue": False, "stopReason": "FORCED, NOT verified: x", "systemMessage": "m"}


@pytest.mark.parametrize("adapter", host_registry.ADAPTERS, ids=lambda a: a.contract.name)
def test_a_forced_stop_never_reads_as_a_block(adapter: HostAdapter) -> None:
    """Past a cap the stop goes through: said where the host can end a session with a
    reason, and in no host's words a refusal or a follow-up."""
    rendered = adapter.render(FORCED)
    assert "decision" not in rendered and adapter.contract.reason_field not in rendered
    assert (rendered.get("continue") is False) is adapter.contract.ends_session


@pytest.mark.parametrize("adapter", host_registry.ADAPTERS, ids=lambda a: a.contract.name)
def test_a_note_goes_only_where_the_host_shows_notes(adapter: HostAdapter) -> None:
    rendered = adapter.render({"systemMessage": "note"})
    field = adapter.contract.message_field
    assert rendered == ({field: "note"} if field else {})


def test_every_contract_is_whole_and_names_one_host() -> None:
    names = [contract.name for contract in host_registry.CONTRACTS]
    assert len(set(names)) == len(names)
    for contract in host_registry.CONTRACTS:
        assert contract.settings_files, contract.name
        refuses = bool(contract.block_fields)
        assert refuses is (contract.support == BLOCKING), contract.name
        assert (contract.support == FOLLOW_UP) is (not refuses), contract.name
    with pytest.raises(ValueError, match="support"):
        hosts.HostContract(**{**host_claude.CONTRACT.__dict__, "support": "maybe"})


def test_the_decision_core_names_no_host() -> None:
    """stop_decision.py and hosts.py speak the neutral vocabulary; the hosts are adapters."""
    core = [
        REPO_ROOT / "pytest_acceptance" / "gate" / "stop_decision.py",
        REPO_ROOT / "pytest_acceptance" / "gate" / "hosts.py",
    ]
    for path in core:
        text = path.read_text(encoding="utf-8").lower()
        for contract in host_registry.CONTRACTS:
            for word in {contract.title.lower(), contract.name, contract.name.split("-")[0]}:
                if word != "claude":  # claude_style_*: the payload shape several hosts share
                    assert word not in text, f"{path.name} names {word!r}"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
)
KEYS = st.sampled_from(
    [*sorted({key for _, payload, _ in DOCUMENTED for key in payload}), "x", "loopCount"]
)


@given(st.dictionaries(KEYS, JSON))
def test_any_payload_is_read_without_error(payload: dict[str, Any]) -> None:
    """Any payload is read, never raising. (Copilot's adapter waits for a transcript written
    lazily for up to the hooks' settle time: none here, the paths are made up.)"""
    os.environ["ACCEPTANCE_HOOK_SETTLE_SECONDS"] = "0"
    try:
        _read_by_every_adapter(payload)
    finally:
        del os.environ["ACCEPTANCE_HOOK_SETTLE_SECONDS"]


def _read_by_every_adapter(payload: dict[str, Any]) -> None:
    host_registry.whose(payload)
    for adapter in host_registry.ADAPTERS:
        event = adapter.read(payload)
        for value in (event.session_id, event.cwd, event.transcript_path, event.last_message):
            assert value is None or (isinstance(value, str) and value)
        assert isinstance(event.loop, bool)
        assert event.neutral_payload(payload)["stop_hook_active"] is event.loop


# --- Claude Code's stop hook given another host's stop (the real hook script) -------------


def _foreign(payload: dict[str, Any], transcript: Path, cwd: Path) -> dict[str, Any]:
    return {
        **payload,
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
    }


COPILOT_STOP = DOCUMENTED[3][1]


def test_a_copilot_stop_outside_our_flows_gets_no_answer(tmp_path: Path) -> None:
    """Copilot CLI runs the Stop hooks of .claude/settings.json: its stop (with a transcript
    in Copilot's own format) is left to Copilot's adapter, with nothing Copilot reads."""
    transcript = tmp_path / "events.jsonl"
    transcript.write_text('{"type": "session.start"}\n')
    run = run_hook("Stop", _foreign(COPILOT_STOP, transcript, tmp_path), env=NO_SETTLING)
    assert run.stdout.strip() == ""


def test_the_same_stop_in_claude_codes_shape_is_read_as_claude_codes(tmp_path: Path) -> None:
    """The control: without Copilot's marks the hook reads it, finds no flow in that
    transcript's place, and says so."""
    claude_stop = {
        key: value for key, value in COPILOT_STOP.items() if key not in ("timestamp", "stop_reason")
    }
    run = run_hook("Stop", _foreign(claude_stop, tmp_path / "missing.jsonl", tmp_path))
    assert run.output is not None and "not checked" in str(run.output.get("systemMessage"))


def test_a_cursor_stop_outside_our_flows_gets_no_answer(tmp_path: Path) -> None:
    cursor_stop = {**DOCUMENTED[5][1], "conversation_id": SESSION_ID}
    run = run_hook("Stop", cursor_stop)
    assert run.stdout.strip() == ""


# --- docs/hosts.md: every row of its table against the contracts in code -----------------

HOSTS_DOC = REPO_ROOT / "docs" / "hosts.md"
COLUMNS = [
    "host",
    "gate",
    "hook set",
    "stop event",
    "refusal, as written",
    "timeout (default)",
    "host's block cap",
    "runs the hooks of",
    "tested by",
]


def hosts_table() -> list[dict[str, str]]:
    """The rows of the table under "## Hosts at a glance", by column name."""
    lines = HOSTS_DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Hosts at a glance")
    table = [line for line in lines[start:] if line.startswith("|")]
    rows = []
    for line in table:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if set("".join(cells)) <= set("- "):
            continue
        assert len(cells) == len(COLUMNS), f"docs/hosts.md: a row of {len(cells)} cells: {line}"
        rows.append(dict(zip(COLUMNS, cells, strict=True)))
    header = rows.pop(0)
    assert list(header.values()) == COLUMNS, "the table's columns changed: update this test"
    return rows


def expected_row(adapter: HostAdapter, tested_by: str) -> dict[str, str]:
    contract = adapter.contract
    refusal = adapter.render({"decision": "block", "reason": "…"})
    return {
        "host": contract.title,
        "gate": contract.support,
        "hook set": "yes" if contract.name in host_registry.STOP_HOOKS else "no",
        "stop event": f"`{contract.stop_event}`",
        "refusal, as written": f"`{json.dumps(refusal, ensure_ascii=False)}`",
        "timeout (default)": f"{contract.default_timeout} {contract.timeout_unit}",
        "host's block cap": "none" if contract.block_cap is None else str(contract.block_cap),
        "runs the hooks of": ", ".join(f"`{path}`" for path in contract.settings_files),
        "tested by": tested_by,
    }


def test_every_row_of_the_hosts_table_is_what_the_code_says() -> None:
    rows = hosts_table()
    by_title = {adapter.contract.title: adapter for adapter in host_registry.ADAPTERS}
    assert set(by_title) <= {row["host"] for row in rows}, "a host with an adapter is missing"
    for row in rows:
        tested_by = row["tested by"].strip("`")
        assert (REPO_ROOT / tested_by).is_file(), f"{row['host']}: {tested_by} does not exist"
        adapter = by_title.get(row["host"])
        if adapter is None:  # no adapter: nothing may claim more
            assert row["gate"] == hosts.NOT_SUPPORTED and row["hook set"] == "no", row
            assert tested_by == "tests/hooks/test_hosts.py", row
            continue
        assert row == expected_row(adapter, row["tested by"]), row["host"]
        test_text = (REPO_ROOT / tested_by).read_text(encoding="utf-8")
        module = f"host_{adapter.contract.name.split('-')[0]}"
        hook = host_registry.STOP_HOOKS.get(adapter.contract.name)
        assert module in test_text or hook is not None, f"{tested_by} does not test {module}"
        if hook is not None:  # the shipped stop hook reads through the host's adapter
            assert module in (REPO_ROOT / hook).read_text(encoding="utf-8"), hook


def test_a_host_without_an_adapter_is_never_recognised_in_its_place() -> None:
    """The table's "not supported" rows: no adapter is named after them, and Claude Code's
    adapter is the only one that would take a payload with no host's marks."""
    titles = {adapter.contract.title for adapter in host_registry.ADAPTERS}
    unsupported = [row["host"] for row in hosts_table() if row["gate"] == hosts.NOT_SUPPORTED]
    assert unsupported and not set(unsupported) & titles
    bare_stop = {"session_id": "s", "cwd": "/p", "hook_event_name": "Stop"}
    assert host_registry.whose(bare_stop) is CLAUDE


# --- the hook sets of prompt-pinned flows: one guard (host_hooks.py), each host's shape -------

# (hook set, the host's home under HOME and its variable, a shell call in its tool payload,
# how its answer says "denied")
GUARDS = {
    "codex": (
        Path("codex-home"),
        "CODEX_HOME",
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "true"}},
        lambda answer: answer["hookSpecificOutput"]["permissionDecision"] == "deny",
    ),
    "copilot": (
        Path(".copilot"),
        None,
        {"timestamp": 1, "toolName": "bash", "toolArgs": {"command": "true"}},
        lambda answer: answer["permissionDecision"] == "deny",
    ),
    "gemini": (
        Path(".gemini"),
        None,
        {
            "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "true"},
        },
        lambda answer: answer["decision"] == "deny",
    ),
}


def _guard(hook_set: str, tmp_path: Path, flow_json: str) -> tuple[str, str]:
    """The hook set's guard run as its host runs it, a flow state file written first: its
    stdout and stderr."""
    home_below, variable, call, _ = GUARDS[hook_set]
    home = tmp_path / "home"
    host_home = home / home_below
    folder = host_home / hosts.STATE_FOLDER / "flows" / session_key_of("s-1")
    folder.mkdir(parents=True)
    (folder / "flow.json").write_text(flow_json)
    environment = {"HOME": str(home)}
    if variable is not None:
        environment[variable] = str(host_home)
    session = {"sessionId": "s-1"} if hook_set == "copilot" else {"session_id": "s-1"}
    payload = {**call, **session, "cwd": str(tmp_path)}
    done = run_host_script(hook_set, "pretool.py", payload, environment, tmp_path)
    return done.stdout, done.stderr


@pytest.mark.parametrize("hook_set", sorted(GUARDS))
def test_a_guard_that_cannot_read_the_flow_denies_in_its_hosts_shape(
    hook_set: str, tmp_path: Path
) -> None:
    """Whether a flow is open cannot be read: the guard denies the call, in one answer the
    host reads as a denial, and no traceback."""
    stdout, stderr = _guard(hook_set, tmp_path, "{damaged")
    (line,) = stdout.splitlines()
    answer = json.loads(line)
    assert GUARDS[hook_set][3](answer), answer
    assert "could not check this call" in line and "Traceback" not in stderr


@pytest.mark.parametrize("hook_set", sorted(GUARDS))
def test_a_guard_lets_a_harmless_call_through_an_open_flow(hook_set: str, tmp_path: Path) -> None:
    """The control beside it: a readable open flow and a call that writes nothing protected
    get no answer at all."""
    flow = {"version": STATE_VERSION, "session_id": "s-1", "status": "open", "repo": str(tmp_path)}
    assert _guard(hook_set, tmp_path, json.dumps(flow)) == ("", "")
