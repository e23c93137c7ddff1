"""The guard hooks without the CLI: protected paths (protect.py, the PreToolUse guard),
settings changes (settings_guard.py, the ConfigChange hook), interrupted flows released,
the Stop hook waiting for a transcript still being written, and forced stops that machines see.
Hook scripts run as Claude Code runs them (python3 -S, payload on stdin) on transcripts in the
real CLI's shape (hook_transcripts.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import (
    NO_SETTLING,
    REPO_ROOT,
    SESSION_ID,
    HookRun,
    TranscriptBuilder,
    make_repo,
    plugin_data,
    pretool,
    run_hook,
    stop_payload,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_acceptance.gate import protect, settings_guard

GUARD_TAG = "[pytest-acceptance guard]"
SPEC = "specs/feature.md"  # make_repo's spec


def run_script(script: str, payload: dict[str, Any], env: dict[str, str] | None = None) -> HookRun:
    """Run one of our hook scripts the way hooks.json registers it."""
    return run_hook("", payload, env, script=script, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def protected(repo: Path, tmp_path: Path) -> protect.Protected:
    return protect.protected_set(
        repo / "spec.md",
        REPO_ROOT,
        str(tmp_path / "plugin-data"),
        str(tmp_path / "home" / ".claude" / "projects" / "p" / "s.jsonl"),
        tmp_path / "home",
    )


# --- protected paths: the Bash heuristic and the file tools ------------------------------------

DENIED = [
    "echo x > .acceptance/verdict.json",
    "echo '{}' >> .acceptance/verdict.json",
    "cd .acceptance && echo '{}' > verdict.json",
    "git update-index --assume-unchanged value.txt",
    "git update-index --skip-worktree value.txt",
    "git -C . config core.fsmonitor 'echo'",
    "git config core.excludesFile /tmp/ignore",
    "GIT_INDEX_FILE=/tmp/other git add -A",
    "export GIT_INDEX_FILE=/tmp/other",
    "git sparse-checkout set src",
    "cp /tmp/fake .git/index",
    "echo 'x' >> .git/info/exclude",
    "rm -rf .acceptance",
    "sed -i 's/bash/manual/' spec.md",
    "perl -pi -e 's/a/b/' spec.md",
    "mv spec.md spec.old",
    "ln -sf /tmp/trivial.md spec.md",
    "truncate -s 0 spec.md",
    "tee spec.md < /tmp/x",
    "dd if=/dev/null of=spec.md",
    "git checkout HEAD~1 -- spec.md",
    "mkdir -p .claude && echo '{\"disableAllHooks\": true}' > .claude/settings.local.json",
    "python3 -c \"open('.claude/settings.local.json', 'w').write('{}')\"",
    "python3 - <<'EOF'\nimport json\nopen('.acceptance/verdict.json', 'w').write('{}')\nEOF",
    "bash -c 'echo pass > .acceptance/verdict.json'",
    "eval 'rm spec.md'",
    "sudo rm -f spec.md",
    "echo a#b > spec.md",
]
ALLOWED = [
    "echo 2 > value.txt && git commit -qam 'AC-1: value is two'",
    "python -m pytest --acceptance spec.md --acceptance-log=/tmp/implement-log-1.md",
    "cat spec.md .acceptance/verdict.json",
    "python3 -c \"print(open('spec.md').read())\"",
    "git status --porcelain && git diff",
    "git config --get core.fsmonitor",
    "cp spec.md /tmp/spec-copy.md",
    "cat > notes.md <<'EOF'\nwe don't touch > .acceptance here\nEOF",
    "date +%Y%m%d-%H%M%S",
    "echo '# log' > /tmp/implement-log-1.md",
]


@pytest.mark.parametrize("command", DENIED)
def test_bash_writes_to_protected_paths_are_found(
    command: str, repo: Path, protected: protect.Protected
) -> None:
    found = protect.bash_violations(command, repo, protected)
    assert found, command
    assert all(violation.why for violation in found)


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_work_is_not_a_protected_write(
    command: str, repo: Path, protected: protect.Protected
) -> None:
    assert protect.bash_violations(command, repo, protected) == []


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Write", {"file_path": "spec.md", "content": "# weaker"}),
        ("Edit", {"file_path": "./sub/../spec.md", "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": ".acceptance/verdict.json", "edits": []}),
        ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
        ("Write", {"file_path": "~/.claude/settings.json", "content": "{}"}),
        ("Write", {"file_path": str(REPO_ROOT / "hooks" / "stop_implement_hook.py")}),
        ("NotebookEdit", {"notebook_path": ".git/config", "new_source": ""}),
    ],
)
def test_file_tools_on_protected_paths_are_found(
    tool: str, tool_input: dict[str, Any], repo: Path, protected: protect.Protected
) -> None:
    assert protect.violations(tool, tool_input, repo, protected)


def test_plugin_state_and_transcripts_are_protected(
    repo: Path, tmp_path: Path, protected: protect.Protected
) -> None:
    for target in (
        tmp_path / "plugin-data" / "flows.json",
        tmp_path / "home/.claude/projects/p/s.jsonl",
    ):
        assert protect.violations("Write", {"file_path": str(target)}, repo, protected)
    assert protect.bash_violations(
        f": > {tmp_path}/home/.claude/projects/p/s.jsonl", repo, protected
    )


def test_symlinks_are_resolved(repo: Path, tmp_path: Path, protected: protect.Protected) -> None:
    """A link that leads into a protected place is the protected place."""
    (repo / ".acceptance").mkdir()
    (repo / "evidence").symlink_to(repo / ".acceptance")
    (repo / "contract.md").symlink_to(repo / "spec.md")
    assert protect.bash_violations("echo x > evidence/verdict.json", repo, protected)
    assert protect.violations("Write", {"file_path": "contract.md"}, repo, protected)


def test_globs_are_expanded(repo: Path, protected: protect.Protected) -> None:
    (repo / ".acceptance").mkdir()
    (repo / ".acceptance" / "verdict.json").write_text("{}")
    assert protect.bash_violations("rm .accep*/verdict.json", repo, protected)


def test_unbalanced_quotes_are_unreadable(repo: Path, protected: protect.Protected) -> None:
    with pytest.raises(protect.UnreadableCommand):
        protect.bash_violations("echo 'unbalanced > spec.md", repo, protected)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab >|&;()'\"\\$`\n<-=.*/#~cdeimrstgx")), max_size=60))
def test_any_command_is_judged_or_unreadable_never_a_crash(command: str) -> None:
    protected = protect.protected_set(Path("/r/spec.md"), REPO_ROOT, "/data", None, Path("/h"))
    with contextlib.suppress(protect.UnreadableCommand):
        protect.bash_violations(command, Path("/r"), protected)


# --- the PreToolUse guard as a hook ------------------------------------------------------------


def flow_transcript(repo: Path, tmp_path: Path, implement: bool = True) -> Path:
    builder = TranscriptBuilder(repo)
    if implement:
        builder.implement(SPEC)
        builder.text("Working on it.")
    else:
        builder.prompt("Tidy the README.")
    return builder.write(tmp_path / "transcript.jsonl")


def test_guard_denies_inside_a_flow_with_a_reason_to_act_on(repo: Path, tmp_path: Path) -> None:
    transcript = flow_transcript(repo, tmp_path)
    result = run_script(
        "pretool_protect_hook.py",
        pretool(transcript, repo, "Bash", {"command": "echo pass > .acceptance/verdict.json"}),
    )
    assert result.denied
    assert result.deny_reason.startswith(GUARD_TAG)
    assert "holds the verification evidence" in result.deny_reason, result.deny_reason
    assert "/pytest-acceptance:verify" in result.deny_reason


# A writer under a wrapper that runs it (tree/shell.py unwraps them all): the attack, a
# second variant of the same class written after the fix, and honest controls beside them.
WRAPPED_WRITES = [f"timeout 5 rm {SPEC}", f"nice -n 5 sudo -u root sed -i s/a/b/ {SPEC}"]
WRAPPED_READS = [f"timeout 5 cat {SPEC}", f"nice -n 5 sudo -u root grep a {SPEC}"]


@pytest.mark.parametrize("command", WRAPPED_WRITES)
def test_guard_denies_a_write_under_a_wrapper(repo: Path, tmp_path: Path, command: str) -> None:
    transcript = flow_transcript(repo, tmp_path)
    result = run_script(
        "pretool_protect_hook.py", pretool(transcript, repo, "Bash", {"command": command})
    )
    assert result.denied, command
    assert SPEC in result.deny_reason


@pytest.mark.parametrize("command", WRAPPED_READS)
def test_honest_a_read_under_a_wrapper_is_let_through(
    repo: Path, tmp_path: Path, command: str
) -> None:
    transcript = flow_transcript(repo, tmp_path)
    result = run_script(
        "pretool_protect_hook.py", pretool(transcript, repo, "Bash", {"command": command})
    )
    assert not result.denied, result.deny_reason


def test_guard_allows_everything_outside_a_flow(repo: Path, tmp_path: Path) -> None:
    transcript = flow_transcript(repo, tmp_path, implement=False)
    result = run_script(
        "pretool_protect_hook.py",
        pretool(transcript, repo, "Write", {"file_path": str(repo / "spec.md"), "content": ""}),
    )
    assert result.output is None


def test_guard_allows_ordinary_work_inside_a_flow(repo: Path, tmp_path: Path) -> None:
    transcript = flow_transcript(repo, tmp_path)
    result = run_script(
        "pretool_protect_hook.py",
        pretool(transcript, repo, "Write", {"file_path": str(repo / "value.txt"), "content": "2"}),
    )
    assert not result.denied


def test_guard_refuses_a_command_it_cannot_read(repo: Path, tmp_path: Path) -> None:
    transcript = flow_transcript(repo, tmp_path)
    result = run_script(
        "pretool_protect_hook.py", pretool(transcript, repo, "Bash", {"command": "echo 'oops"})
    )
    assert result.denied and "cannot be read" in result.deny_reason


@pytest.mark.parametrize("asks", [True, "true", 1, "yes", {}, []])
def test_a_command_that_asks_to_leave_the_sandbox_is_refused_inside_a_flow(
    repo: Path, tmp_path: Path, asks: object
) -> None:
    """Whatever the value (the CLI reads the field loosely), anything but false or absent
    asks to run outside Claude Code's sandbox: inside a flow, refused with the way out."""
    transcript = flow_transcript(repo, tmp_path)
    escape = {"command": "echo hi", "dangerouslyDisableSandbox": asks}
    result = run_script("pretool_protect_hook.py", pretool(transcript, repo, "Bash", escape))
    assert result.denied and "stays in Claude Code's sandbox" in result.deny_reason
    assert "/pytest-acceptance:escalate" in result.deny_reason


