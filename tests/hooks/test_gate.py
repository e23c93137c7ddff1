"""Pinning, the gate's own verification run, and hooks that fail closed inside a flow.

Real hook subprocesses (as hooks.json runs them), real git repositories, real
`python -m pytest --acceptance` runs started by the gate, real FIFOs and signals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import (
    CRITERION,
    REPO_ROOT,
    SPEC_TEXT,
    TranscriptBuilder,
    expansion_payload,
    git,
    hook_command,
    make_fail,
    make_pass,
    make_repo,
    run_hook,
    stop_payload,
)
from pinning import collected, take_pins
from support import gate_python

from pytest_acceptance.gate import flow_state
from pytest_acceptance.gate.pins import table
from pytest_acceptance.tree.hash_cache import RACY_SECONDS


def pinned(plugin_state: Path) -> dict[str, Any]:
    (folder,) = (plugin_state / "flows").iterdir()
    return json.loads((folder / "flow.json").read_text())


def verified_and_done(repo: Path, spec: Path) -> TranscriptBuilder:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    make_pass(repo)
    builder.verify(spec)
    builder.done()
    return builder


def stop(builder: TranscriptBuilder, repo: Path, tmp_path: Path, **env: str) -> Any:
    transcript = builder.write(tmp_path / "session.jsonl")
    return run_hook("Stop", stop_payload(transcript, repo), env=env or None)


# --- pinning --------------------------------------------------------------------------------


def test_implement_pins_spec_criteria_settings_and_interpreter_outside_the_project(
    repo: Path, spec: Path, plugin_state: Path
) -> None:
    (repo / "pytest.ini").write_text(
        "[pytest]\naddopts = -p myplugin\nacceptance_timeout = 30\nacceptance_cache = true\n"
    )
    result = run_hook("UserPromptExpansion", expansion_payload(repo, "specs/feature.md"))
    assert result.output is None
    pin = pinned(plugin_state)
    assert pin["status"] == "open"
    assert pin["repo"] == str(repo)
    assert pin["spec_path"] == str(spec)
    collection = pin["collection"]
    assert [c["id"] for c in collection["criteria"]] == ["AC-1"]
    assert collection["criteria"][0]["command"] == "grep -qx 'VALUE = 2' app.py"
    # Only acceptance_* settings, never the agent cache (its entries live in the project).
    assert collection["settings"] == {"acceptance_timeout": "30"}
    assert collection["python"] == gate_python.EXECUTABLE
    folder = next((plugin_state / "flows").iterdir())
    closure = json.loads((folder / "closure.json").read_text())
    assert any(path.endswith("_pytest/main.py") for path in closure)  # the whole environment
    inside = [path for path in closure if path.startswith(str(repo) + os.sep)]
    assert inside == [str(repo / ".git" / "config")]  # git's configuration, not the work
    copy = folder / "spec" / "feature.md"
    assert copy.read_bytes() == spec.read_bytes()
    assert not any(path.name == "plugin-data" for path in repo.iterdir())


def test_a_pytest_without_its_config_reader_pins_no_interpreter_and_done_is_refused(
    repo: Path, spec: Path, tmp_path: Path, plugin_state: Path
) -> None:
    """The gate's interpreter is a pytest without the private config reader the probe uses
    (deleted before the probe runs: such a pytest cannot be installed here): the pin says
    why, no interpreter is pinned, and a /done after a verification is refused."""
    wrapper = tmp_path / "python-without-reader"
    code = (
        "import runpy, sys, _pytest.config.findpaths as f; del f.load_config_dict_from_file; "
        "runpy.run_module('pytest_acceptance.gate_probe', run_name='__main__', alter_sys=True)"
    )
    # The gate calls: PYTHON -I -X pycache_prefix=DIR -m pytest_acceptance.gate_probe ARGS
    wrapper.write_text(f'#!/bin/sh\nshift 5\nexec {sys.executable} -I -c "{code}" "$@"\n')
    wrapper.chmod(0o755)
    builder = TranscriptBuilder(repo)
    builder.command("pytest-acceptance:implement", "specs/feature.md", prompt_id="no-reader")
    told = run_hook(
        "UserPromptExpansion",
        expansion_payload(repo, "specs/feature.md", "no-reader"),
        env={"ACCEPTANCE_GATE_PYTHON": str(wrapper)},
    )
    assert "load_config_dict_from_file" in told.message
    pin = pinned(plugin_state)
    assert "collection" not in pin
    assert "checked against pytest 9.2.0" in pin["pin_pending"]
    make_pass(repo)
    builder.verify(spec)
    builder.done()
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "no Python interpreter could run pytest_acceptance" in result.reason


def test_a_prompt_that_is_not_our_implement_pins_nothing(repo: Path, plugin_state: Path) -> None:
    payload = {**expansion_payload(repo, "specs/feature.md"), "command_name": "other:implement"}
    run_hook("UserPromptExpansion", payload)
    bare = {**payload, "command_name": "implement", "command_source": "user"}
    run_hook("UserPromptExpansion", bare)
    assert not (plugin_state / "flows").exists()


def test_a_fifo_as_the_spec_is_pinned_as_a_problem_without_hanging(
    repo: Path, plugin_state: Path
) -> None:
    fifo = repo / "specs" / "pipe.md"
    os.mkfifo(fifo)
    started = time.monotonic()
    run_hook("UserPromptExpansion", expansion_payload(repo, "specs/pipe.md"))
    assert time.monotonic() - started < 30
    assert "does not exist" in pinned(plugin_state)["problem"]


def test_a_new_implement_leaves_an_open_unfinished_pin_as_it_is(
    repo: Path, plugin_state: Path
) -> None:
    """One flow per session: a second /implement while the first flow is open and not
    finished is refused with the reason, and the pin stays the first one."""
    run_hook("UserPromptExpansion", expansion_payload(repo, "specs/feature.md", "first"))
    other = repo / "specs" / "other.md"
    other.write_text(SPEC_TEXT)
    second = run_hook("UserPromptExpansion", expansion_payload(repo, "specs/other.md", "second"))
    assert second.blocked and "was not started" in second.reason, second.stdout
    assert "/pytest-acceptance:done" in second.reason
    pin = pinned(plugin_state)
    assert (pin["prompt_id"], pin["spec_path"]) == ("first", str(repo / "specs" / "feature.md"))


def test_a_new_implement_replaces_a_pin_that_holds_no_spec(repo: Path, plugin_state: Path) -> None:
    """A flow whose /implement named a missing spec enforces nothing: a second /implement
    replaces it."""
    run_hook("UserPromptExpansion", expansion_payload(repo, "specs/missing.md", "first"))
    other = repo / "specs" / "other.md"
    other.write_text(SPEC_TEXT)
    second = run_hook("UserPromptExpansion", expansion_payload(repo, "specs/other.md", "second"))
    assert not second.blocked, second.stdout
    pin = pinned(plugin_state)
    assert (pin["prompt_id"], pin["spec_path"]) == ("second", str(other))


# --- the gate's own run -----------------------------------------------------------------------


def test_the_gates_run_ignores_the_environment_the_hook_inherits(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """PYTEST_ADDOPTS and PYTHONPATH of the session do not reach the gate's run (BASH_ENV is
    tested through the real CLI: here it would stop the harness's own `bash -c`)."""
    (repo / "myplugin.py").write_text(
        "from pytest_acceptance.model import Result, Status\n"
        "def pytest_acceptance_run(criterion, context):\n"
        "    return Result(Status.PASSED)\n"
    )
    builder = verified_and_done(repo, spec)
    make_fail(repo)
    env = {
        "PYTEST_ADDOPTS": "-p myplugin",
        "PYTHONPATH": str(repo),
    }
    result = stop(builder, repo, tmp_path, **env)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


