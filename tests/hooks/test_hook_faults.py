"""Hooks under faults: exactly one answer on stdout, and inside a flow "cannot check" blocks.

Real hook subprocesses as hooks.json runs them, real file-system faults (a full tmpfs for
the plugin's data folder), real signals to a hook in the middle of the gate's run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hook_transcripts import (
    PLUGIN,
    REPO_ROOT,
    SESSION_ID,
    SPEC_TEXT,
    hook_command,
    make_fail,
    make_repo,
    pinned_flow,
    run_hook,
    stop_payload,
    wait_until,
)
from support import gate_python

SPEC = "specs/feature.md"


@pytest.fixture
def full_plugin_data(plugin_state: Path) -> Iterator[Path]:
    """The plugin's data folder on a tiny tmpfs that is then filled: every write fails with
    ENOSPC. Mounting needs root (CI runs as root)."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: the full-disk fault must be tested there")
        pytest.skip("mounting a tmpfs needs root")
    plugin_state.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(plugin_state)], check=True
    )
    try:
        yield plugin_state
    finally:
        subprocess.run(["umount", "-l", str(plugin_state)], check=False)


def fill(folder: Path) -> None:
    try:
        with (folder / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
    except OSError:  # ENOSPC: full, as wanted
        pass


def test_the_guard_on_a_full_plugin_data_folder_denies_a_spec_write_in_one_answer(
    tmp_path: Path, full_plugin_data: Path
) -> None:
    """The settings snapshot cannot be written (a warning) and the Write to the pinned spec
    is refused (a deny): one JSON object holding both, never two values the CLI ignores."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = pinned_flow(repo)
    transcript = builder.write(tmp_path / "session.jsonl")
    fill(full_plugin_data)
    payload = {
        "session_id": SESSION_ID,
        "transcript_path": str(transcript),
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / SPEC), "content": "# trivial\n"},
    }
    result = run_hook("", payload, script="pretool_protect_hook.py", timeout=60)
    assert result.stdout.count("\n") == 1  # HookRun parsed it as one JSON value
    assert result.denied, result.stdout


def test_a_transcript_line_nested_thousands_deep_blocks_the_stop_inside_a_flow(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    builder.done()
    make_fail(repo)
    transcript = builder.write(tmp_path / "session.jsonl")
    with transcript.open("a") as lines:
        lines.write('{"type": "user", "message": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    result = run_hook("Stop", stop_payload(transcript, repo))
    assert result.blocked, result.stdout


@pytest.mark.parametrize(
    "session_id",
    ["../../../etc/passwd", "x" * 100_000, "nul\u0000byte", "\udcff", "", 7, None, ["a"]],
    ids=["traversal", "huge", "nul", "surrogate", "empty", "number", "null", "list"],
)
@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit", "PreToolUse"])
def test_a_hostile_session_id_gets_one_answer_or_none_and_no_traceback(
    tmp_path: Path, event: str, session_id: object
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    payload = {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": event,
        "tool_name": "Skill",
        "tool_input": {"skill": f"{PLUGIN}:done"},
        "prompt": "hello",
    }
    result = run_hook(event, payload, timeout=60)  # fails on a traceback or a second value
    assert result.output is None or isinstance(result.output, dict)


SLOW_SPEC = """# Spec

#### AC-1: slow

```yaml
method: bash
command: "sleep 120"
```
"""


def gate_processes(marker: str, repo: Path) -> list[int]:
    """The gate's run: processes whose command line names the plugin's state folder (its
    pytest and workers), or that work in the project (the criterion's `sleep`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if (marker.encode() in cmdline or cwd.startswith(str(repo))) and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_gate_run_dies_with_its_stop_hook_and_keeps_no_lock(
    tmp_path: Path, plugin_state: Path, how: signal.Signals
) -> None:
    """Claude Code kills a Stop hook at its timeout: the gate's run (pytest, its workers,
    the criterion's `sleep`) goes with it, so the next honest stop is not held up."""
    repo = make_repo(tmp_path / "repo", SLOW_SPEC)
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    builder.done()
    transcript = builder.write(tmp_path / "session.jsonl")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_HOOK_", "CLAUDE"))},
        "CLAUDE_PLUGIN_ROOT": str(REPO_ROOT),
        "CLAUDE_PLUGIN_DATA": str(plugin_state),
        "ACCEPTANCE_GATE_PYTHON": gate_python.EXECUTABLE,
    }
    hook = subprocess.Popen(
        ["bash", "-c", "exec " + hook_command("Stop")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(stop_payload(transcript, repo)).encode())
    hook.stdin.close()
    marker = str(plugin_state)
    started = wait_until(lambda: any(_is_sleep(pid) for pid in gate_processes(marker, repo)), 120)
    assert started, "the gate's run never reached the criterion"
    hook.send_signal(how)
    hook.wait(timeout=30)
    assert wait_until(lambda: not gate_processes(marker, repo), 60), gate_processes(marker, repo)


def _is_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