@pytest.mark.parametrize("implement", [True, False], ids=["in_a_flow", "outside_a_flow"])
@pytest.mark.parametrize("asks", [False, None])
def test_a_command_that_stays_in_the_sandbox_is_let_through(
    repo: Path, tmp_path: Path, implement: bool, asks: object
) -> None:
    transcript = flow_transcript(repo, tmp_path, implement)
    staying = {"command": "echo hi", "dangerouslyDisableSandbox": asks}
    result = run_script("pretool_protect_hook.py", pretool(transcript, repo, "Bash", staying))
    assert not result.denied


def test_outside_a_flow_leaving_the_sandbox_is_claude_codes_call(
    repo: Path, tmp_path: Path
) -> None:
    transcript = flow_transcript(repo, tmp_path, implement=False)
    escape = {"command": "echo hi", "dangerouslyDisableSandbox": True}
    result = run_script("pretool_protect_hook.py", pretool(transcript, repo, "Bash", escape))
    assert result.output is None


def test_guard_fails_closed_on_garbage_input(repo: Path) -> None:
    config = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text())
    assert "pretool_protect_hook.py" in json.dumps(config["hooks"]["PreToolUse"])
    done = subprocess.run(
        [sys.executable, "-S", str(REPO_ROOT / "hooks" / "pretool_protect_hook.py")],
        input="not json",
        capture_output=True,
        text=True,
        check=False,
    )
    assert HookRun(done).denied


