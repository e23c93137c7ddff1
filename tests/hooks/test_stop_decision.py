"""The stop's decision matrix and the /done gate's decision, in process, as one table.

The flow's end (flow_end.py, transcript_pin.py) is decided here too, on the same records:
which prompt ends an unfinished flow, and which read of a transcript is tampering.

Each case writes a transcript in the CLI 2.1.328 shape (TranscriptBuilder), a pinned flow in
a temporary plugin state, and asks `stop_decision.judge` (or `skill_call`) for its answer,
in milliseconds. The gate's run and the scan for processes the session left are stand-ins
here (fields of `stop_decision.Checks`): a recorded GateResult judged by the gate's own
`done_problem` / `escalate_problem`, and a list of processes. The gate's real run is tested
in test_gate*.py and, with the hooks as subprocesses, in test_implement_stop_hook.py; what
this table proves is the decision taken on what those return, and when a stored result may
stand for the stop (the `reuse` the gate is asked with).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import PLUGIN, SESSION_ID, TranscriptBuilder, another_plugin, make_repo
from pinning import collected

from pytest_acceptance.gate import (
    flow_end,
    flow_state,
    gate,
    hook_io,
    stop_decision,
    transcript_pin,
)
from pytest_acceptance.gate.gate_result import CriterionOutcome, GateResult
from pytest_acceptance.gate.transcript import Transcript, gated_skill


def outcome(status: str) -> GateResult:
    """A complete gate run of the one pinned criterion, AC-1, ending `status`."""
    return GateResult(
        fingerprint="tree:1",
        fingerprint_after="tree:1",
        at=0.0,
        returncode=0 if status == "passed" else 1,
        tail="",
        spec_sha256=None,
        status="pass" if status == "passed" else "fail",
        exit_code=0 if status == "passed" else 1,
        complete=True,
        selected=1,
        criteria=(CriterionOutcome("AC-1", "works", status, "", "bash"),),
    )


PASSED, FAILED = outcome("passed"), outcome("failed")
# The flow's records as the hooks write them (flow_records.py): an escalation a run never
# backed (the flow pinned no spec), and a stop that blocked.
ESCALATED = {"skill": "escalate", "at": 1.0, "fingerprint": None, "run": None}
BLOCKED = {"decision": "block", "at": 1.0, "checked_from": 1.0}
NO_VERDICT = GateResult("tree:1", "tree:1", 0.0, 1, "", None, error="no verdict")


@dataclass(frozen=True)
class Case:
    steps: tuple[str, ...]
    blocked: bool
    words: str = ""
    result: GateResult = PASSED
    reuse: bool | None = None  # how the gate was asked; None: it was not asked
    payload: dict[str, Any] = field(default_factory=dict)
    escaped: tuple[str, ...] = ()
    pin: dict[str, Any] = field(default_factory=dict)


CASES = {
    "no verify, no terminal": Case((), True, "have not verified it"),
    "done without verify": Case(("done",), True, "without /pytest-acceptance:verify"),
    "escalate without verify": Case(("escalate",), True, "without /pytest-acceptance:verify"),
    "verify, no terminal": Case(("verify",), True, "neither /pytest-acceptance:done nor"),
    "done on a pass": Case(("verify", "done"), False, reuse=True),
    "done on a failure": Case(("verify", "done"), True, "AC-1 works (failed", FAILED, True),
    "done on no verdict": Case(("verify", "done"), True, "no verdict", NO_VERDICT, True),
    "a tool call after done": Case(("verify", "done", "bash"), False, reuse=False),
    "a background task before done": Case(("background", "verify", "done"), False, reuse=False),
    "a subagent before done": Case(("agent", "verify", "done"), False, reuse=False),
    "a sidechain line": Case(("sidechain", "verify", "done"), False, reuse=False),
    "a call beside done": Case(("verify", "done", "beside"), False, reuse=False),
    "an ended task listed": Case(
        ("verify", "done"),
        False,
        reuse=False,
        payload={"background_tasks": [{"id": "b1", "status": "completed"}]},
    ),
    "a running task listed": Case(
        ("verify", "done"),
        True,
        "background task b1",
        payload={"background_tasks": [{"id": "b1", "status": "running"}]},
    ),
    "a process left": Case(("verify", "done"), True, "process 42", escaped=("process 42",)),
    "escalate on a failure": Case(("verify", "escalate"), False, result=FAILED, reuse=True),
    "escalate after done": Case(("verify", "done", "escalate"), False, result=FAILED, reuse=True),
    "done and escalate without verify": Case(
        ("done", "escalate"), True, "without /pytest-acceptance:verify"
    ),
    "escalate on a pass": Case(("verify", "escalate"), True, "nothing to escalate", reuse=True),
    "escalate the gate let through": Case(
        ("verify", "escalate"), False, pin={"terminal": ESCALATED}
    ),
    "unfinished task list": Case(("verify", "todo", "done"), True, "task list", reuse=True),
    "a last message admitting manual work": Case(
        ("verify", "done", "manual"), True, "requires manual", reuse=True
    ),
    # A skill counts only where our skill ran in the main conversation, as a call or typed.
    **{
        f"a done that was {outcome}": Case(
            ("verify", f"done:{outcome}"), True, "neither /pytest-acceptance:done nor"
        )
        for outcome in ("denied", "refused", "pending")
    },
    **{
        f"a verify that was {outcome}": Case(
            (f"verify:{outcome}", "done"), True, "without /pytest-acceptance:verify"
        )
        for outcome in ("denied", "refused", "pending")
    },
    "skills of a subagent": Case(
        ("agent", "verify:sidechain", "done:sidechain"), True, "have not verified"
    ),
    "another plugin's skills": Case(("other verify", "other done"), True, "have not verified"),
    "another plugin's bare done": Case(
        ("verify", "bare other done"), True, "neither /pytest-acceptance:done nor"
    ),
    "text that names the skills": Case(("mentions",), True, "have not verified"),
    "typed commands": Case(("typed verify", "typed done"), False, reuse=True),
    "a skill name with a leading slash": Case(("verify", "/done"), False, reuse=True),
    "no pinned spec": Case(("verify", "done"), True, "no pinned spec", pin={"problem": "gone"}),
    "no pinned spec, escalated": Case(
        ("verify", "escalate"),
        False,
        pin={"problem": "gone", "terminal": ESCALATED},
    ),
}


def transcript_for(repo: Path, steps: tuple[str, ...], prompt_id: str) -> TranscriptBuilder:
    """The pinned /implement, then `steps`; a step `skill:how` calls our skill with that
    outcome ("denied", "refused", "pending") or from a subagent ("sidechain")."""
    builder = TranscriptBuilder(repo, session_id=SESSION_ID)
    builder.command(f"{PLUGIN}:implement", "specs/feature.md", prompt_id=prompt_id)
    spec = repo / "specs" / "feature.md"
    for step in steps:
        name, _, how = step.partition(":")
        called: dict[str, Any] = {"sidechain": True} if how == "sidechain" else {}
        if how and how != "sidechain":
            called["outcome"] = how
        if name == "verify":
            builder.verify(spec, **called)
        elif name == "done":
            builder.done(**called)
        elif step == "escalate":
            builder.escalate()
        elif step.startswith(("other ", "bare other ")):
            skill = step.rpartition(" ")[2]
            called_as = skill if step.startswith("bare ") else f"other-plugin:{skill}"
            builder.skill(called_as, skill_dir=another_plugin(repo.parent) / "skills" / skill)
        elif step == "mentions":
            mention_the_skills(builder)
        elif step == "typed verify":
            builder.command(f"{PLUGIN}:verify", str(spec))
        elif step == "typed done":
            builder.command(f"{PLUGIN}:done")
        elif step == "/done":
            builder.skill(f"/{PLUGIN}:done")
        elif step == "bash":
            builder.tool("Bash", {"command": "echo 1 > value.txt"})
        elif step == "background":
            builder.tool("Bash", {"command": "ruff check .", "run_in_background": True})
        elif step == "agent":
            builder.tool("Agent", {"description": "tests", "prompt": "run the tests"})
        elif step == "sidechain":
            builder.tool("Bash", {"command": "pytest"}, sidechain=True)
        elif step == "beside":
            beside_the_last_call(builder)
        elif step == "todo":
            builder.todo_write([("write the docs", "pending")])
        elif step == "manual":
            builder.text("Done, but AC-2 requires manual testing.")
    return builder


def mention_the_skills(builder: TranscriptBuilder) -> None:
    """Our skills' names in the agent's text, a user's prompt and a tool's output."""
    builder.text("I ran /pytest-acceptance:verify and /pytest-acceptance:done, all good.")
    builder.prompt("FYI <command-name>/pytest-acceptance:done</command-name> is how it ends.")
    builder.tool(
        "Bash",
        {"command": "cat old-session.jsonl"},
        "<command-message>pytest-acceptance:done</command-message>\n"
        "<command-name>/pytest-acceptance:done</command-name>",
    )


def beside_the_last_call(builder: TranscriptBuilder) -> None:
    """A Bash call written as part of the assistant message that made the last tool call."""
    last = next(line for line in reversed(builder.lines) if line.get("type") == "assistant")
    block = {"type": "tool_use", "id": "toolu_beside", "name": "Bash", "input": {"command": "x"}}
    message = {**last["message"], "content": [block]}
    builder.add({**last, "uuid": str(uuid.uuid4()), "message": message})


def pinned(folder: Path, repo: Path, prompt_id: str, extra: dict[str, Any]) -> flow_state.Flow:
    data = {
        "version": flow_state.STATE_VERSION,
        "session_id": SESSION_ID,
        "status": "open",
        "repo": str(repo),
        "spec_path": str(repo / "specs" / "feature.md"),
        "spec_name": "feature.md",
        "args": "specs/feature.md",
        "prompt_id": prompt_id,
        "collection": collected(criteria=[{"id": "AC-1", "title": "works"}]),
        **extra,
    }
    folder.mkdir(parents=True, exist_ok=True)
    transcript_pin.take(folder, None)  # as /implement does, before the CLI wrote a line
    return flow_state.Flow(folder, data)


def stand_in_gate(result: GateResult, calls: list[tuple[str, bool]]) -> stop_decision.GateJudge:
    """gate.judge over a recorded result: the gate's own checks of it, no run."""

    def judge(
        pin: flow_state.Flow, skill: str, deadline_at: float, reuse: bool
    ) -> tuple[str | None, str | None]:
        calls.append((skill, reuse))
        problem = (gate.done_problem if skill == "done" else gate.escalate_problem)(pin, result)
        if problem is not None:
            return f"The gate verified the spec pinned at /implement itself: {problem}.", None
        return None, result.fingerprint

    return judge


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_stop_decides_by_the_table(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    repo = make_repo(tmp_path / "repo")
    prompt_id = str(uuid.uuid4())
    builder = transcript_for(repo, case.steps, prompt_id)
    path = builder.write(tmp_path / "session.jsonl")
    transcript = Transcript(path.read_bytes(), str(path))
    pin = pinned(tmp_path / "state", repo, prompt_id, case.pin)
    situation = stop_decision.pinned_flow.resolve(pin, transcript)
    assert situation.flow is not None and situation.tamper is None, situation.tamper
    calls: list[tuple[str, bool]] = []
    checks = stop_decision.Checks(stand_in_gate(case.result, calls), lambda _: list(case.escaped))
    payload = {"session_id": SESSION_ID, "cwd": str(repo), "background_tasks": [], **case.payload}
    reason, _ = stop_decision.judge(situation.flow, pin, transcript, payload, checks)
    assert (reason is not None) is case.blocked, reason
    assert case.words in (reason or ""), reason
    assert [reuse for _, reuse in calls] == ([] if case.reuse is None else [case.reuse])


def test_a_subagent_transcript_beside_the_session_takes_the_reuse(tmp_path: Path) -> None:
    """CLI 2.1.328 writes a subagent's transcript to <session>/subagents/agent-<id>.jsonl:
    one there means something of the session ran beside the main conversation."""
    repo = make_repo(tmp_path / "repo")
    prompt_id = str(uuid.uuid4())
    path = transcript_for(repo, ("verify", "done"), prompt_id).write(tmp_path / "session.jsonl")
    (tmp_path / "session" / "subagents").mkdir(parents=True)
    (tmp_path / "session" / "subagents" / "agent-a1.jsonl").write_text("{}\n")
    transcript = Transcript(path.read_bytes(), str(path))
    pin = pinned(tmp_path / "state", repo, prompt_id, {})
    flow = stop_decision.pinned_flow.resolve(pin, transcript).flow
    assert flow is not None
    calls: list[tuple[str, bool]] = []
    checks = stop_decision.Checks(stand_in_gate(PASSED, calls), lambda _: [])
    payload = {"session_id": SESSION_ID, "cwd": str(repo)}
    assert stop_decision.judge(flow, pin, transcript, payload, checks) == (None, None)
    assert calls == [("done", False)]


DAEMON = "python3 swap.py (pid 4242, its environment names this session)"


@pytest.mark.parametrize(
    ("skill", "steps", "result", "escaped", "denied", "words"),
    [
        ("done", (), PASSED, (), True, "Must call /pytest-acceptance:verify"),
        ("done", ("verify",), FAILED, (), True, "AC-1 works (failed"),
        ("done", ("verify",), PASSED, (), False, ""),
        ("done", ("verify",), PASSED, (DAEMON,), True, "1 process(es) running outside"),
        ("escalate", ("verify",), FAILED, (DAEMON,), True, "1 process(es) running outside"),
    ],
)
def test_the_done_gate_decides_on_the_gates_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    skill: str,
    steps: tuple[str, ...],
    result: GateResult,
    escaped: tuple[str, ...],
    denied: bool,
    words: str,
) -> None:
    """/done is let through only on the gate's own passing run, asked never to reuse, and
    only while no process of the session runs beside it (one could make the tree pass
    while the run reads it, and be gone by the stop): the gate does not run then. So is
    /escalate: a run that shows a failure backs it only when nothing made it fail."""
    repo = make_repo(tmp_path / "repo")
    prompt_id = str(uuid.uuid4())
    builder = transcript_for(repo, steps, prompt_id)
    builder.skill(f"{PLUGIN}:{skill}", outcome="pending")
    path = builder.write(tmp_path / "session.jsonl")
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "data"))
    pinned(flow_state.Flow.folder_of(SESSION_ID), repo, prompt_id, {}).save()
    calls: list[tuple[str, bool]] = []
    scanned: list[str] = []

    def scan(session: str) -> list[str]:
        scanned.append(session)
        return list(escaped)

    checks = stop_decision.Checks(stand_in_gate(result, calls), scan)
    payload = {
        "session_id": SESSION_ID,
        "transcript_path": str(path),
        "cwd": str(repo),
        "tool_name": "Skill",
        "tool_input": {"skill": f"{PLUGIN}:{skill}"},
    }
    stop_decision.skill_call(payload, {}, checks)
    hook_io.finish()
    written = capsys.readouterr().out
    answer = json.loads(written) if written else {}
    specific = answer.get("hookSpecificOutput", {})
    assert (specific.get("permissionDecision") == "deny") is denied, answer
    assert words in specific.get("permissionDecisionReason", "")
    assert scanned == ([] if not steps else [SESSION_ID])
    assert calls == ([] if not steps or escaped else [(skill, False)])


