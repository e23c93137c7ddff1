"""The Stop hook as the CLI runs it: the real hook command from hooks.json as a subprocess,
on a transcript in the shape CLI 2.1.328 writes, with real git repositories, verdict files
and gate runs. The decision matrix and which skill calls count are decided in process, as a
table (test_stop_decision.py); here, what needs the real hook: its runs of the gate, the
pin at /implement, the extra layers, the block cap and input it cannot read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hook_transcripts import (
    CRITERION,
    SPEC_TEXT,
    TranscriptBuilder,
    another_plugin,
    ask_gate,
    criterion,
    expansion_payload,
    make_fail,
    make_pass,
    make_repo,
    run_hook,
    stop_payload,
    write_verdict,
)


def stop(builder: TranscriptBuilder, repo: Path, tmp_path: Path, **kwargs: object) -> object:
    transcript = builder.write(tmp_path / "session.jsonl")
    env = kwargs.pop("env", None)
    return run_hook("Stop", stop_payload(transcript, repo, **kwargs), env=env)  # type: ignore[arg-type]


def verified_flow(repo: Path, spec: Path) -> TranscriptBuilder:
    """/implement, work, /verify (which ran pytest --acceptance: its verdict is written now)."""
    builder = TranscriptBuilder(repo)
    builder.prompt("Please implement the spec.")
    builder.implement("specs/feature.md")
    builder.tool("Bash", {"command": "echo VALUE = 2 > app.py"}, "")
    make_pass(repo)
    builder.verify(spec)
    return builder


# --- the flow's two ends ----------------------------------------------------------------------


def test_blocks_without_done(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.tool("Bash", {"command": "ls"}, "app.py")
    builder.text("All criteria are implemented, I am done.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "[pytest-acceptance stop guard]" in result.reason
    assert "/pytest-acceptance:verify" in result.reason
    assert str(spec) in result.reason


def test_allows_with_done(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    builder.text("## Implementation Complete\nAC-1 verified.")
    result = stop(builder, repo, tmp_path)
    assert not result.blocked, result.reason
    assert result.output is None


def test_allows_with_escalate(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    make_fail(repo)
    builder.escalate()
    builder.text("## Escalation: Criterion AC-1 (works)")
    result = stop(builder, repo, tmp_path)
    assert not result.blocked, result.reason
    assert result.output is None


def test_fresh_stack(repo: Path, spec: Path, tmp_path: Path) -> None:
    """One flow per session: a second /implement after the first flow finished (the gate let
    its /done through and the stop after it was allowed) starts a fresh flow, and the first
    one's /done no longer counts. While a flow is open and not finished, a second /implement
    is refused and changes nothing (tests/hooks/attacks/test_flow_transcript.py)."""
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    stopped = stop(builder, repo, tmp_path)  # the first flow was finished
    assert not stopped.blocked, stopped.reason
    builder.implement("specs/feature.md")
    builder.text("Started over.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "have not verified" in result.reason


# --- the decision matrix: its other rows, and which skill calls count, are decided in process
# (test_stop_decision.py) ------------------------------------------------------------------


def test_a_session_without_implement_is_not_held(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.prompt("hello")
    builder.text("Finished.")
    result = stop(builder, repo, tmp_path)
    assert result.output is None


def test_verified_but_failing_flow_names_the_failing_criteria(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    write_verdict(
        repo,
        spec,
        "fail",
        [
            criterion(spec, "AC-1"),
            criterion(spec, "AC-2", "failed", "tests-pass", "Expected 'queued'"),
        ],
    )
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "neither /pytest-acceptance:done nor /pytest-acceptance:escalate" in result.reason
    assert "AC-2 tests-pass (failed: Expected 'queued')" in result.reason
    assert "AC-1" not in result.reason


# --- a skill counts only if it really ran --------------------------------------------------


def test_another_plugins_implement_starts_no_flow(repo: Path, tmp_path: Path) -> None:
    other = another_plugin(tmp_path)
    builder = TranscriptBuilder(repo)
    builder.command("other-plugin:implement", "specs/feature.md")
    builder.command("implement", "specs/feature.md", skill_dir=other / "skills" / "implement")
    builder.skill("implement", "specs/feature.md", skill_dir=other / "skills" / "implement")
    builder.text("Finished.")
    result = stop(builder, repo, tmp_path)
    assert result.output is None


def test_bare_skill_names_count_when_they_ran_our_skill(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """The CLI resolves a bare "done" to ours when no other skill has that name."""
    builder = TranscriptBuilder(repo)
    builder.command("implement", "specs/feature.md", prompt_id="prompt-bare")
    payload = expansion_payload(repo, "specs/feature.md", "prompt-bare")
    run_hook("UserPromptExpansion", {**payload, "command_name": "implement"})
    builder.skill("verify", f"{spec}")
    make_pass(repo)
    builder.skill("done")
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


def test_implement_called_through_the_skill_tool_starts_a_flow(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md", via="tool")
    builder.text("Finished.")
    assert stop(builder, repo, tmp_path).blocked


def test_second_implement_is_judged_on_its_own(repo: Path, spec: Path, tmp_path: Path) -> None:
    """An abandoned first flow (never verified) does not block a finished second one."""
    builder = TranscriptBuilder(repo)
    builder.implement("specs/other.md")
    builder.text("Switching specs.")
    builder.implement("specs/feature.md")
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


# --- evidence over claims --------------------------------------------------------------------


def test_done_on_a_failing_tree_blocks_whatever_verdict_json_says(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """The agent's own verdict.json is never evidence: the gate runs the spec itself."""
    builder = verified_flow(repo, spec)
    make_fail(repo)
    write_verdict(repo, spec, "pass")  # forged: says pass, with the current fingerprint
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "these criteria fail in the gate's own verification run: AC-1 works (failed" in (
        result.reason
    )
    assert "/pytest-acceptance:verify" in result.reason


