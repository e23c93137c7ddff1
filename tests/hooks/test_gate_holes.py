"""The holes an adversarial review found in the gate, each closed: every test here ends in a
clean stop (or an accepted change) on the code before the fix.

Real hook subprocesses as hooks.json runs them, real git repositories, real gate runs of
`python -m pytest --acceptance`, a real virtualenv in the project, a real forged .pyc, a
real write into the gate's pipe through /proc; the settings `env` route through the REAL
Claude Code CLI (pinned) and the scripted Messages API stand-in.
"""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import (
    BLOCK_TAG,
    CRITERION,
    PLUGIN,
    REPO_ROOT,
    SPEC_TEXT,
    TranscriptBuilder,
    expansion_payload,
    git,
    hidden_settings_write,
    make_fail,
    make_pass,
    make_repo,
    run_hook,
    settings_refusals,
    stop_payload,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from support.claude_harness import MessagesStandIn, text, tool_results, tool_use

from pytest_acceptance.claude import (
    flow_state,
    gate_runtime,
    interpreter_paths,
    settings_guard,
    verdict_check,
)

SPEC = "specs/feature.md"


def spec_with(command: str) -> str:
    return "# Spec\n" + CRITERION.format("AC-1", "works", command)


def pin_flow(repo: Path, builder: TranscriptBuilder, **env: str) -> None:
    """The user's /implement, its prompt hook run with `env` (e.g. which interpreter)."""
    prompt_id = str(uuid.uuid4())
    builder.command(f"{PLUGIN}:implement", SPEC, prompt_id=prompt_id)
    run_hook("UserPromptExpansion", expansion_payload(repo, SPEC, prompt_id), env=env or None)


def verified_and_done(repo: Path, **env: str) -> TranscriptBuilder:
    builder = TranscriptBuilder(repo)
    pin_flow(repo, builder, **env)
    builder.verify(repo / SPEC)
    builder.done()
    return builder


def stop(builder: TranscriptBuilder, repo: Path, tmp_path: Path, **env: str) -> Any:
    transcript = builder.write(tmp_path / "session.jsonl")
    return run_hook("Stop", stop_payload(transcript, repo), env=env or None)


def ignore(repo: Path, *patterns: str) -> None:
    (repo / ".gitignore").write_text("".join(f"{p}\n" for p in patterns))
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")


# --- 1. settings `env` (and the rest of what changes how hooks run) ------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("env", {"PATH": "/tmp/fakebin:/usr/bin:/bin"}),
        ("env", {"PYTHONPATH": "/tmp/evil"}),
        ("sandbox", {"enabled": False}),
        ("apiKeyHelper", "/tmp/helper.sh"),
        ("permissions", {"deny": []}),
        ("permissions", {"defaultMode": "bypassPermissions"}),
    ],
)
def test_a_settings_change_of_how_hooks_and_tools_run_is_refused(
    tmp_path: Path, key: str, value: Any
) -> None:
    settings_file = tmp_path / "settings.local.json"
    settings_file.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    snapshot = {os.path.realpath(settings_file): settings_guard.hook_view(settings_file)}
    changed = {"permissions": {"deny": ["Bash(rm:*)"]}}
    changed[key] = {**changed.get(key, {}), **value} if isinstance(value, dict) else value
    settings_file.write_text(json.dumps(changed))
    why = settings_guard.refusal("local_settings", str(settings_file), snapshot)
    assert why is not None and key in why


def test_a_new_allow_rule_is_the_users_own_and_goes_through(tmp_path: Path) -> None:
    settings_file = tmp_path / "settings.local.json"
    snapshot = {os.path.realpath(settings_file): settings_guard.hook_view(settings_file)}
    settings_file.write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    assert settings_guard.refusal("local_settings", str(settings_file), snapshot) is None