# --- settings changes (ConfigChange) -----------------------------------------------------------


def config_change(transcript: Path, repo: Path, file_path: Path, source: str) -> dict[str, Any]:
    return {
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(repo),
        "hook_event_name": "ConfigChange",
        "source": source,
        "file_path": str(file_path),
    }


@pytest.mark.parametrize(
    ("new_settings", "refused"),
    [
        ({"disableAllHooks": True}, "sets disableAllHooks"),
        (
            {
                "hooks": {
                    "Stop": [
                        {"hooks": [{"type": "command", "command": "echo '{\"continue\": false}'"}]}
                    ]
                }
            },
            "changes its hooks section",
        ),
        ({"enabledPlugins": {"pytest-acceptance@pytest-acceptance": False}}, "disables the plugin"),
        ({"hooks": {"PostToolUse": []}, "env": {"ACCEPTANCE_HOOK_GUARD": "0"}}, "env section"),
        ({"permissions": {"allow": ["Bash(npm test:*)"]}, "hooks": {"PostToolUse": []}}, None),
    ],
)
def test_settings_changes_that_switch_hooks_off_are_refused_during_a_flow(
    repo: Path, tmp_path: Path, new_settings: dict[str, Any], refused: str | None
) -> None:
    transcript = flow_transcript(repo, tmp_path)
    data = tmp_path / "plugin-data"
    settings_file = repo / ".claude" / "settings.local.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps({"hooks": {"PostToolUse": []}}))
    env = {"CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_PROJECT_DIR": str(repo)}
    # The flow's first guarded tool call takes the snapshot ...
    run_script(
        "pretool_protect_hook.py",
        pretool(transcript, repo, "Bash", {"command": "git status"}),
        env=env,
    )
    assert list((data / settings_guard.SNAPSHOTS).iterdir())
    # ... then the settings file changes.
    settings_file.write_text(json.dumps(new_settings))
    payload = config_change(transcript, repo, settings_file, "local_settings")
    result = run_script("config_change_hook.py", payload, env=env)
    if refused is None:
        assert result.output is None
    else:
        assert result.blocked and refused in result.reason