# --- the flow's end: what the hooks read is pinned, only the person's act ends it ------------

INTERRUPT = "[Request interrupted by user]"


def interrupt(builder: TranscriptBuilder) -> None:
    content = [{"type": "text", "text": INTERRUPT}]
    builder.add(builder._base("user", message={"role": "user", "content": content}))


@dataclass(frozen=True)
class End:
    steps: tuple[str, ...]  # after the pinned /implement
    prompt: str = "What is the capital of France?"
    released: bool = False
    pin: dict[str, Any] = field(default_factory=dict)
    acted: bool = False  # the guard hook noted a tool call of the session


ENDS = {
    "interrupted before any work": End(("interrupt",), released=True),
    "no interrupt": End(()),
    "a resume after the interrupt": End(("interrupt",), prompt="continue"),
    "the model answered first": End(("text", "interrupt")),
    "a tool call first": End(("interrupt",), acted=True),
    "a stop first": End(("interrupt",), pin={"last_stop": BLOCKED}),
    "a prompt counted before": End(("interrupt",), pin={"prompts_after_pin": 1}),
    "a copy of the implement after work": End(("text", "copy", "interrupt")),
    "read history rewritten": End(("text", "read", "rewrite", "interrupt")),
}


@pytest.mark.parametrize("name", sorted(ENDS))
def test_only_the_persons_act_ends_an_unfinished_flow(tmp_path: Path, name: str) -> None:
    """The prompt hook's decision at the first typed prompt after the pin: an interrupt
    before any work ends the flow; work, a stop, an earlier prompt, a resume, or history
    rewritten since a hook read it, never."""
    end = ENDS[name]
    repo = make_repo(tmp_path / "repo")
    prompt_id = str(uuid.uuid4())
    builder = transcript_for(repo, (), prompt_id)
    path = tmp_path / "session.jsonl"
    pin = pinned(tmp_path / "state", repo, prompt_id, end.pin)
    for step in end.steps:
        if step == "interrupt":
            interrupt(builder)
        elif step == "text":
            builder.text("Starting on AC-1.")
        elif step == "copy":
            builder.command(f"{PLUGIN}:implement", "specs/feature.md", prompt_id=prompt_id)
        elif step == "read":
            transcript = Transcript(builder.write(path).read_bytes(), str(path))
            assert stop_decision.pinned_flow.resolve(pin, transcript).tamper is None
        elif step == "rewrite":
            builder.lines[:] = [line for line in builder.lines if line.get("type") != "assistant"]
    if end.acted:
        flow_end.note_agent_acted(pin)
    builder.write(path)
    payload = {"prompt": end.prompt, "transcript_path": str(path), "prompt_id": "p2"}
    assert flow_end.released_by_interrupt(pin, payload) is end.released