def test_hooks_ignore_a_pythonpath_that_replaces_the_stdlib(tmp_path: Path) -> None:
    """A PYTHONPATH (from settings `env`, or anywhere) with a json.py that exits 0 would make
    every hook a silent allow; the hooks run as `python3 -E -S`."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = verified_and_done(repo)
    make_fail(repo)
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "json.py").write_text("import os\nos._exit(0)\n")
    result = stop(builder, repo, tmp_path, PYTHONPATH=str(evil))
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


FAKE_PYTHON3 = "#!/bin/sh\nexit 0\n"


@pytest.mark.e2e
@pytest.mark.parametrize("variable", ["PATH", "PYTHONPATH"])
def test_a_settings_env_written_mid_flow_does_not_reach_the_hooks(
    tmp_path: Path,
    claude_home: Path,
    messages_api: Callable[..., MessagesStandIn],
    variable: str,
) -> None:
    """REAL CLI: the agent writes .claude/settings.local.json with an `env` that would run
    every hook with a python3 that exits 0 (PATH) or a json.py that exits 0 (PYTHONPATH),
    hidden from the guard's Bash heuristic. The ConfigChange hook refuses it: the Stop hook
    still runs, and blocks."""
    from test_guard_cli import SPEC as GUARD_SPEC
    from test_guard_cli import implement

    project = make_repo(tmp_path / "project", GUARD_SPEC)
    (project / "value.txt").write_text("1\n")
    fake = project / "fake"
    fake.mkdir()
    (fake / "python3").write_text(FAKE_PYTHON3)
    (fake / "python3").chmod(0o755)
    (fake / "json.py").write_text("import os\nos._exit(0)\n")
    env = {"PATH": f"{fake}:/usr/bin:/bin"} if variable == "PATH" else {"PYTHONPATH": str(fake)}
    api = messages_api(
        [
            tool_use(
                "Bash",
                {"command": hidden_settings_write(".claude/settings.local.json", {"env": env})},
            ),
            text("All criteria verified."),
            text("Stopping."),
        ]
    )
    result = implement(
        project, claude_home, api, "--allowedTools", "Bash", ACCEPTANCE_HOOK_MAX_BLOCKS="1"
    )
    assert tool_results(api.requests[1])[0].get("is_error") is not True  # the write landed
    assert json.loads((project / ".claude" / "settings.local.json").read_text()) == {"env": env}
    assert settings_refusals(claude_home) == {
        f"{project / '.claude' / 'settings.local.json'} changes env (how hooks and tools run)"
    }
    assert BLOCK_TAG in json.dumps(api.requests[2])  # the Stop hook still runs, and blocks
    assert result["terminal_reason"] == "stop_hook_prevented"


# --- 2 and 3. the project's virtualenv: a fake command in its bin, a swapped python link -----


@pytest.fixture
def venv_repo(tmp_path: Path) -> Path:
    """A project whose .venv (git-ignored, as usual) is a real virtualenv that sees this
    test run's packages (pytest-acceptance among them) through a .pth."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    ignore(repo, ".venv/")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    import site

    ours = [p for p in site.getsitepackages() if os.path.isdir(p)]
    (site_dir,) = (repo / ".venv" / "lib").glob("python*/site-packages")
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in ours)
    (site_dir / "zz-parent.pth").write_text(lines)
    return repo


def test_a_fake_bash_in_the_projects_venv_bin_blocks(venv_repo: Path, tmp_path: Path) -> None:
    """`bash` dropped into .venv/bin (first on the gate's PATH) would run every criterion as
    `exit 0`; the bin folder is pinned, the new entry shadows /bin/bash: blocked, named."""
    builder = verified_and_done(venv_repo, ACCEPTANCE_GATE_PYTHON="")
    flow = json.loads(next((tmp_path / "plugin-data" / "flows").glob("*/flow.json")).read_text())
    assert flow["python"] == str(venv_repo / ".venv" / "bin" / "python")
    fake = venv_repo / ".venv" / "bin" / "bash"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    result = stop(builder, venv_repo, tmp_path, ACCEPTANCE_GATE_PYTHON="")
    assert result.blocked
    assert f"{fake} (new, shadows bash on PATH)" in result.reason