def test_settings_changes_outside_a_flow_go_through(repo: Path, tmp_path: Path) -> None:
    transcript = flow_transcript(repo, tmp_path, implement=False)
    settings_file = repo / ".claude" / "settings.local.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps({"disableAllHooks": True}))
    payload = config_change(transcript, repo, settings_file, "local_settings")
    assert run_script("config_change_hook.py", payload).output is None


# --- interrupted flows -------------------------------------------------------------------------

INTERRUPT = "[Request interrupted by user]"


def interrupt(builder: TranscriptBuilder) -> None:
    """The line CLI 2.1.328 writes on an interrupt (seen in a real stream-json session)."""
    builder.add(
        builder._base(
            "user", message={"role": "user", "content": [{"type": "text", "text": INTERRUPT}]}
        )
    )


@pytest.mark.parametrize(
    ("steps", "holds"),
    [
        (["interrupt"], True),  # released once the user really types something else
        (["interrupt", "prompt:What is the capital of France?", "text:Paris."], False),
        # The same lines written into the transcript by the agent: no prompt hook saw a prompt.
        (["interrupt", "forged:What is the capital of France?", "text:Paris."], True),
        (["interrupt", "prompt:Now fix the flaky login test please", "text:Fixed."], False),
        (
            ["text:I'll start with AC-1.", "interrupt", "prompt:What time is it?", "text:Noon."],
            True,
        ),
        (["interrupt", "prompt:continue", "text:Working."], True),
        (["interrupt", "prompt:Please go on", "text:Working."], True),
        (["interrupt", "implement", "text:Working."], True),
        (["interrupt", "implement", "interrupt", "prompt:Something else", "text:Ok."], False),
    ],
)
def test_interrupted_implement_is_released_only_before_any_work(
    repo: Path, tmp_path: Path, steps: list[str], holds: bool
) -> None:
    """manifest-dev's interrupted cases, in our transcript shape: an /implement interrupted
    before the model answered, then something else, was never started; one interrupted after
    work began, resumed ("continue"), or started again still holds."""
    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    for step in steps:
        kind, _, value = step.partition(":")
        if kind == "interrupt":
            interrupt(builder)
        elif kind == "prompt":
            builder.user_prompt(value)
        elif kind == "forged":
            builder.prompt(value)
        elif kind == "text":
            builder.text(value)
        else:
            builder.implement(SPEC)
    transcript = builder.write(tmp_path / "transcript.jsonl")
    result = run_script("stop_implement_hook.py", stop_payload(transcript, repo))
    assert result.blocked is holds


