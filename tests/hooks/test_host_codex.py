"""What the Codex adapter knows, in process: which prompt pins a flow, how the installer's
trust record and Codex's config.toml are read and written, what the guard protects; and
Codex's hook scripts as Codex starts them. The host-neutral decisions those scripts call
are tested in test_prompt_flow.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hook_transcripts import host_answer
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate import codex_install, host_codex, hosts
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow
from pytest_acceptance.gate.flow_state import session_key as session_key_of


@pytest.mark.parametrize(
    ("prompt", "args"),
    [
        ("$acceptance-implement spec.md", "spec.md"),
        ("  $acceptance-implement specs/a.md please\n", "specs/a.md please"),
        ("$acceptance-implement", ""),
        ("please $acceptance-implement spec.md", None),  # only a prompt that starts with it
        ("$acceptance-implementation spec.md", None),
        ("$acceptance-implement-x spec.md", None),
        ("/implement spec.md", None),
        ("", None),
    ],
)
def test_only_a_prompt_that_starts_with_the_skill_pins(prompt: str, args: str | None) -> None:
    assert hosts.implement_args(prompt) == args


@given(st.text())
def test_any_prompt_is_read_without_error(prompt: str) -> None:
    args = hosts.implement_args(prompt)
    assert args is None or prompt.lstrip().startswith("$acceptance-implement")


def _pin(tmp_path: Path) -> Flow:
    folder = tmp_path / "flow"
    folder.mkdir()
    return Flow(
        folder,
        {"version": STATE_VERSION, "session_id": "s", "status": "open", "repo": str(tmp_path)},
    )


# --- config.toml and the trust record -------------------------------------------------------

_KEYS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(
    lambda key: key.strip() == key
)


@given(st.dictionaries(_KEYS, st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True), max_size=4))
def test_trusted_hashes_written_are_read_back(hashes: dict[str, str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.toml"
        config.write_text('model = "gpt-5.5"\n\n[hooks.state."other"]\ntrusted_hash = "x"\n')
        tables = {codex_install._state_header(k): {"trusted_hash": v} for k, v in hashes.items()}
        codex_install.set_config_tables(config, tables)
        codex_install.set_config_tables(config, tables)  # again: replaced, not duplicated
        expected = {"other": "x", **hashes}
        assert host_codex.configured_trust(config) == expected  # as TOML (3.11+)
        assert host_codex._trust_tables(config.read_text().split("\n")) == expected  # 3.8
        assert config.read_text().count("[hooks.state.") == 1 + len(hashes)


def test_an_unreadable_config_trusts_nothing(tmp_path: Path) -> None:
    assert host_codex.configured_trust(tmp_path / "missing.toml") == {}
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe")
    assert host_codex.configured_trust(tmp_path / "bad.toml") == {}


@pytest.mark.parametrize(
    "data",
    [
        {"hooks_file": "f", "file_sha256": "s", "hashes": {"k": 1}},
        {"hooks_file": "f", "file_sha256": "s", "hashes": {}, "extra": 1},
        {"hooks_file": "f", "hashes": {}},
        ["not", "a", "record"],
    ],
)
def test_a_trust_record_is_read_only_in_its_exact_shape(data: object) -> None:
    assert host_codex.TrustRecord.from_json(data) is None


def test_a_trust_record_round_trips() -> None:
    record = host_codex.TrustRecord("f", "s", (("a", "sha256:1"), ("b", "sha256:2")))
    assert host_codex.TrustRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_a_project_never_installed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    (problem,) = host_codex.trust_problems(tmp_path / ".codex" / "hooks.json")
    assert "the installer never trusted" in problem


# --- the guard's reading of apply_patch ------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "denied"),
    [
        ("*** Begin Patch\n*** Update File: spec.md\n@@\n-a\n+b\n*** End Patch\n", True),
        ("*** Begin Patch\n*** Delete File: spec.md\n*** End Patch\n", True),
        ("*** Begin Patch\n*** Update File: app.py\n*** Move to: spec.md\n*** End Patch\n", True),
        ("*** Begin Patch\n*** Add File: .codex/hooks.json\n+{}\n*** End Patch\n", True),
        ("*** Begin Patch\n*** Add File: sub/../spec.md\n+x\n*** End Patch\n", True),
        ("*** Begin Patch\n*** Update File: app.py\n@@\n-a\n+b\n*** End Patch\n", False),
    ],
)
def test_the_guard_reads_every_file_a_patch_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patch: str, denied: bool
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    (tmp_path / "spec.md").write_text("# spec\n")
    pin = _pin(tmp_path)
    pin.data["spec_path"] = str(tmp_path / "spec.md")
    payload = {"tool_name": "apply_patch", "tool_input": {"command": patch}, "cwd": str(tmp_path)}
    assert (host_codex.protected_target(pin, payload) is not None) is denied


# --- the Stop hook itself, as Codex starts it -------------------------------------------------


def _run_stop_hook(payload: dict[str, object], codex_home: Path) -> dict[str, object]:
    return _run_hook("stop.py", payload, codex_home)


def _run_hook(script: str, payload: dict[str, object], codex_home: Path) -> dict[str, object]:
    return host_answer("codex", script, payload, {"CODEX_HOME": str(codex_home)}, codex_home.parent)


def test_a_stop_whose_state_is_damaged_blocks_then_ends_forced(tmp_path: Path) -> None:
    """The pin cannot be read: each stop is blocked (whether a flow is open is unknown), but
    counted, since Codex would loop for ever; past the cap it goes through, FORCED."""
    home = tmp_path / "codex-home"
    session = "0190-damaged"
    folder = home / "pytest-acceptance" / "flows" / session_key_of(session)
    folder.mkdir(parents=True)
    (folder / "flow.json").write_text("{damaged")
    payload = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "Stop"}
    answers = [_run_stop_hook({**payload, "stop_hook_active": i > 0}, home) for i in range(4)]
    assert [a.get("decision") for a in answers] == ["block", "block", "block", None]
    assert "could not check this stop" in str(answers[0]["reason"])
    assert "FORCED, NOT verified" in str(answers[3]["systemMessage"])
    (record,) = (
        json.loads(line)
        for line in (home / "pytest-acceptance" / "outcomes.jsonl").read_text().splitlines()
    )
    assert record["outcome"] == "forced" and record["session_id"] == session


def test_a_stop_outside_any_flow_goes_through(tmp_path: Path) -> None:
    """Control: no pin for the session, nothing to enforce."""
    answer = _run_stop_hook({"session_id": "none", "cwd": str(tmp_path)}, tmp_path / "home")
    assert answer.get("decision") is None


def _open_flow(codex_home: Path, session: str, repo: Path) -> None:
    folder = codex_home / "pytest-acceptance" / "flows" / session_key_of(session)
    folder.mkdir(parents=True)
    data = {"version": STATE_VERSION, "session_id": session, "status": "open", "repo": str(repo)}
    (folder / "flow.json").write_text(json.dumps(data))


@pytest.mark.parametrize("prompt", ["go on", "$acceptance-implement spec.md"])
def test_no_flow_resumes_while_a_hook_would_be_skipped(tmp_path: Path, prompt: str) -> None:
    """A session resumed into its open flow, with the hooks never trusted here (so Codex
    would skip the Stop hook): any prompt is refused, and the refusal recorded."""
    home = tmp_path / "codex-home"
    _open_flow(home, "0190-resumed", tmp_path)
    payload = {"session_id": "0190-resumed", "cwd": str(tmp_path), "prompt": prompt}
    answer = _run_hook("prompt.py", {**payload, "hook_event_name": "UserPromptSubmit"}, home)
    assert answer.get("decision") == "block"
    assert "NOT FULLY GATED" in str(answer["reason"])
    outcomes = (home / "pytest-acceptance" / "outcomes.jsonl").read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in outcomes] == ["refused"]


def test_outside_a_flow_an_untrusted_hook_only_warns(tmp_path: Path) -> None:
    """Control: no open flow, a prompt that starts none: it goes through, with the warning."""
    payload = {"session_id": "0190-new", "cwd": str(tmp_path), "prompt": "hello"}
    answer = _run_hook(
        "prompt.py", {**payload, "hook_event_name": "UserPromptSubmit"}, tmp_path / "h"
    )
    assert answer.get("decision") is None
    assert "NOT FULLY GATED" in str(answer["systemMessage"])


def test_the_gates_reasons_name_no_claude_command_on_codex() -> None:
    from pytest_acceptance.gate import gate

    reason = (
        f"restore it, or {gate.ESCALATE}; since /pytest-acceptance:implement started; run "
        f"{gate.VERIFY}, then {gate.DONE} again"
    )
    told = host_codex.in_codex_words(reason)
    assert "/pytest-acceptance:" not in told
    assert "ESCALATE:" in told and "python -m pytest --acceptance" in told