def test_the_verdict_comes_over_the_pipe_even_when_the_project_folder_is_unwritable(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """.acceptance/ is a file: verdict.json cannot be written, the gate's verdict still
    arrives over its pipe (--acceptance-verdict-fd)."""
    builder = verified_and_done(repo, spec)
    (repo / ".acceptance" / "verdict.json").unlink()
    result = stop(builder, repo, tmp_path)
    assert not result.blocked, result.reason


def test_verdict_fd_option_writes_the_verdict_to_the_descriptor(repo: Path, spec: Path) -> None:
    make_pass(repo)
    reader, writer = os.pipe()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", "--acceptance", str(spec)),
            *("-p", "no:cacheprovider", "--acceptance-verdict-fd", str(writer), "-q"),
        ],
        cwd=repo,
        pass_fds=(writer,),
        stdout=subprocess.DEVNULL,
    )
    os.close(writer)
    with os.fdopen(reader, "rb") as channel:
        data = json.loads(channel.read())
    assert process.wait(timeout=120) == 0
    assert data["status"] == "pass"
    assert [c["id"] for c in data["criteria"]] == ["AC-1"]


def test_a_run_past_its_deadline_blocks_and_leaves_no_process(tmp_path: Path) -> None:
    marker = f"{time.time():.6f}"
    repo = make_repo(
        tmp_path / "repo", "# Spec\n" + CRITERION.format("AC-1", "slow", f"sleep 300 # {marker}")
    )
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.verify(repo / "specs" / "feature.md")
    builder.done()
    started = time.monotonic()
    result = stop(builder, repo, tmp_path, ACCEPTANCE_GATE_DEADLINE="6")
    assert time.monotonic() - started < 120
    assert result.blocked
    assert "did not finish within its deadline" in result.reason
    time.sleep(0.5)
    leftovers = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert not leftovers.strip(), "a process of the gate's run survived"