@pytest.mark.parametrize(
    ("change", "tampered"),
    [
        ("nothing", False),
        ("a line appended", False),
        ("a line half written", False),
        ("a read line changed", True),
        ("truncated", True),
        ("the record deleted", True),
        ("the record in another shape", True),
    ],
)
def test_a_read_prefix_that_changed_is_tampering(
    tmp_path: Path, change: str, tampered: bool
) -> None:
    """What a hook read of a transcript (its whole lines) is pinned; appending is what the
    CLI does, anything else to what was read is tampering, as is a record gone or reshaped."""
    folder = tmp_path / "flow"
    folder.mkdir()
    transcript_pin.take(folder, None)
    path = str(tmp_path / "session.jsonl")
    first = b'{"type":"user","n":1}\n{"type":"assistant","n":2}\n'
    assert transcript_pin.check(folder, path, first, "spec.md") is None
    later = {
        "nothing": first,
        "a line appended": first + b'{"type":"user","n":3}\n',
        "a line half written": first + b'{"type":"us',
        "a read line changed": first.replace(b'"n":2', b'"n":9'),
        "truncated": first[:20],
    }.get(change, first)
    if change == "the record deleted":
        (folder / transcript_pin.FILE_NAME).unlink()
    if change == "the record in another shape":
        record = json.loads((folder / transcript_pin.FILE_NAME).read_text())
        record["reads"][0]["length"] = "0"
        (folder / transcript_pin.FILE_NAME).write_text(json.dumps(record))
    reason = transcript_pin.check(folder, path, later, "spec.md")
    assert (reason is not None) is tampered, reason
    if tampered:
        assert "spec.md" in reason and "a person must look" in reason
    else:  # what was read now is pinned: the appended line may not change either
        assert transcript_pin.check(folder, path, later.replace(b"n", b"m"), "spec.md")