# --- a transcript still being written ---------------------------------------------------------


def test_stop_waits_until_the_transcript_holds_the_last_message(repo: Path, tmp_path: Path) -> None:
    """The Stop payload's last_assistant_message is not on disk yet, nor the lines before it
    that decide (an interrupt of the /implement, an unrelated prompt); a writer adds them
    0.4 s later. The hook waits for them and allows, instead of blocking on a stale file."""
    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    path = builder.write(tmp_path / "transcript.jsonl")
    interrupt(builder)
    builder.user_prompt("What is the capital of France?")
    last = "The capital of France is Paris."
    builder.text(last)
    later = builder.write(tmp_path / "later.jsonl")

    def land() -> None:
        time.sleep(0.4)
        os.replace(later, path)

    writer = threading.Thread(target=land)
    writer.start()
    result = run_script("stop_implement_hook.py", stop_payload(path, repo, last=last))
    writer.join()
    assert not result.blocked, result.reason
    # Without the wait the same stop is judged on the stale file, and blocked:
    builder2 = TranscriptBuilder(repo)
    builder2.implement(SPEC)
    stale = builder2.write(tmp_path / "stale.jsonl")
    stale_stop = stop_payload(stale, repo, last=last)
    assert run_script("stop_implement_hook.py", stale_stop, NO_SETTLING).blocked


def test_the_wait_is_bounded(repo: Path, tmp_path: Path) -> None:
    """A message that never lands: the hook judges the transcript as written, in bounded time."""
    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    path = builder.write(tmp_path / "transcript.jsonl")
    started = time.monotonic()
    result = run_script(
        "stop_implement_hook.py",
        stop_payload(path, repo, last="never written"),
        env={"ACCEPTANCE_HOOK_SETTLE_SECONDS": "0.5"},
    )
    assert result.blocked
    assert time.monotonic() - started < 30


# --- forced stops ------------------------------------------------------------------------------


def test_a_forced_stop_ends_the_session_visibly_and_is_recorded(repo: Path, tmp_path: Path) -> None:
    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    builder.text("All done.")
    path = builder.write(tmp_path / "transcript.jsonl")
    data = tmp_path / "plugin-data"
    result = run_script(
        "stop_implement_hook.py",
        stop_payload(path, repo, stop_hook_active=True),
        env={"ACCEPTANCE_HOOK_MAX_BLOCKS": "1", "CLAUDE_PLUGIN_DATA": str(data)},
    )
    assert result.output is not None
    assert result.output["continue"] is False
    assert result.output["stopReason"].startswith("FORCED, NOT verified")
    for record_file in (data / "forced-stops.jsonl", repo / ".acceptance" / "forced-stops.jsonl"):
        record = json.loads(record_file.read_text().splitlines()[-1])
        assert record["spec"] == str(repo / SPEC)
        assert "ACCEPTANCE_HOOK_MAX_BLOCKS=1" in record["forced_because"]


# --- what the CLI reads: skill frontmatter, hooks.json, the marketplace ------------------------


