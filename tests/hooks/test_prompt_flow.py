"""The decisions of a flow pinned from the user's prompt (prompt_flow.py), in process, as
tables: a recorded Codex payload and a recorded gate result in, the hook's one answer out,
in Codex's format, in milliseconds a case.

Codex's stop payload is read through its adapter as the hook script reads it
(host_registry.take). The gate's run is a stand-in over a recorded GateResult, judged by the
gate's own checks (test_stop_decision.stand_in_gate); the real run is tested with the real
Codex CLI in test_codex_cli.py. Codex's hook-trust check is the adapter's (`skipped_hooks`):
a trusted project is the adapter with that check answering "runs every hook", an untrusted
one is the real check on a project the installer never saw. Also here: the gate's own block
count (caps.StopCount) and the block of a stop whose state cannot be read, per host contract.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import support.gate_python
from hook_transcripts import SESSION_ID, make_repo, without_level_warning
from test_stop_decision import FAILED, NO_VERDICT, PASSED, pinned, stand_in_gate

from pytest_acceptance.gate import (
    caps,
    hook_io,
    host_claude,
    host_codex,
    host_registry,
    pin,
    prompt_flow,
    stop_decision,
)
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow
from pytest_acceptance.gate.gate_result import GateResult
from pytest_acceptance.gate.hosts import HostAdapter
from pytest_acceptance.gate.transcript import BLOCK_TAG

TRUSTED = dataclasses.replace(host_codex.ADAPTER, skipped_hooks=lambda cwd: None)
UNTRUSTED = host_codex.ADAPTER  # the real check: no installer ever trusted the test project
NOT_GATED = "NOT FULLY GATED"


@pytest.fixture(autouse=True)
def codex_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex's home and the gate's state in it, as the Codex adapter's use_state sets them."""
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(host_codex.state_dir()))
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    hook_io.answer_with(dict)  # as neutral: no render of an earlier test carries over
    return home


def answer_of(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The hook's one answer, as it writes it: one JSON object on stdout, or nothing (the
    isolation level's warning left out: hook_transcripts.HookRun)."""
    hook_io.finish()
    written = capsys.readouterr().out
    assert written.count("\n") <= 1, written  # exactly one answer
    return without_level_warning(json.loads(written) if written else {}) or {}


def codex_stop(repo: Path, last_message: str, loop: bool = False) -> dict[str, Any]:
    """A Stop payload in the shape Codex 0.171.0 sends (recorded from the real CLI)."""
    return {
        "session_id": SESSION_ID,
        "turn_id": "019a0000-0000-7000-8000-000000000001",
        "transcript_path": str(repo.parent / "rollout-2026-11-28T10-00-00-session.jsonl"),
        "cwd": str(repo),
        "hook_event_name": "Stop",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "stop_hook_active": loop,
        "last_assistant_message": last_message,
    }


def outcomes(codex_home: Path) -> list[str]:
    path = codex_home / "pytest-acceptance" / prompt_flow.OUTCOMES_FILE
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["outcome"] for line in lines]


# --- the stop ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StopCase:
    message: str  # the agent's last message
    result: GateResult | None  # the gate's recorded run; None: the gate is not asked
    answer: dict[str, str]  # the answer's keys and a phrase each holds; {}: no answer
    outcome: list[str] = field(default_factory=list)
    host: HostAdapter = TRUSTED
    pin: dict[str, Any] | None = field(default_factory=dict)  # None: no flow
    env: dict[str, str] = field(default_factory=dict)