def test_a_changed_interpreter_file_is_a_reason_to_block(tmp_path: Path) -> None:
    """Every file of the interpreter's closure is hashed again before each run: a changed
    module and a new .pth file in a site folder (code Python runs at start) both count."""
    site = tmp_path / "site-packages"
    site.mkdir()
    module = site / "pytest_init.py"
    module.write_text("original\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    flow = flow_state.Flow(tmp_path, {"repo": str(repo), "collection": collected(sys.executable)})
    take_pins(flow, {"roots": [str(site)], "files": []})
    assert table.before_run(flow) == []
    module.write_text("tampered\n")
    (site / "zz-evil.pth").write_text("import os\n")
    assert sorted(table.before_run(flow)) == [
        f"{module}: changed",
        f"{site / 'zz-evil.pth'}: added",
    ]


def test_the_gate_runs_with_a_project_venv_interpreter_when_none_is_configured(
    repo: Path, spec: Path, tmp_path: Path, plugin_state: Path
) -> None:
    """Discovery: <repo>/.venv/bin/python comes before python3 on PATH."""
    (repo / ".venv").symlink_to(Path(sys.prefix))  # this test run's own virtualenv
    venv_python = repo / ".venv" / "bin" / "python"
    payload = expansion_payload(repo, "specs/feature.md")
    run_hook("UserPromptExpansion", payload, env={"ACCEPTANCE_GATE_PYTHON": ""})
    assert pinned(plugin_state)["collection"]["python"] == str(venv_python)


# --- fingerprint tricks after an accepted /done ---------------------------------------------------


def _assume_unchanged(repo: Path) -> None:
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "pass")
    git(repo, "update-index", "--assume-unchanged", "app.py")
    make_fail(repo)


def _skip_worktree(repo: Path) -> None:
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "pass")
    git(repo, "update-index", "--skip-worktree", "app.py")
    make_fail(repo)


def _silent_fsmonitor(repo: Path) -> None:
    hook = repo.parent / "fsmonitor.sh"
    hook.write_text("#!/bin/sh\nprintf '\\0'\n")
    hook.chmod(0o755)
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "pass")
    git(repo, "config", "core.fsmonitor", str(hook))
    make_fail(repo)


def _info_exclude(repo: Path) -> None:
    (repo / ".git" / "info" / "exclude").write_text("app.py\n")
    make_fail(repo)


def _corrupt_index(repo: Path) -> None:
    (repo / ".git" / "index").write_bytes(b"not an index")
    make_fail(repo)


def _fifo_in_the_tree(repo: Path) -> None:
    os.mkfifo(repo / "pipe")
    make_fail(repo)


TRICKS = [
    _assume_unchanged,
    _skip_worktree,
    _silent_fsmonitor,
    _info_exclude,
    _corrupt_index,
    _fifo_in_the_tree,
]


