"""The repository is a Claude Code plugin: manifest, skills with the right frontmatter, hooks
wired through ${CLAUDE_PLUGIN_ROOT}, and hooks that need nothing but the standard library."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hook_transcripts import (
    REPO_ROOT,
    SPEC_TEXT,
    TranscriptBuilder,
    expansion_payload,
    make_fail,
    make_pass,
    make_repo,
    stop_payload,
    without_level_warning,
)
from support import gate_python

SKILLS = ("implement", "verify", "done", "escalate")


def frontmatter(skill: str) -> tuple[dict[str, object], str]:
    text = (REPO_ROOT / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_manifest_names_the_plugin_after_the_product() -> None:
    manifest = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "pytest-acceptance"
    assert manifest["description"]


@pytest.mark.parametrize("skill", SKILLS)
def test_every_skill_has_name_and_description(skill: str) -> None:
    meta, body = frontmatter(skill)
    assert meta["name"] == skill
    assert isinstance(meta["description"], str) and len(meta["description"]) > 40
    assert body.strip()


@pytest.mark.parametrize("skill", ["verify", "done", "escalate"])
def test_internal_skills_are_not_user_invocable(skill: str) -> None:
    meta, _ = frontmatter(skill)
    assert meta["user-invocable"] is False
    assert "Internal only" in str(meta["description"])


def test_implement_is_for_users_only() -> None:
    """The model cannot start (and so abandon) a flow by itself: that would be an escape."""
    meta, body = frontmatter("implement")
    assert meta.get("user-invocable", True) is True
    assert meta["disable-model-invocation"] is True
    assert "$ARGUMENTS" in body
    assert "/tmp/implement-log-" in body
    assert "pytest-acceptance:verify" in body


def test_verify_runs_pytest_acceptance_with_the_log() -> None:
    _, body = frontmatter("verify")
    assert "pytest --acceptance <spec path> --acceptance-log=<log path>" in body
    for code in ("**0", "**1", "**10", "**11", "**2"):
        assert code in body
    assert "pytest-acceptance:done" in body


def test_escalate_writes_the_seed_evidence_format() -> None:
    _, body = frontmatter("escalate")
    for heading in (
        "## Escalation: Criterion",
        "### Attempts (from implementation log)",
        "### Hypothesis",
        "### Possible Resolutions",
        "### Requesting",
    ):
        assert heading in body


def test_hooks_json_wires_both_hooks_through_the_plugin_root() -> None:
    config = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text())
    stop = config["hooks"]["Stop"][0]["hooks"][0]["command"]
    pre = config["hooks"]["PreToolUse"][0]
    assert "${CLAUDE_PLUGIN_ROOT}/hooks/stop_implement_hook.py" in stop
    assert pre["matcher"] == "Skill"
    assert "${CLAUDE_PLUGIN_ROOT}/hooks/pretool_gate_hook.py" in pre["hooks"][0]["command"]


def test_hooks_run_from_a_bare_copy_without_the_package_installed(tmp_path: Path) -> None:
    """Only hooks/ and the stdlib-only zone they import (tree/, integrity/, gate/), under an
    isolated python3 -S -I; the gate's own run uses the project's interpreter."""
    plugin = tmp_path / "plugin"
    shutil.copytree(REPO_ROOT / "hooks", plugin / "hooks")
    shutil.copytree(REPO_ROOT / ".claude-plugin", plugin / ".claude-plugin")
    shutil.copytree(REPO_ROOT / "skills", plugin / "skills")
    (plugin / "pytest_acceptance").mkdir()
    package = REPO_ROOT / "pytest_acceptance"
    for zone in ("tree", "integrity", "gate"):
        shutil.copytree(package / zone, plugin / "pytest_acceptance" / zone)
    for name in ("__init__.py", "gate_probe.py"):
        shutil.copy(package / name, plugin / "pytest_acceptance" / name)
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    env = {
        "PATH": "/usr/bin:/bin",
        "CLAUDE_PLUGIN_DATA": str(tmp_path / "data"),
        "ACCEPTANCE_GATE_PYTHON": gate_python.EXECUTABLE,
    }

    def hook(script: str, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-I", str(plugin / "hooks" / script)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    builder = TranscriptBuilder(repo)
    builder.command(
        "pytest-acceptance:implement",
        "specs/feature.md",
        plugin / "skills" / "implement",
        prompt_id="prompt-copy",
    )
    pinned = hook("prompt_hook.py", expansion_payload(repo, "specs/feature.md", "prompt-copy"))
    answer = json.loads(pinned.stdout) if pinned.stdout.strip() else None
    assert pinned.returncode == 0 and without_level_warning(answer) is None, pinned.stdout
    builder.skill(
        "pytest-acceptance:verify", "specs/feature.md", skill_dir=plugin / "skills" / "verify"
    )
    builder.skill("pytest-acceptance:done", skill_dir=plugin / "skills" / "done")
    transcript = builder.write(tmp_path / "session.jsonl")
    make_pass(repo)
    done = hook("stop_implement_hook.py", stop_payload(transcript, repo))
    assert done.returncode == 0, done.stderr
    stopped = json.loads(done.stdout) if done.stdout.strip() else None
    # the gate's own run passed, fingerprint by the copy
    assert without_level_warning(stopped) is None, done.stdout
    make_fail(repo)
    again = hook("stop_implement_hook.py", stop_payload(transcript, repo))
    assert "AC-1 works (failed" in json.loads(again.stdout)["reason"]


_LAZY_IMPORTS = """
import sys, time
sys.path.insert(0, sys.argv[1])  # as every hook script does
from pytest_acceptance.gate import gate
from pytest_acceptance.gate.pins import criterion_integrity
fingerprint = gate.fingerprint(sys.argv[2], time.monotonic() + 60)
integrity = criterion_integrity.integrity_module()
fingerprint_module = sys.modules["pytest_acceptance.tree.fingerprint"]
print(sys.path.count(sys.argv[1]), fingerprint_module.__file__, integrity.__file__, fingerprint)
"""


def test_the_gate_imports_the_package_through_the_one_path_entry_a_hook_script_adds(
    tmp_path: Path,
) -> None:
    """Under `python3 -E -S` (no site-packages, no PYTHONPATH) from a folder without the
    package, the gate's lazy imports (fingerprint, integrity) find the plugin's own modules
    through the single sys.path entry the hook script adds, listed once."""
    repo = make_repo(tmp_path / "repo", SPEC_TEXT)
    done = subprocess.run(
        ["python3", "-E", "-S", "-c", _LAZY_IMPORTS, str(REPO_ROOT), str(repo)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    count, fingerprint_file, integrity_file, fingerprint = done.stdout.split(maxsplit=3)
    assert count == "1"
    package = REPO_ROOT / "pytest_acceptance"
    assert Path(fingerprint_file) == package / "tree" / "fingerprint.py"
    assert Path(integrity_file) == package / "integrity" / "__init__.py"
    assert fingerprint.strip()