BLOCK = f"{BLOCK_TAG} "
STOP_CASES = {
    "no flow": StopCase("All done.", None, {}, pin=None),
    "no flow, hooks untrusted": StopCase(
        "All done.", None, {"systemMessage": NOT_GATED}, host=UNTRUSTED, pin=None
    ),
    "done on a pass": StopCase(
        "All done.", PASSED, {"systemMessage": "ended verified"}, ["verified"]
    ),
    "done on a failure": StopCase(
        "All done.",
        FAILED,
        {"decision": "block", "reason": "finish again. If you are genuinely stuck"},
    ),
    "done on no verdict": StopCase(
        "All done.", NO_VERDICT, {"decision": "block", "reason": "no verdict"}
    ),
    "escalation on a real failure": StopCase(
        "Stuck.\nESCALATE: AC-1 needs a human",
        FAILED,
        {"systemMessage": "ended escalated"},
        ["escalated"],
    ),
    "escalation on no real run": StopCase(
        "ESCALATE: nothing ran", NO_VERDICT, {"decision": "block", "reason": "no verdict"}
    ),
    "the mark inside a line is no escalation": StopCase(
        "I will not ESCALATE: done", FAILED, {"decision": "block", "reason": "AC-1 works"}
    ),
    "done in a flow with no spec": StopCase(
        "All done.",
        None,
        {"decision": "block", "reason": "no pinned spec to verify"},
        pin={"problem": "the spec named by /implement does not exist"},
    ),
    "escalation in a flow with no spec": StopCase(
        "ESCALATE: wrong spec",
        None,
        {"systemMessage": "ended escalated"},
        ["escalated"],
        pin={"problem": "the spec named by /implement does not exist"},
    ),
    "a block past the gate's own cap": StopCase(
        "All done.",
        FAILED,
        {"continue": "False", "stopReason": "FORCED, NOT verified", "systemMessage": "FORCED"},
        ["forced"],
        pin={caps.STOP_COUNT_KEY: {"blocks": 2, "idle": 0, "fingerprint": None}},
        env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "2"},
    ),
    "done on a pass, hooks untrusted": StopCase(
        "All done.",
        PASSED,
        {"systemMessage": f"{NOT_GATED}"},
        ["verified"],
        host=UNTRUSTED,
    ),
}


@pytest.mark.parametrize("name", sorted(STOP_CASES))
def test_the_stop_decides_by_the_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    codex_state: Path,
    name: str,
) -> None:
    case = STOP_CASES[name]
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    repo = make_repo(tmp_path / "repo")
    if case.pin is not None:
        extra = {**case.pin, "spec_path": None} if "problem" in case.pin else case.pin
        pinned(Flow.folder_of(SESSION_ID), repo, str(uuid.uuid4()), extra).save()
    calls: list[tuple[str, bool]] = []
    checks = stop_decision.Checks(stand_in_gate(case.result or PASSED, calls), lambda _: [])
    payload = host_registry.take(host_codex.ADAPTER, codex_stop(repo, case.message))
    assert payload is not None
    prompt_flow.stop(payload, 0.0, {}, case.host, checks)
    answer = answer_of(capsys)
    assert set(answer) == set(case.answer), answer
    for key, phrase in case.answer.items():
        assert phrase in str(answer[key]), answer
    if answer.get("decision") == "block":
        assert str(answer["reason"]).startswith(BLOCK)
        assert "/pytest-acceptance:" not in str(answer["reason"])  # in Codex's words
    assert calls == ([] if case.result is None else [(calls[0][0], False)])  # never reused
    assert outcomes(codex_state) == case.outcome


def test_a_block_is_counted_in_the_pin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "repo")
    pinned(Flow.folder_of(SESSION_ID), repo, str(uuid.uuid4()), {}).save()
    checks = stop_decision.Checks(stand_in_gate(FAILED, []), lambda _: [])
    for _ in range(2):
        payload = host_registry.take(host_codex.ADAPTER, codex_stop(repo, "All done."))
        assert payload is not None
        prompt_flow.stop(payload, 0.0, {}, TRUSTED, checks)
        assert answer_of(capsys)["decision"] == "block"
    flow = Flow.load(SESSION_ID)
    assert flow is not None and flow.is_open
    count = caps.StopCount.of(flow)
    assert (count.blocks, count.idle) == (2, 2)  # the same tree both times: no progress