def test_verify_runs_one_pre_approved_command_and_nothing_around_it() -> None:
    """A compound command (`...; echo $?`) is not covered by a `Bash(cmd:*)` rule."""
    text = (REPO_ROOT / "skills" / "verify" / "SKILL.md").read_text()
    frontmatter = text.split("---")[1]
    assert "allowed-tools: Bash(python -m pytest --acceptance:*)" in frontmatter
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].strip()
    assert block == "python -m pytest --acceptance <spec path> --acceptance-log=<log path>"
    readme = (REPO_ROOT / "README.md").read_text()
    assert '"Bash(python -m pytest --acceptance:*)"' in readme


def test_guard_hooks_are_registered() -> None:
    config = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text())
    guards = [
        entry
        for entry in config["hooks"]["PreToolUse"]
        if "pretool_protect_hook.py" in json.dumps(entry)
    ]
    (matcher,) = [entry["matcher"] for entry in guards]
    changing = ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "Skill", "Agent", "Task"]
    for tool in [*changing, "mcp__server__write_file"]:  # any of them may change files
        assert re.fullmatch(matcher, tool), tool
    for tool in ["Read", "Grep", "Glob"]:  # read-only: no hook process on every read
        assert not re.fullmatch(matcher, tool), tool
    assert "${CLAUDE_PLUGIN_ROOT}/hooks/config_change_hook.py" in json.dumps(
        config["hooks"]["ConfigChange"]
    )


def test_the_marketplace_lists_this_plugin_by_a_relative_source() -> None:
    plugin = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO_ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == plugin["name"] == market["name"]
    assert entry["source"] == "./"


def test_a_cut_transcript_does_not_give_the_open_flow_a_new_settings_key(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin names the flow: with the transcript truncated, the flow keeps the key of its
    settings snapshot, so ConfigChange still compares with the snapshot taken before any
    change (a new key would start from settings the agent may already have changed)."""
    from pytest_acceptance.gate import session_flow

    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(plugin_data()))
    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    builder.text("Working on it.")
    transcript = builder.write(tmp_path / "session.jsonl")
    payload = stop_payload(transcript, repo)
    whole = session_flow.open_flow(payload, session_flow.pin_of(payload))
    transcript.write_text("")
    cut = session_flow.open_flow(payload, session_flow.pin_of(payload))
    transcript.unlink()
    gone = session_flow.open_flow(payload, session_flow.pin_of(payload))
    assert whole is not None and cut is not None and gone is not None
    assert whole.key == cut.key == gone.key


def test_a_subagents_tool_call_is_not_awaited_in_the_main_transcript(
    repo: Path, tmp_path: Path
) -> None:
    """A subagent's tool calls (the CLI names its agent_id in the payload) are written to
    the subagent's own transcript: the guard judges them at once on the main one instead of
    waiting its whole settle time for a line that never comes (10 s per call, measured with
    CLI 2.1.328), while a main-session call missing from the transcript is still awaited."""
    from pytest_acceptance.gate.transcript import Transcript

    builder = TranscriptBuilder(repo)
    builder.implement(SPEC)
    transcript = Transcript.load(str(builder.write(tmp_path / "session.jsonl")))
    call = {"tool_name": "Bash", "tool_use_id": "toolu_not_written_here"}
    assert transcript.holds_event({**call, "agent_id": "a1b2c3"})
    assert not transcript.holds_event(call)

    payload = {
        **stop_payload(tmp_path / "session.jsonl", repo),
        "hook_event_name": "PreToolUse",
        **call,
        "tool_input": {"command": "echo hi > note.txt"},
        "agent_id": "a1b2c3",
        "agent_type": "general-purpose",
    }
    # A guard that waited for the call would outlive run_hook's timeout, and fail the test.
    result = run_hook(
        "PreToolUse",
        payload,
        {"ACCEPTANCE_HOOK_SETTLE_SECONDS": "600"},
        script="pretool_protect_hook.py",
        timeout=60,
    )
    assert not result.denied, result.deny_reason