@pytest.mark.parametrize("trick", TRICKS, ids=[t.__name__.strip("_") for t in TRICKS])
def test_a_tree_changed_behind_gits_back_after_done_is_not_a_clean_stop(
    repo: Path, spec: Path, tmp_path: Path, trick: Any
) -> None:
    """/done was accepted (the gate stored its pass for this tree); then the tree is broken
    in a way git's own view does not show. The stop is blocked, never allowed on the
    stored result."""
    builder = verified_and_done(repo, spec)
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    trick(repo)
    builder.text("All done.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked, f"{trick.__name__}: the stop went through"


def test_the_gate_keeps_its_hash_cache_in_its_own_state_and_still_sees_a_change(
    repo: Path, spec: Path, tmp_path: Path, plugin_state: Path
) -> None:
    """Files older than the racy window are cached by stat data (ctime included) beside the
    pin, never in the project (filled at /implement, kept up by each gate run); a later
    same-size rewrite with the old mtime restored gets a new ctime, so the stop after it is
    blocked all the same."""
    time.sleep(RACY_SECONDS + 0.5)  # the tree's files become old enough to be cached
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")  # pins, and fills the cache
    (hashes,) = (plugin_state / "flows").glob("*/hashes")
    assert os.fsencode(repo / "specs" / "feature.md") in hashes.read_bytes()
    make_pass(repo)
    builder.verify(spec)
    builder.done()
    time.sleep(RACY_SECONDS + 0.5)
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    assert os.fsencode(repo / "app.py") in hashes.read_bytes()
    app = repo / "app.py"
    old, text = app.stat(), app.read_text()
    app.write_text(text.replace("2", "3"))
    os.utime(app, ns=(old.st_atime_ns, old.st_mtime_ns))
    builder.text("All done.")
    assert stop(builder, repo, tmp_path).blocked


# --- fail closed inside a flow -------------------------------------------------------------------


def test_a_fifo_as_the_transcript_blocks_inside_a_flow_without_hanging(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    verified_and_done(repo, spec)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = run_hook("Stop", stop_payload(fifo, repo))
    assert time.monotonic() - started < 30
    assert result.blocked
    assert "not a regular file" in result.reason


def test_a_deleted_transcript_blocks_inside_a_flow(repo: Path, spec: Path, tmp_path: Path) -> None:
    verified_and_done(repo, spec)
    result = run_hook("Stop", stop_payload(tmp_path / "gone.jsonl", repo))
    assert result.blocked
    assert "could not check this stop" in result.reason


def test_a_damaged_state_blocks_inside_a_flow(
    repo: Path, spec: Path, tmp_path: Path, plugin_state: Path
) -> None:
    builder = verified_and_done(repo, spec)
    (next((plugin_state / "flows").iterdir()) / "flow.json").write_text("{torn")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "is not JSON" in result.reason


def test_the_hook_deadline_blocks_instead_of_running_into_the_cli_timeout(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "# Spec\n" + CRITERION.format("AC-1", "slow", "sleep 60"))
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    builder.verify(repo / "specs" / "feature.md")
    builder.done()
    result = stop(builder, repo, tmp_path, ACCEPTANCE_HOOK_DEADLINE="5")
    assert result.blocked
    assert "deadline" in result.reason


def test_a_closed_stdout_is_no_traceback_and_a_block_stays_a_block(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """stdout closed: the block goes to stderr with exit code 2 (a blocking error for the CLI)."""
    builder = verified_and_done(repo, spec)
    make_fail(repo)
    transcript = builder.write(tmp_path / "session.jsonl")
    from hook_transcripts import PLUGIN_DATA

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")},
        "CLAUDE_PLUGIN_ROOT": str(REPO_ROOT),
        "CLAUDE_PLUGIN_DATA": str(PLUGIN_DATA["current"]),
        "ACCEPTANCE_GATE_PYTHON": gate_python.EXECUTABLE,
    }
    done = subprocess.run(
        ["bash", "-c", hook_command("Stop") + " >&-"],
        input=json.dumps(stop_payload(transcript, repo)),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 2
    assert "AC-1 works (failed" in done.stderr


def test_outside_any_flow_a_broken_transcript_is_harmless(repo: Path, tmp_path: Path) -> None:
    result = run_hook("Stop", stop_payload(tmp_path / "gone.jsonl", repo))
    assert not result.blocked
    assert "not checked" in result.message
