"""What the Gemini adapter and installer decide, in process: which prompt pins a flow, what
the guard protects from Gemini's shell and file tools, the answers in Gemini's shape, and
the settings the installer writes. The host-neutral decisions the hooks call are tested in
test_prompt_flow.py; the whole through the real Gemini CLI in test_gemini_flow.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hook_transcripts import host_answer
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, Options
from pytest_acceptance.doctor import gemini as gemini_doctor
from pytest_acceptance.gate import gemini_install, host_gemini, hosts
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow
from pytest_acceptance.gate.flow_state import session_key as session_key_of


@pytest.mark.parametrize(
    ("prompt", "args"),
    [
        ("$acceptance-implement spec.md", "spec.md"),
        ("  $acceptance-implement specs/a.md please\n", "specs/a.md please"),
        ("please $acceptance-implement spec.md", None),  # only a prompt that starts with it
        ("$acceptance-implement-x spec.md", None),
        ("/implement spec.md", None),
        ("", None),
    ],
)
def test_only_a_prompt_that_starts_with_the_flow_prompt_pins(prompt: str, args: str | None) -> None:
    assert host_gemini.ADAPTER.flow_prompt(prompt) == args


@given(st.text())
def test_any_prompt_is_read_without_error(prompt: str) -> None:
    args = hosts.implement_args(prompt)
    assert args is None or prompt.lstrip().startswith(host_gemini.IMPLEMENT_PROMPT)


@pytest.fixture
def pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flow:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
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


def _call(pin: Flow, tool: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_name": tool, "tool_input": tool_input, "cwd": pin.repo}


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("run_shell_command", {"command": "echo '{}' > .gemini/settings.json"}),
        ("run_shell_command", {"command": "rm settings.json", "dir_path": ".gemini"}),
        ("run_shell_command", {"command": "sed -i s/x/y/ spec.md"}),
        ("run_shell_command", {"command": "cp /dev/null ~/.gemini/settings.json"}),
        ("write_file", {"file_path": ".gemini/settings.json", "content": "{}"}),
        ("write_file", {"file_path": "spec.md", "content": "# easier spec\n"}),
        ("replace", {"file_path": "spec.md", "old_string": "spec", "new_string": "x"}),
        ("replace", {"file_path": "~/.gemini/pytest-acceptance/flows/x", "old_string": "a"}),
    ],
)
def test_the_guard_denies_a_write_to_the_spec_or_geminis_settings(
    pin: Flow, tool: str, tool_input: dict[str, Any]
) -> None:
    assert host_gemini.protected_target(pin, _call(pin, tool, **tool_input)) is not None


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("run_shell_command", {"command": "echo 2 > value.txt"}),
        ("run_shell_command", {"command": "cat .gemini/settings.json spec.md"}),
        ("write_file", {"file_path": "value.txt", "content": "2\n"}),
        ("replace", {"file_path": "src/app.py", "old_string": "1", "new_string": "2"}),
        ("read_file", {"file_path": "spec.md"}),
        ("write_file", {"content": "no path"}),
    ],
)
def test_the_guard_lets_an_ordinary_call_through(
    pin: Flow, tool: str, tool_input: dict[str, Any]
) -> None:
    """The control beside the attacks: the code and a read of the protected files pass."""
    assert host_gemini.protected_target(pin, _call(pin, tool, **tool_input)) is None


def test_a_refusal_is_geminis_deny_and_a_forced_stop_ends_the_session() -> None:
    render = host_gemini.ADAPTER.render
    assert render({"decision": "block", "reason": "r"}) == {"decision": "deny", "reason": "r"}
    forced = {"continue": False, "stopReason": "FORCED", "systemMessage": "FORCED"}
    assert render(forced) == forced
    context = {"hookSpecificOutput": {"hookEventName": "x", "additionalContext": "pinned"}}
    assert render(context) == context  # BeforeAgent reads additionalContext whatever the name


def test_the_gates_reasons_name_no_claude_command_on_gemini() -> None:
    told = host_gemini.ADAPTER.words("Run /pytest-acceptance:verify, then /pytest-acceptance:done.")
    assert "/pytest-acceptance:" not in told


def test_the_installer_keeps_the_users_settings_and_replaces_its_own(tmp_path: Path) -> None:
    own_hook = {"hooks": [{"type": "command", "command": "lint", "name": "mine"}]}
    settings = {"model": {"name": "x"}, "hooks": {"AfterAgent": [own_hook]}}
    once = gemini_install.merged_settings(settings, tmp_path)
    twice = gemini_install.merged_settings(once, tmp_path)
    assert twice == once
    assert once["model"] == {"name": "x"} and once["hooksConfig"] == {"enabled": True}
    assert once["hooks"]["AfterAgent"][0] == own_hook and len(once["hooks"]["AfterAgent"]) == 2
    timeouts = [g["hooks"][0]["timeout"] for g in once["hooks"]["AfterAgent"][1:]]
    assert timeouts == [900_000]  # ms, above the stop hook's own 840 s deadline


def test_the_installer_refuses_a_settings_file_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    assert gemini_install.main([str(tmp_path)]) == 1
    assert str(settings) in capsys.readouterr().err
    assert settings.read_text() == "{not json"  # left as it was


def test_the_installer_trusts_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert gemini_install.main([str(tmp_path)]) == 0
    trusted = tmp_path / "home" / ".gemini" / gemini_install.TRUSTED_FOLDERS
    assert json.loads(trusted.read_text()) == {str(tmp_path.resolve()): "TRUST_FOLDER"}


def _doctor(project: Path) -> dict[str, str]:
    options = Options(project=project, plugin_root=None, synthetic_stop=False)
    return {check.name: check.status for check in gemini_doctor.checks(options)}


def test_doctor_says_an_installed_project_is_gated_and_a_weakened_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    assert _doctor(project) == {"installed": NOT_INSTALLED}
    assert gemini_install.main([str(project)]) == 0
    found = _doctor(project)
    assert found["hooks installed"] == found["project trusted"] == OK, found
    assert found["hooks' python3"] == OK, found
    settings_file = project / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] = 60_000  # under the deadline
    settings_file.write_text(json.dumps(settings))
    (tmp_path / "home" / ".gemini" / gemini_install.TRUSTED_FOLDERS).write_text("{}")
    found = _doctor(project)
    assert found["hooks installed"] == found["project trusted"] == FAIL, found


def _installed_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    assert gemini_install.main([str(project)]) == 0
    return project


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("where", "change", "said"),
    [
        ("project", lambda s: s["hooks"].pop("AfterAgent"), "no AfterAgent hook of ours"),
        (
            "project",
            lambda s: s["hooks"]["AfterAgent"][0]["hooks"][0].update(timeout=900),
            "timeout",
        ),
        ("project", lambda s: s["hooksConfig"].update(enabled=False), "runs no hook"),
        (
            "user",
            lambda s: s.setdefault("hooksConfig", {}).update(disabled=["pytest-acceptance-stop"]),
            "hooksConfig.disabled",
        ),
    ],
    ids=["stop hook removed", "timeout in seconds", "hooks off", "ours disabled by the user"],
)
def test_a_hook_gemini_would_skip_is_said_and_refuses_a_new_flow(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    change: Any,
    said: str,
) -> None:
    project = _installed_project(tmp_path, monkeypatch)
    assert host_gemini.skipped_hooks(str(project)) is None  # the control: as installed
    target = (
        project / ".gemini" / "settings.json"
        if where == "project"
        else tmp_path / "home" / ".gemini" / "settings.json"
    )
    _edit(target, change)
    warning = host_gemini.skipped_hooks(str(project))
    assert warning is not None and said in warning and "NOT FULLY GATED" in warning


def test_the_users_hooks_switch_yields_to_the_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini reads the project's settings over the user's: hooks off for the user, on in
    the project (as installed), run."""
    project = _installed_project(tmp_path, monkeypatch)
    user = tmp_path / "home" / ".gemini" / "settings.json"
    _edit(user, lambda s: s.update(hooksConfig={"enabled": False}))
    assert host_gemini.skipped_hooks(str(project)) is None