_FIRST = b'{"type":"user","n":1}\n{"type":"assistant","n":2}\n'
_GUARD_READ = _FIRST + b'{"type":"user","n":3}\n{"type":"assistant","n":4}\n'
_GUARD_READS = [_FIRST + b'{"type":"user","n":3}\n', _GUARD_READ]


@pytest.mark.parametrize(
    ("change", "tampered"),
    [
        ("nothing", False),
        ("a line appended", False),
        ("a line of the checked prefix changed", True),
        ("a line only a guard read changed", True),
        ("truncated inside what a guard read", True),
        ("a guard's tail damaged in the record", True),
        ("rewritten before a guard's read", True),
    ],
)
def test_what_the_guard_read_is_pinned_as_surely(
    tmp_path: Path, change: str, tampered: bool
) -> None:
    """The guard before each tool call hashes only the lines written since the hooks' last
    read; the next full check hashes all of it again, so a rewrite of any line a hook read,
    made before or after the guard's read, is tampering there, as it was when every read
    hashed the whole transcript."""
    folder = tmp_path / "flow"
    folder.mkdir()
    transcript_pin.take(folder, None)
    path = str(tmp_path / "session.jsonl")
    assert transcript_pin.check(folder, path, _FIRST, "spec.md") is None
    rewritten = _GUARD_READ.replace(b'"n":2', b'"n":9')
    for read in _GUARD_READS:
        if change == "rewritten before a guard's read":
            read = read.replace(b'"n":2', b'"n":9')
        transcript_pin.note_tail(folder, path, read)
    record = json.loads((folder / transcript_pin.FILE_NAME).read_text())
    assert len(record["reads"][0]["tails"]) == 2  # hashed on their own, nothing before them
    if change == "a guard's tail damaged in the record":
        record["reads"][0]["tails"][1][0] = record["reads"][0]["tails"][0][0]
        (folder / transcript_pin.FILE_NAME).write_text(json.dumps(record))
    later = {
        "a line appended": _GUARD_READ + b'{"type":"user","n":5}\n',
        "a line of the checked prefix changed": rewritten,
        "rewritten before a guard's read": rewritten,
        "a line only a guard read changed": _GUARD_READ.replace(b'"n":3', b'"n":7'),
        "truncated inside what a guard read": _GUARD_READS[0],
    }.get(change, _GUARD_READ)
    reason = transcript_pin.check(folder, path, later, "spec.md")
    assert (reason is not None) is tampered, reason
    if not tampered:  # one prefix again, checked whole from now on
        record = json.loads((folder / transcript_pin.FILE_NAME).read_text())
        assert record["reads"][0]["tails"] == []
        assert transcript_pin.check(folder, path, later.replace(b"n", b"m"), "spec.md")