# --- a stop the hook cannot check --------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "answers"),
    [
        # Codex has no cap of its own: the gate counts, and lets the 4th through, FORCED.
        (host_codex.ADAPTER, ["block", "block", "block", "forced"]),
        # Claude Code caps its own blocks at 8, above the gate's: the same, never left to
        # the CLI, which would let the 9th out with nothing recorded.
        (host_claude.ADAPTER, ["block", "block", "block", "forced"]),
    ],
)
def test_a_stop_whose_state_is_unreadable_blocks_as_the_host_caps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], host: HostAdapter, answers: list[str]
) -> None:
    """One decision (caps.block_unknown), the host's cap as data on its contract."""
    got = []
    for index in range(4):
        payload = {**codex_stop(tmp_path, "done"), "stop_hook_active": index > 0}
        reason = "The stop hook could not check this stop (damaged), so it is not let through."
        forced = caps.block_unknown(reason, payload, host.contract)
        answer = answer_of(capsys)
        got.append("forced" if forced is not None else answer.get("decision"))
        assert (forced is None) is (answer == {"decision": "block", "reason": f"{BLOCK}{reason}"})
    assert got == answers


def test_an_error_inside_a_flow_blocks_with_one_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    pinned(Flow.folder_of(SESSION_ID), repo, str(uuid.uuid4()), {}).save()
    seen: dict[str, Any] = {"payload": codex_stop(repo, "done"), "pin": Flow.load(SESSION_ID)}
    hook_io.tell_user("a note written before the error")
    prompt_flow.stop_failed(RuntimeError("boom"), seen, host_codex.ADAPTER)
    answer = answer_of(capsys)
    assert answer["decision"] == "block"
    assert "could not check this stop (boom)" in answer["reason"]


def test_an_unreadable_payload_blocks_on_codex(
    capsys: pytest.CaptureFixture[str], codex_state: Path
) -> None:
    """Codex exports no session id: with no payload, whether a flow is open is unknown."""
    prompt_flow.stop_failed(hook_io.HookInputError("empty stdin"), {}, host_codex.ADAPTER)
    assert answer_of(capsys)["decision"] == "block"


def test_an_error_outside_any_flow_is_told(capsys: pytest.CaptureFixture[str]) -> None:
    """Control: the pin was read and there is none: nothing to enforce."""
    seen: dict[str, Any] = {"payload": {"session_id": "none"}, "pin": None}
    prompt_flow.stop_failed(RuntimeError("boom"), seen, host_codex.ADAPTER)
    assert set(answer_of(capsys)) == {"systemMessage"}


# --- the prompt --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptCase:
    prompt: str
    answer: dict[str, str]  # the answer's keys and a phrase each holds; {}: no answer
    host: HostAdapter = TRUSTED
    open_flow: bool = False
    flow_version: int = STATE_VERSION  # of the open flow
    pinned: bool = False  # a new flow is pinned
    outcome: list[str] = field(default_factory=list)


IMPLEMENT = "$acceptance-implement specs/missing.md"  # no such spec: pinned fast, as a problem
PROMPT_CASES = {
    "an ordinary prompt": PromptCase("hello", {}),
    "an ordinary prompt, hooks untrusted": PromptCase(
        "hello", {"systemMessage": NOT_GATED, "hookSpecificOutput": NOT_GATED}, UNTRUSTED
    ),
    "a flow resumed, hooks untrusted": PromptCase(
        "go on",
        {"decision": "block", "reason": "was not resumed"},
        UNTRUSTED,
        open_flow=True,
        outcome=["refused"],
    ),
    "a flow started, hooks untrusted": PromptCase(
        IMPLEMENT,
        {"decision": "block", "reason": "was not started"},
        UNTRUSTED,
        outcome=["refused"],
    ),
    "a flow started": PromptCase(
        IMPLEMENT, {"hookSpecificOutput": "has no spec to verify"}, pinned=True
    ),
    "a flow started while one is open": PromptCase(
        IMPLEMENT, {"decision": "block", "reason": "feature.md"}, open_flow=True
    ),
    "a flow started while an older version's is open": PromptCase(
        IMPLEMENT,
        {"hookSpecificOutput": "has no spec to verify"},
        open_flow=True,
        flow_version=STATE_VERSION - 1,
        pinned=True,
    ),
    "the skill named mid-prompt starts nothing": PromptCase(f"please {IMPLEMENT}", {}),
}