# --- the hook scripts themselves, as Gemini starts them -------------------------------------


def _run_hook(script: str, payload: dict[str, object], home: Path) -> dict[str, object]:
    return host_answer("gemini", script, payload, {"HOME": str(home)}, home.parent)


def test_a_stop_whose_state_is_damaged_is_denied_then_ends_forced(tmp_path: Path) -> None:
    """The pin cannot be read: each stop is denied (whether a flow is open is unknown), but
    counted, since Gemini would retry for ever; past the cap it goes through, FORCED."""
    home = tmp_path / "home"
    session = "damaged"
    folder = home / ".gemini" / hosts.STATE_FOLDER / "flows" / session_key_of(session)
    folder.mkdir(parents=True)
    (folder / "flow.json").write_text("{damaged")
    payload = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "AfterAgent"}
    answers = [_run_hook("stop.py", {**payload, "stop_hook_active": i > 0}, home) for i in range(4)]
    assert [a.get("decision") for a in answers] == ["deny", "deny", "deny", None]
    assert "could not check this stop" in str(answers[0]["reason"])
    assert "FORCED, NOT verified" in str(answers[3]["systemMessage"])


def test_a_prompt_with_unreadable_input_is_let_through_with_a_note(tmp_path: Path) -> None:
    """The control beside it: the prompt hook never refuses a prompt for its own error."""
    answer = _run_hook("prompt.py", {"hook_event_name": "BeforeAgent"}, tmp_path / "home")
    assert answer.get("decision") is None and "flow not pinned" in str(answer["systemMessage"])


def test_the_guard_denies_in_geminis_shape_inside_a_flow(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    folder = home / ".gemini" / hosts.STATE_FOLDER / "flows" / session_key_of("open")
    folder.mkdir(parents=True)
    data = {"version": STATE_VERSION, "session_id": "open", "status": "open", "repo": str(project)}
    (folder / "flow.json").write_text(json.dumps(data))
    call = {"session_id": "open", "cwd": str(project), "hook_event_name": "BeforeTool"}
    tamper = {"tool_name": "write_file", "tool_input": {"file_path": ".gemini/settings.json"}}
    edit = {"tool_name": "write_file", "tool_input": {"file_path": "value.txt"}}
    denied = _run_hook("pretool.py", {**call, **tamper}, home)
    assert denied["decision"] == "deny" and "[pytest-acceptance guard]" in str(denied["reason"])
    assert _run_hook("pretool.py", {**call, **edit}, home) == {}