def test_a_record_of_the_earlier_version_still_pins_its_prefix(tmp_path: Path) -> None:
    """A record written before the guard's tails (version 1: a prefix alone) is read as
    what it pins: a flow open across the upgrade keeps its history."""
    folder = tmp_path / "flow"
    folder.mkdir()
    path = str(tmp_path / "session.jsonl")
    digest = hashlib.sha256(_FIRST).hexdigest()
    read = {"path": path, "length": len(_FIRST), "sha256": digest}
    (folder / transcript_pin.FILE_NAME).write_text(json.dumps({"version": 1, "reads": [read]}))
    assert transcript_pin.check(folder, path, _FIRST.replace(b"n", b"m"), "spec.md")
    assert transcript_pin.check(folder, path, _GUARD_READ, "spec.md") is None


@pytest.mark.parametrize(
    ("tool_name", "tool_input", "gated"),
    [
        ("Skill", {"skill": "pytest-acceptance:done"}, ("done", True)),
        ("Skill", {"skill": "/pytest-acceptance:escalate", "args": "AC-1"}, ("escalate", True)),
        ("Skill", {"skill": " done "}, ("done", False)),  # bare: may resolve to ours
        ("Skill", {"skill": "pytest-acceptance:verify"}, None),
        ("Skill", {"skill": "pytest-acceptance:implement"}, None),
        ("Skill", {"skill": "other-plugin:done"}, None),
        ("Skill", {"skill": ["pytest-acceptance:done"]}, None),
        ("Skill", "pytest-acceptance:done", None),
        ("Bash", {"skill": "pytest-acceptance:done"}, None),
    ],
)
def test_the_gate_hook_answers_other_calls_before_loading_the_gate(
    tool_name: str, tool_input: object, gated: tuple[str, bool] | None
) -> None:
    """The /done and /escalate gate's hook lets every other call through on this one reading
    of the payload (hooks/pretool_gate_hook.py), before it imports the gate; ours, bare or
    qualified, go on to stop_decision.skill_call."""
    payload = {"tool_name": tool_name, "tool_input": tool_input}
    assert gated_skill(payload) == gated