def test_done_needs_no_verdict_file_at_all(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    (repo / ".acceptance" / "verdict.json").unlink()
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


def test_done_with_failing_criteria_names_them_and_not_the_passing_ones(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SPEC_TEXT + CRITERION.format("AC-3", "tests-pass", "false"))
    spec = repo / "specs" / "feature.md"
    builder = verified_flow(repo, spec)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-3 tests-pass (failed" in result.reason
    assert "AC-1 " not in result.reason


def test_done_with_manual_criteria_pending_points_to_escalate(tmp_path: Path) -> None:
    manual = "\n#### AC-9: looks right\n**Verification:**\n```yaml\nmethod: manual\n```\n"
    repo = make_repo(tmp_path / "repo", SPEC_TEXT + manual)
    spec = repo / "specs" / "feature.md"
    builder = verified_flow(repo, spec)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "manual criteria remain" in result.reason
    assert "AC-9 looks right" in result.reason
    assert "/pytest-acceptance:escalate" in result.reason


def test_the_gate_result_is_reused_on_the_same_tree(
    repo: Path, spec: Path, tmp_path: Path, plugin_state: Path
) -> None:
    """A second stop on the same tree costs no second run (the result is stored by tree
    fingerprint in the plugin's state), and a changed tree is verified again."""
    builder = verified_flow(repo, spec)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    (flow,) = (plugin_state / "flows").iterdir()
    assert json.loads((flow / "flow.json").read_text())["gate_runs"] == 1
    make_fail(repo)
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("command", "AC-1's command changed"),
        ("delete", "AC-1 was removed"),
        ("manual", "AC-1's method changed"),
    ],
)
def test_done_after_the_spec_was_weakened_blocks(
    repo: Path, spec: Path, tmp_path: Path, edit: str, words: str
) -> None:
    """The gate judges the spec pinned at /implement, and a changed spec blocks /done."""
    builder = verified_flow(repo, spec)
    text = spec.read_text()
    if edit == "command":
        text = text.replace("grep -qx 'VALUE = 2' app.py", "true")
    elif edit == "delete":
        text = "# Spec\n" + CRITERION.format("AC-2", "trivially true", "true")
    else:
        text = text.replace("method: bash", "method: manual").replace(
            "command: \"grep -qx 'VALUE = 2' app.py\"\n", ""
        )
    spec.write_text(text)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert words in result.reason
    assert "The spec changed since /implement started" in result.reason