def test_a_swapped_python_symlink_in_the_venv_blocks(venv_repo: Path, tmp_path: Path) -> None:
    builder = verified_and_done(venv_repo, ACCEPTANCE_GATE_PYTHON="")
    make_pass(venv_repo)
    python = venv_repo / ".venv" / "bin" / "python"
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec {os.path.realpath(python)} "$@"\n')
    wrapper.chmod(0o755)
    python.unlink()
    python.symlink_to(wrapper)
    result = stop(builder, venv_repo, tmp_path, ACCEPTANCE_GATE_PYTHON="")
    assert result.blocked
    assert "the interpreter path now resolves differently" in result.reason


def test_every_symlink_hop_of_the_pinned_path_is_checked(tmp_path: Path) -> None:
    """A link in a parent folder counts as much as the last one."""
    real = tmp_path / "real"
    real.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    for folder in (real, other):
        (folder / "python").symlink_to(sys.executable)
    (tmp_path / "bin").symlink_to(real)
    python = str(tmp_path / "bin" / "python")
    flow = flow_state.Flow(tmp_path, {"repo": str(tmp_path)})
    gate_runtime.pin_runtime(flow, {"python": python})
    assert gate_runtime.runtime_changes(flow) == []
    (tmp_path / "bin").unlink()
    (tmp_path / "bin").symlink_to(other)
    assert gate_runtime.runtime_changes(flow) == [
        f"{python} (the interpreter path now resolves differently)"
    ]