@pytest.mark.parametrize("name", sorted(PROMPT_CASES))
def test_the_prompt_decides_by_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], codex_state: Path, name: str
) -> None:
    case = PROMPT_CASES[name]
    repo = make_repo(tmp_path / "repo")
    if case.open_flow:
        pin = pinned(Flow.folder_of(SESSION_ID), repo, str(uuid.uuid4()), {})
        pin.data["stops"] = []  # work under way: not a finished flow
        pin.data["version"] = case.flow_version  # an older one's records cannot be checked
        pin.save()
    payload = {
        "session_id": SESSION_ID,
        "turn_id": "019a0000-0000-7000-8000-000000000002",
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": case.prompt,
    }
    prompt_flow.prompt(payload, case.host)
    answer = answer_of(capsys)
    assert set(answer) == set(case.answer), answer
    for key, phrase in case.answer.items():
        assert phrase in json.dumps(answer[key]), answer
    flow = Flow.load(SESSION_ID)
    assert (flow is not None and flow.spec_argument == "specs/missing.md") is case.pinned
    assert outcomes(codex_state) == case.outcome


def test_a_prompt_with_no_session_is_an_input_error() -> None:
    with pytest.raises(hook_io.HookInputError, match="no session_id"):
        prompt_flow.prompt({"prompt": IMPLEMENT, "cwd": "/"}, TRUSTED)


# --- the pieces: the escalation mark, the gate's own block count -------------------------------


@pytest.mark.parametrize(
    ("message", "escalates"),
    [
        ("ESCALATE: AC-1 cannot pass", True),
        ("Summary\n  ESCALATE: AC-2 needs a human", True),
        ("All done, no need to ESCALATE: nothing", False),
        ("escalate: lower case is no escalation", False),
        ("", False),
        (None, False),
    ],
)
def test_an_escalation_is_a_line_that_starts_with_the_mark(
    message: str | None, escalates: bool
) -> None:
    assert prompt_flow.escalates(message) is escalates


def _pin(tmp_path: Path) -> Flow:
    folder = tmp_path / "flow"
    folder.mkdir()
    return Flow(
        folder,
        {"version": STATE_VERSION, "session_id": "s", "status": "open", "repo": str(tmp_path)},
    )


def test_blocks_without_progress_end_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEPTANCE_HOOK_MAX_IDLE_BLOCKS", "2")
    pin = _pin(tmp_path)
    count = caps.StopCount.of(pin)
    reasons = []
    for _ in range(3):
        count = count.after_block("tree-1")
        reasons.append(caps.force_reason(count))
        count.save(pin)
    assert reasons[:2] == [None, None]
    assert reasons[2] is not None and "left the working tree as it was" in reasons[2]
    saved = Flow(pin.folder, json.loads((pin.folder / "flow.json").read_text()))
    assert caps.StopCount.of(saved) == count


def test_blocks_with_progress_end_at_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEPTANCE_HOOK_MAX_BLOCKS", "3")
    count = caps.StopCount(0, 0, None)
    reasons = []
    for tree in ("a", "b", "c", "d"):
        count = count.after_block(tree)
        reasons.append(caps.force_reason(count))
    assert reasons[:3] == [None, None, None]
    assert reasons[3] is not None and "ACCEPTANCE_HOOK_MAX_BLOCKS=3" in reasons[3]


def test_an_unfingerprinted_tree_never_counts_as_progress() -> None:
    count = caps.StopCount(0, 0, None).after_block(None).after_block(None)
    assert count.idle == 1  # no fingerprint: a block of its own, never "the same tree"...
    assert count.blocks == 2  # ...but the total cap still counts it