def test_spec_replaced_by_a_symlink_blocks(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    trivial = repo / "trivial.md"
    trivial.write_text(SPEC_TEXT.replace("grep -qx 'VALUE = 2' app.py", "true"))
    spec.unlink()
    spec.symlink_to(trivial)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "replaced by a symbolic link" in result.reason


def test_spec_deleted_after_verify_blocks(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    spec.unlink()
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "was deleted or moved" in result.reason


def test_the_gate_runs_from_the_repository_root_for_a_subfolder_cwd(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    builder.done()
    transcript = builder.write(tmp_path / "session.jsonl")
    result = run_hook("Stop", stop_payload(transcript, repo / "specs"))
    assert not result.blocked, result.reason


def test_escalate_after_a_failing_gate_run_is_allowed(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    make_fail(repo)
    builder.escalate()
    result = stop(builder, repo, tmp_path)
    assert not result.blocked, result.reason


def test_the_later_of_done_and_escalate_decides(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    make_fail(repo)
    builder.escalate()
    builder.prompt("Go on, try once more.")
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


# --- the spec argument ---------------------------------------------------------------------


def test_implement_without_a_spec_cannot_end_as_done(repo: Path, tmp_path: Path) -> None:
    """A flow whose /implement pinned no spec has nothing the gate can verify: its stop is
    blocked with the reason and the way out (/escalate), never let through as done."""
    builder = TranscriptBuilder(repo)
    builder.implement("")
    builder.text("Error: /implement needs a spec file")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "named no spec file" in result.reason
    assert "/pytest-acceptance:escalate" in result.reason


def test_implement_with_a_missing_spec_file_cannot_end_as_done(repo: Path, tmp_path: Path) -> None:
    """Whatever the spec holds later (put back since, or written): /done is refused and the
    stop blocked; the /escalate that hands the flow to a human ends it."""
    builder = TranscriptBuilder(repo)
    builder.implement("specs/nope.md")
    builder.text("Error: spec file not found: specs/nope.md")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "does not exist" in result.reason and "specs/nope.md" in result.reason
    (repo / "specs" / "nope.md").write_text("# Spec\n\n#### AC-1: works\n")
    builder.verify(repo / "specs" / "nope.md")
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied and "no pinned spec to verify" in done.deny_reason, done.stdout
    builder.done(outcome="denied")
    escalated = ask_gate(builder, repo, tmp_path, "escalate")
    assert not escalated.denied, escalated.stdout
    builder.escalate()
    result = stop(builder, repo, tmp_path)
    assert not result.blocked, result.reason


def test_spec_argument_is_resolved_against_the_cwd_of_the_implement(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """`/implement "feature.md" extra words` run in specs/: first word, quotes allowed."""
    builder = TranscriptBuilder(repo / "specs")
    builder.implement('"feature.md" and be careful')
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


# --- extra layers: task lists and contradictions ---------------------------------------------


def test_unfinished_tasks_block_a_verified_done(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    first = builder.task_create("AC-1: works")
    builder.task_create("AC-2: documented")
    builder.task_update(first, "completed")
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "1 unfinished item(s): 'AC-2: documented' (pending)" in result.reason
    assert "ACCEPTANCE_HOOK_TODOS=0" in result.reason


def test_finished_and_deleted_tasks_allow_the_stop(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    first = builder.task_create("AC-1: works")
    second = builder.task_create("AC-2: obsolete")
    builder.task_create("never created", ran=False)
    builder.task_update(first, "completed")
    builder.task_update(second, "deleted")
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


def test_tasks_from_before_the_flow_do_not_count(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.task_create("an old chore")
    builder.implement("specs/feature.md")
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


def test_latest_todowrite_list_decides(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.todo_write([("AC-1", "completed"), ("AC-2", "in_progress")])
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert "'AC-2' (in_progress)" in result.reason
    builder.todo_write([("AC-1", "completed"), ("AC-2", "completed")])
    builder.todo_write([("AC-3", "pending")], ran=False)  # failed: not the list
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


def test_todo_layer_switch_off(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.task_create("AC-2: documented")
    builder.verify(spec)
    make_pass(repo)
    builder.done()
    assert not stop(builder, repo, tmp_path, env={"ACCEPTANCE_HOOK_TODOS": "0"}).blocked


@pytest.mark.parametrize(
    "last",
    [
        "Done! Note that AC-4 requires manual verification in a browser.",
        "Everything is complete, though deployment needs human approval.",
        "All set. I could not complete the migration, it Cannot Be Automated.",
        "Finished; the signing step needs\nmanual intervention.",
    ],
)
def test_done_contradicted_by_the_last_message_blocks(
    repo: Path, spec: Path, tmp_path: Path, last: str
) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    builder.text(last)
    result = stop(builder, repo, tmp_path, last=last)
    assert result.blocked
    assert "while /pytest-acceptance:done claims the work is complete" in result.reason


def test_contradiction_is_read_from_the_transcript_without_last_message(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    builder.assistant(
        [
            {"type": "text", "text": "## Implementation Complete"},
            {"type": "text", "text": "AC-2 still requires manual testing."},
        ]
    )
    builder.noise()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert '"requires manual"' in result.reason


def test_contradiction_layer_switch_off(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    env = {"ACCEPTANCE_HOOK_CONTRADICTIONS": "0"}
    last = "Done, but it needs human review."
    builder.text(last)  # the CLI's transcript holds the message that ended the turn
    assert not stop(builder, repo, tmp_path, last=last, env=env).blocked


def test_honest_summary_is_not_a_contradiction(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    last = "## Implementation Complete\n- AC-1: works ✓ (verified by pytest --acceptance)"
    builder.text(last)
    assert not stop(builder, repo, tmp_path, last=last).blocked


# --- never a trap ----------------------------------------------------------------------------


def test_block_cap_forces_the_stop_and_records_it(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    for _ in range(7):
        builder.tool("Bash", {"command": "make"}, "")
        builder.our_block()
    assert stop(builder, repo, tmp_path).blocked  # the 8th block
    builder.our_block()
    result = stop(builder, repo, tmp_path)
    assert not result.blocked
    assert "FORCED, NOT verified" in result.message
    assert "ACCEPTANCE_HOOK_MAX_BLOCKS=8" in result.message
    records = (repo / ".acceptance" / "forced-stops.jsonl").read_text().splitlines()
    record = json.loads(records[-1])
    assert record["spec"] == str(repo / "specs" / "feature.md")
    assert "have not verified" in record["open_reason"]
    assert "forced-stops" not in _git_status(repo)


def test_block_cap_counts_only_this_flows_blocks_of_this_hook(repo: Path, tmp_path: Path) -> None:
    """Blocks of an earlier flow (one that named a missing spec, so a new /implement replaced
    it) and another plugin's blocks do not count toward this flow's cap."""
    builder = TranscriptBuilder(repo)
    builder.implement("specs/missing.md")
    for _ in range(8):
        builder.our_block()
    builder.implement("specs/feature.md")  # a fresh flow starts a fresh count
    for _ in range(8):
        builder.stop_feedback("[another-plugin] tests are red")
    builder.text("I am done.")
    assert stop(builder, repo, tmp_path).blocked


def test_block_cap_is_configurable(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.our_block()
    builder.tool("Bash", {"command": "make"}, "")
    builder.our_block()
    result = stop(builder, repo, tmp_path, env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "2"})
    assert "FORCED" in result.message


def test_block_not_yet_in_the_lazily_written_transcript_still_counts(
    repo: Path, tmp_path: Path
) -> None:
    # The CLI flushes its transcript lazily: at the next stop the feedback line of the block
    # before may be missing, but stop_hook_active says that block happened.
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.text("I am done.")
    env = {"ACCEPTANCE_HOOK_MAX_BLOCKS": "1"}
    assert stop(builder, repo, tmp_path, env=env, stop_hook_active=False).blocked
    result = stop(builder, repo, tmp_path, env=env, stop_hook_active=True)
    assert not result.blocked
    assert "FORCED" in result.message and "ACCEPTANCE_HOOK_MAX_BLOCKS=1" in result.message


def test_idle_retries_while_stop_hook_active_force_the_stop(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.tool("Bash", {"command": "make"}, "")
    for _ in range(3):
        builder.our_block()
        builder.text("I really am done.")
    assert stop(builder, repo, tmp_path, stop_hook_active=False).blocked
    result = stop(builder, repo, tmp_path, stop_hook_active=True)
    assert "FORCED" in result.message
    assert "without a single tool call" in result.message


def test_stop_hook_active_alone_does_not_let_the_stop_through(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    for _ in range(3):
        builder.our_block()
        builder.tool("Bash", {"command": "make test"}, "1 failed")
    result = stop(builder, repo, tmp_path, stop_hook_active=True)
    assert result.blocked


# --- garbage input never crashes the hook ----------------------------------------------------


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        ("", "empty stdin"),
        ("   \n", "empty stdin"),
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        ('"text"', "expected an object"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        ("{}", "no transcript_path"),
        ('{"transcript_path": 42}', "no transcript_path"),
        ('{"transcript_path": ["a"]}', "no transcript_path"),
        ('{"transcript_path": "/nonexistent/session.jsonl"}', "cannot read transcript"),
    ],
)
def test_garbage_input_exits_zero_with_a_message(stdin: str | bytes, words: str) -> None:
    result = run_hook("Stop", stdin)
    assert not result.blocked
    assert words in result.message
    assert "not checked" in result.message


def test_transcript_that_is_a_directory(tmp_path: Path) -> None:
    result = run_hook("Stop", {"transcript_path": str(tmp_path), "cwd": str(tmp_path)})
    assert "cannot read transcript" in result.message


def test_transcript_path_below_a_regular_file(tmp_path: Path) -> None:
    """An unreadable path (ENOTDIR; chmod would not stop root, who runs the tests here)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_hook("Stop", {"transcript_path": str(blocker / "session.jsonl")})
    assert "cannot read transcript" in result.message


@pytest.mark.parametrize(
    "content", [b"", b"\n\n", b"garbage\x00\xff\n{]\n", b'"a string line"\n[1,2]\n{"type": 5}\n']
)
def test_transcript_without_a_flow_allows(tmp_path: Path, content: bytes) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(content)
    result = run_hook("Stop", stop_payload(transcript, tmp_path))
    assert result.output is None


def test_garbage_lines_inside_a_flow_are_skipped(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.raw("this is not json")
    builder.implement("specs/feature.md")
    builder.raw('{"type": "assistant", "message": {"content": "/pytest-acceptance:done"')
    builder.raw('{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Skill"}]}}')
    builder.raw('{"type":"user","message":{"content":[5, "x", {"type": null}]},"isSidechain":"no"}')
    builder.raw("\x00\x01 binary junk <command-name>/pytest-acceptance:done</command-name>")
    builder.text("Done.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "have not verified" in result.reason


@pytest.mark.parametrize("cwd", [None, 17, ["x"], "/nonexistent/folder"])
def test_wrong_cwd_types_do_not_crash(repo: Path, spec: Path, tmp_path: Path, cwd: object) -> None:
    builder = verified_flow(repo, spec)
    make_pass(repo)
    builder.done()
    transcript = builder.write(tmp_path / "session.jsonl")
    payload = stop_payload(transcript, repo)
    payload["cwd"] = cwd
    payload["stop_hook_active"] = "yes"
    payload["last_assistant_message"] = ["not", "text"]
    result = run_hook("Stop", payload)
    assert not result.blocked, result.reason  # the flow's own cwd still finds the verdict


def _git_status(repo: Path) -> str:
    import subprocess

    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


# --- after the flow ------------------------------------------------------------------------


def test_new_user_prompt_after_an_accepted_done_ends_the_flow(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    builder.done()
    builder.text("## Implementation Complete")
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    builder.user_prompt("Thanks. Now something unrelated to the spec.")
    make_fail(repo)  # later work is not held to the spec any more
    builder.tool("Write", {"file_path": "app.py", "content": "VALUE = 1"}, "ok")
    builder.text("Done with that.")
    assert stop(builder, repo, tmp_path).output is None


def test_user_prompt_after_a_blocked_done_does_not_end_the_flow(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = verified_flow(repo, spec)
    make_fail(repo)
    builder.done()
    assert stop(builder, repo, tmp_path).blocked
    builder.our_block()
    builder.user_prompt("Just stop please.")
    builder.text("Stopping.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


def test_system_notifications_are_not_user_prompts(repo: Path, spec: Path, tmp_path: Path) -> None:
    builder = verified_flow(repo, spec)
    builder.done()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    builder.add(
        builder._base(
            "user",
            message={
                "role": "user",
                "content": "<task-notification>agent done</task-notification>",
            },
            origin={"kind": "task-notification"},
            promptSource="system",
        )
    )
    make_fail(repo)
    builder.text("Noted.")
    assert "AC-1 works (failed" in stop(builder, repo, tmp_path).reason