def test_a_new_bin_entry_that_shadows_nothing_is_an_honest_install(tmp_path: Path) -> None:
    """pip installing a tool adds a console script: no command of that name elsewhere on
    PATH, nothing shadowed, no block. A changed existing entry blocks."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python").symlink_to(sys.executable)
    (folder / "activate").write_text("# original\n")
    pinned = interpreter_paths.pin(str(folder / "python"))
    (folder / "my-new-tool-xyz").write_text("#!/bin/sh\n")
    assert interpreter_paths.changes(str(folder / "python"), pinned, "/usr/bin:/bin") == []
    (folder / "activate").write_text("# changed\n")
    assert interpreter_paths.changes(str(folder / "python"), pinned, "/usr/bin:/bin") == [
        str(folder / "activate")
    ]


# --- 4. forged bytecode --------------------------------------------------------------------


def test_a_forged_pyc_in_the_project_does_not_pass_a_criterion(tmp_path: Path) -> None:
    """app.py says VALUE = 1; an unchecked-hash __pycache__/app.*.pyc (git-ignored, outside
    the fingerprint) says 2. The gate's Pythons read no __pycache__: AC-1 fails."""
    check = "python -c 'import app, sys; sys.exit(0 if app.VALUE == 2 else 1)'"
    repo = make_repo(tmp_path / "repo", spec_with(check))
    ignore(repo, "__pycache__/")
    builder = verified_and_done(repo)
    forged_source = tmp_path / "forged" / "app.py"
    forged_source.parent.mkdir()
    forged_source.write_text("VALUE = 2\n")
    py_compile.compile(
        str(forged_source),
        cfile=str(repo / "__pycache__" / f"app.{sys.implementation.cache_tag}.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    plain = [sys.executable, "-c", "import app; print(app.VALUE)"]
    forged = subprocess.run(plain, cwd=repo, capture_output=True, text=True, check=True)
    assert forged.stdout.strip() == "2"  # the forgery works on a plain Python
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


# --- 5. a forged verdict written into the gate's pipe ----------------------------------------

FORGE_THROUGH_PROC = r"""
import json, os, sys, time
pid = os.getppid()
while pid > 1:
    args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    if b"--acceptance-verdict-fd" in args:
        fd = args[args.index(b"--acceptance-verdict-fd") + 1].decode()
        break
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
else:
    sys.exit(0)
pipe = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY)
forged = {"schema": "pytest-acceptance/verdict", "version": 1, "status": "pass",
          "exit_code": 1, "complete": True, "specs": [{"selected": 1, "criteria_total": 1}],
          "criteria": [{"id": "AC-1", "title": "works", "status": "passed"}], "problems": []}
os.write(pipe, (json.dumps(forged)[:-1] + ', "shadow": ').encode())
if os.fork() == 0:  # outlives the run's process group; closes the object after the real verdict
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for number in (0, 1, 2):
        os.dup2(null, number)
    while os.path.exists(f"/proc/{pid}"):
        time.sleep(0.005)
    os.write(pipe, b"}")
    os._exit(0)
"""


def test_a_verdict_forged_around_the_real_one_on_the_pipe_blocks(tmp_path: Path) -> None:
    """Project code a criterion runs opens /proc/<pytest>/fd/N and wraps the real verdict in
    a forged object (status pass, exit code 1 = pytest's). Not the verdict's shape, and
    pytest did not exit 0: blocked as tampering."""
    repo = make_repo(tmp_path / "repo", spec_with("sh check.sh"))
    (repo / "check.sh").write_text("python forge.py\nexit 1\n")
    (repo / "forge.py").write_text(FORGE_THROUGH_PROC)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "checks")
    builder = verified_and_done(repo)
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert verdict_check.TAMPERED in result.reason


def real_verdict(ident: str = "AC-1") -> dict[str, Any]:
    return {
        "schema": "pytest-acceptance/verdict",
        "version": 1,
        "status": "fail",
        "exit_code": 1,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00",
        "started_at_epoch": 1.0,
        "finished_at_epoch": 2.0,
        "rootdir": "/repo",
        "fingerprint": "f",
        "fingerprint_after": "f",
        "complete": True,
        "specs": [{"path": "/s.md", "criteria_total": 1, "selected": 1}],
        "counts": {"failed": 1},
        "criteria": [
            {"id": ident, "title": "works", "status": "failed", "issues": [], "message": "x"}
        ],
        "problems": [],
        "reports": ["/repo/.acceptance/report.json"],
    }


def test_the_real_verdict_shape_is_accepted() -> None:
    verdict, why = verdict_check.parse(json.dumps(real_verdict()).encode(), ["AC-1"])
    assert why is None and verdict == real_verdict()


@pytest.mark.parametrize(
    "forge",
    [
        lambda v: {**v, "status": "pass", "shadow": real_verdict()},
        lambda v: {**v, "problems": [real_verdict()]},
        lambda v: {**v, "criteria": v["criteria"] * 2},
        lambda v: {**v, "criteria": [{**v["criteria"][0], "id": "AC-9"}]},
        lambda v: {**v, "criteria": [{**v["criteria"][0], "status": "great"}]},
        lambda v: {**v, "exit_code": "0"},
        lambda v: {key: value for key, value in v.items() if key != "status"},
    ],
    ids=["nested", "in-problems", "twice", "never-pinned", "status", "type", "missing-key"],
)
def test_a_verdict_off_its_schema_is_tampering(forge: Callable[[Any], Any]) -> None:
    verdict, why = verdict_check.parse(json.dumps(forge(real_verdict())).encode(), ["AC-1"])
    assert verdict is None and why is not None and why.startswith(verdict_check.TAMPERED)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400) | st.recursive(st.none() | st.integers() | st.text(), st.lists))
def test_any_bytes_on_the_channel_never_crash_and_never_pass(data: Any) -> None:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    verdict, _ = verdict_check.parse(raw, ["AC-1"])
    assert verdict is None


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20).filter(lambda k: k not in verdict_check.TOP_LEVEL))
def test_the_real_verdict_nested_under_any_extra_key_is_tampering(key: str) -> None:
    forged = {**real_verdict(), "status": "pass", key: real_verdict()}
    verdict, why = verdict_check.parse(json.dumps(forged).encode(), ["AC-1"])
    assert verdict is None and why is not None