def test_a_damaged_count_starts_again_from_zero(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    pin.data[caps.STOP_COUNT_KEY] = {"blocks": "many", "idle": 1}
    assert caps.StopCount.of(pin) == caps.StopCount(0, 0, None)


# --- the kernel names no host ------------------------------------------------------------------

DECISIONS = ("stop_decision", "prompt_flow", "caps", "hosts", "gate", "pin", "pinned_flow")


@pytest.mark.parametrize("module", DECISIONS)
def test_no_decision_imports_a_host_adapter(module: str) -> None:
    """What differs between hosts reaches a decision as its adapter or contract, passed in:
    a decision module that imported a host's module could branch on it."""
    path = Path(prompt_flow.__file__).with_name(f"{module}.py")
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    hosts = {name for name in imported if name.rsplit(".", 1)[-1].startswith("host_")}
    assert not hosts, f"{path.name} imports {sorted(hosts)}"


def test_a_host_cap_below_the_gates_forces_the_stop_the_host_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A host that lets a session out after 2 blocks: the gate forces the 3rd itself, saying
    so, rather than leaving the host to end the session unrecorded."""
    contract = dataclasses.replace(host_claude.CONTRACT, block_cap=2)
    forced = []
    for index in range(3):
        payload = {**codex_stop(tmp_path, "done"), "stop_hook_active": index > 0}
        forced.append(caps.block_unknown("damaged state", payload, contract))
        capsys.readouterr()
    assert forced[:2] == [None, None]
    assert forced[2] is not None and "the host's own cap of 2 blocks" in forced[2]


@pytest.fixture
def gate_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter the gate verifies with, as the installed hooks are told it."""
    monkeypatch.setenv("ACCEPTANCE_GATE_PYTHON", support.gate_python.EXECUTABLE)


def implement_in(repo: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The prompt hook's answer to a prompt that pins the project's spec."""
    payload = {
        "session_id": SESSION_ID,
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "$acceptance-implement specs/feature.md",
    }
    prompt_flow.prompt(payload, TRUSTED)
    return answer_of(capsys)


def test_no_interpreter_for_the_gate_is_told_at_the_prompt_on_every_host(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    codex_state: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No Python with pytest-acceptance for the gate: every /done of the flow will be
    refused, and the prompt that pinned it says so, in the host's words."""
    monkeypatch.setenv("ACCEPTANCE_GATE_PYTHON", str(tmp_path / "no-such-python"))
    repo = make_repo(tmp_path / "repo")
    answer = implement_in(repo, capsys)
    assert "no Python with pytest-acceptance was found" in answer["systemMessage"], answer
    assert "/pytest-acceptance:escalate" not in answer["systemMessage"]  # the host's words


def test_a_declaration_the_pin_cannot_hold_is_told_at_the_prompt_on_every_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], codex_state: Path, gate_python: None
) -> None:
    """`acceptance_reads` naming a folder inside the project cannot be pinned: the gate will
    refuse every run of the flow, and the person who typed the prompt learns it there, in
    the host's words, as on Claude Code (pin.notices, one text for all hosts)."""
    repo = make_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    (repo / "pytest.ini").write_text("[pytest]\nacceptance_reads = src\n")
    answer = implement_in(repo, capsys)
    assert "is inside the project" in answer["systemMessage"], answer
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("pytest-acceptance pinned the spec") and "src" in context


def test_a_pin_that_holds_tells_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], codex_state: Path, gate_python: None
) -> None:
    """The control: the same prompt, nothing declared: the pin's note only."""
    repo = make_repo(tmp_path / "repo")
    answer = implement_in(repo, capsys)
    assert "systemMessage" not in answer or "is inside" not in answer["systemMessage"], answer
    flow = Flow.load(SESSION_ID)
    assert flow is not None and pin.notices(flow) == []