# --- 8. no late pin ----------------------------------------------------------------------------


def test_without_an_interpreter_at_implement_done_is_refused_and_escalate_is_the_way_out(
    tmp_path: Path,
) -> None:
    """No Python could run pytest_acceptance at /implement; by /done one can (the agent
    could have planted it). The gate never pins it then: /done blocks with the way out."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    builder = verified_and_done(repo, ACCEPTANCE_GATE_PYTHON=str(tmp_path / "no-python"))
    make_pass(repo)
    result = stop(builder, repo, tmp_path)  # ACCEPTANCE_GATE_PYTHON: a working one now
    assert result.blocked
    assert "never pins one later" in result.reason
    assert "/pytest-acceptance:escalate" in result.reason
    builder.escalate()
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason


# --- 10. files changed after an accepted /done ------------------------------------------------


def done_on_an_ignored_file(tmp_path: Path) -> tuple[Path, TranscriptBuilder]:
    """AC-1 reads local.cfg, which git ignores (outside the tree fingerprint); /done was
    accepted and the stop after it allowed: the gate stored its pass."""
    repo = make_repo(tmp_path / "repo", spec_with("grep -qx 2 local.cfg"))
    ignore(repo, "local.cfg")
    (repo / "local.cfg").write_text("2\n")
    builder = verified_and_done(repo)
    stopped = stop(builder, repo, tmp_path)
    assert not stopped.blocked, stopped.reason
    return repo, builder


def test_a_stored_pass_is_not_reused_after_tool_calls_past_done(tmp_path: Path) -> None:
    """AC-1 reads a git-ignored file (outside the tree fingerprint). After the accepted
    /done a tool call changes it: the gate runs again instead of reusing its stored pass."""
    repo, builder = done_on_an_ignored_file(tmp_path)
    builder.tool("Read", {"file_path": str(repo / "local.cfg")}, result="2")
    builder.text("Checked.")
    stopped = stop(builder, repo, tmp_path)  # ran again, still passes
    assert not stopped.blocked, stopped.reason
    builder.tool("Bash", {"command": "echo 1 > local.cfg"}, result="")
    (repo / "local.cfg").write_text("1\n")
    builder.text("All done.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


def test_a_tool_call_erased_from_the_transcript_still_stops_the_reuse(tmp_path: Path) -> None:
    """The same, but the agent erases the Bash call from its transcript: the PreToolUse guard
    hook noted it in the plugin's state when it ran (with the guard itself switched off: the
    note belongs to the gate), so the gate runs again all the same."""
    repo, builder = done_on_an_ignored_file(tmp_path)
    transcript = builder.write(tmp_path / "session.jsonl")
    bash = {"command": "echo 1 > local.cfg"}
    payload = {**stop_payload(transcript, repo), "hook_event_name": "PreToolUse"}
    payload.update(tool_name="Bash", tool_input=bash)
    guard = run_hook("PreToolUse", payload, {"ACCEPTANCE_HOOK_GUARD": "0"}, script="protect")
    assert not guard.denied
    (repo / "local.cfg").write_text("1\n")  # what the erased call did
    builder.text("All done.")
    result = stop(builder, repo, tmp_path)
    assert result.blocked
    assert "AC-1 works (failed" in result.reason


def test_the_hooks_run_isolated_from_python_environment_variables() -> None:
    config = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text())
    commands = [
        hook["command"]
        for groups in config["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    ]
    launcher = '/bin/sh "${CLAUDE_PLUGIN_ROOT}/hooks/python3" '
    assert commands and all(c.startswith(launcher) for c in commands)


def fake_python(folder: Path, name: str, venv: bool) -> None:
    """A python3 that says which one it is and how it was started."""
    folder.mkdir(parents=True)
    (folder / "python3").write_text(f'#!/bin/sh\necho "{name} $*"\n')
    (folder / "python3").chmod(0o755)
    if venv:
        (folder.parent / "pyvenv.cfg").write_text("home = /elsewhere\n")


def launch(path: list[Path], code: str | None = None) -> str:
    """What the launcher's python3 printed, started on `hook.py` (or on `-c code`)."""
    arguments = ["hook.py"] if code is None else ["-c", code]
    done = subprocess.run(
        ["/bin/sh", str(REPO_ROOT / "hooks" / "python3"), *arguments],
        env={"PATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_hooks_python3_is_no_virtualenvs(tmp_path: Path) -> None:
    """An activated virtualenv's python3 reads its standard library where the venv's
    pyvenv.cfg says (a file of the project, which the agent can rewrite), whatever -E -S:
    the hooks take the first python3 on PATH that belongs to no virtualenv."""
    venv, system = tmp_path / ".venv" / "bin", tmp_path / "usr" / "bin"
    fake_python(venv, "venv", venv=True)
    fake_python(system, "system", venv=False)
    assert launch([venv, tmp_path / "empty", system]) == "system -E -S hook.py"
    assert launch([venv]) == "venv -E -S hook.py"  # nothing else: the first one


def test_the_hooks_python3_is_no_version_managers_shim(tmp_path: Path) -> None:
    """A shim (pyenv's, asdf's: a script) runs the interpreter the project's
    `.python-version` names, a file the agent can write: the hooks take a python3 that is a
    program of its own (here, a link to this test's interpreter) wherever it is on PATH, and
    a shim only when nothing else is there."""
    shims, system = tmp_path / "pyenv" / "shims", tmp_path / "usr" / "bin"
    fake_python(shims, "shim", venv=False)
    system.mkdir(parents=True)
    (system / "python3").symlink_to(os.path.realpath(sys.executable))
    assert launch([shims, system], "print('native')") == "native"
    assert launch([shims], "print('native')") == "shim -E -S -c print('native')"


@pytest.mark.parametrize("entry", ["absolute", "relative"])
def test_the_hooks_python3_is_never_one_inside_the_project(tmp_path: Path, entry: str) -> None:
    """The agent writes the project: a python3 there (a virtualenv's bin folder that lost
    its pyvenv.cfg, a link out of the venv, any native program) is never taken, however it
    is named on PATH. Here a real interpreter, so that only where it sits tells them apart."""
    project, system = tmp_path / "project", tmp_path / "usr" / "bin"
    for folder in (project / ".venv" / "bin", system):
        folder.mkdir(parents=True)
        (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    inside = project / ".venv" / "bin" if entry == "absolute" else Path(".venv", "bin")
    done = subprocess.run(
        [
            "/bin/sh",
            str(REPO_ROOT / "hooks" / "python3"),
            "-c",
            "import sys; print(sys.executable)",
        ],
        env={"PATH": f"{inside}{os.pathsep}{system}", "CLAUDE_PROJECT_DIR": str(project)},
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(system / "python3")


def test_with_pyenv_a_python_version_file_in_the_project_does_not_choose_the_hooks_python(
    tmp_path: Path,
) -> None:
    """The real pyenv on this machine: the project names an installed version of its choice
    in `.python-version`; the hooks run the first python3 on PATH that is no shim."""
    shims = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"), "shims")
    native = next(
        (
            Path(f, "python3")
            for f in os.environ["PATH"].split(os.pathsep)
            if Path(f) != shims
            and Path(f, "python3").is_file()
            and not Path(f).parent.joinpath("pyvenv.cfg").exists()
            and Path(f, "python3").read_bytes()[:2] != b"#!"
        ),
        None,
    )
    if not (shims / "python3").is_file() or native is None:
        pytest.skip("needs pyenv's shims and another python3 on PATH")
    (tmp_path / ".python-version").write_text("system\n")
    done = subprocess.run(
        [
            "/bin/sh",
            str(REPO_ROOT / "hooks" / "python3"),
            "-c",
            "import sys; print(sys.executable)",
        ],
        env={"PATH": f"{shims}{os.pathsep}{native.parent}", "HOME": str(Path.home())},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(native)
