"""pytest-acceptance-doctor on a real install: the plugin installed from a clone of this
repository by the pinned Claude Code CLI (marketplace add, install) into a HOME of the
test's own. Healthy, it says so with exit code 0, its synthetic stop blocked by the
installed Stop hook, and leaves HOME and the temporary folder as they were. Each broken
install that can be made here is named with its fix, and the exit code is 1."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hook_transcripts import REPO_ROOT
from support import gate_python
from support.claude_cli import installed_claude
from support.isolation import LEVELS, wrapper_for

from pytest_acceptance.gate import isolation

PLUGIN_ID = "pytest-acceptance@pytest-acceptance"


def clean_environment(home: Path, tmp: Path) -> dict[str, str]:
    """This process's environment as a user's shell would have it: no switch of the hooks,
    no variable Claude Code sets for its hooks, HOME and TMPDIR the test's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEPTANCE_", "CLAUDE"))}
    env.update(HOME=str(home), TMPDIR=str(tmp))
    return env


def cli(home: Path, *args: str) -> None:
    env = clean_environment(home, Path(os.environ.get("TMPDIR", "/tmp")))
    done = subprocess.run(
        [str(installed_claude()), "plugin", *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HOME where the CLI installed the plugin from a clone of this repository."""
    base = tmp_path_factory.mktemp("doctor")
    clone = base / "pytest-acceptance"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        if (REPO_ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, clone / name)
    home = base / "home"
    home.mkdir()
    cli(home, "marketplace", "add", str(clone))
    cli(home, "install", PLUGIN_ID)
    return home


@pytest.fixture
def home(installed: Path, tmp_path: Path) -> Path:
    """A copy of the installed HOME, its paths rewritten to the copy: a test may break it."""
    copy = tmp_path / "home"
    shutil.copytree(installed, copy, symlinks=True)
    for name in (".claude/plugins/installed_plugins.json", ".claude/settings.json"):
        path = copy / name
        path.write_text(path.read_text().replace(str(installed), str(copy)))
    return copy


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def plugin_root(home: Path) -> Path:
    data = json.loads((home / ".claude/plugins/installed_plugins.json").read_text())
    return Path(data["plugins"][PLUGIN_ID][0]["installPath"])


class Report:
    def __init__(self, done: subprocess.CompletedProcess[str], host: str = "claude-code") -> None:
        self.code = done.returncode
        self.text = done.stdout + done.stderr
        self.host = host
        cells = [
            re.split(r"\s{2,}", line.strip())
            for line in done.stdout.splitlines()
            if line.startswith(f"{host} ")
        ]
        self.statuses = {row[1]: row[2] for row in cells}
        self.rows = {row[1]: " | ".join(row[2:]) for row in cells}

    def status(self, check: str) -> str:
        return self.statuses[check]

    def failed(self) -> set[str]:
        return {name for name in self.rows if self.status(name) == "FAIL"}


def doctor(
    home: Path,
    project: Path,
    *extra: str,
    prefix: Sequence[str] = (),
    env: dict[str, str] | None = None,
    host: str = "claude-code",
) -> Report:
    tmp = home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "pytest_acceptance.doctor", "--project", str(project)]
    done = subprocess.run(
        [*prefix, *command, *extra],
        env={**clean_environment(home, tmp), **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Report(done, host)


def broken(report: Report, check: str, *words: str) -> None:
    """`check` failed, named in the summary, its row holding `words` (the finding and the
    fix); nothing else failed but, on a machine whose gate run is below full isolation, that
    check too (it is true here as well)."""
    expected = {check}
    if "gate run isolation" in report.rows:
        expected |= below_full()
    assert report.code == 1, report.text
    assert report.failed() == expected, report.text
    summary = report.text.strip().splitlines()[-1]
    assert f"{report.host} {check}" in summary, report.text
    for word in words:
        assert word in report.rows[check], report.text


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Each path, and each file's size and time; Python's bytecode cache of the plugin's own
    modules aside (the installed hooks the synthetic stop runs write it, as their first real
    run does)."""
    return {
        str(path): (path.lstat().st_size, path.lstat().st_mtime_ns) if path.is_file() else (0, 0)
        for path in sorted(folder.rglob("*"))
        if "__pycache__" not in path.parts
    }


def test_a_healthy_install_is_said_healthy_and_left_as_it_was(home: Path, project: Path) -> None:
    """Every check holds (the sandbox off is a warning; below full isolation, that check
    fails, as on any install of such a machine), the synthetic /done on a failing criterion
    was blocked by the installed Stop hook through its gate run, and nothing in HOME nor in
    the temporary folder changed."""
    before = snapshot(home)
    report = doctor(home, project)
    assert report.failed() == below_full(), report.text
    assert report.code == (1 if below_full() else 0), report.text
    assert report.status("agent sandbox") == "warn", report.text
    assert "blocked: [pytest-acceptance stop guard]" in report.rows["synthetic stop"]
    assert "AC-1" in report.rows["synthetic stop"], report.text
    assert str(plugin_root(home)) in report.rows["plugin installed"]
    assert report.rows["hooks' python3"].startswith("ok | /"), report.text
    level = isolation.current()
    assert report.rows["gate run isolation"].startswith(
        f"{report.status('gate run isolation')} | {level.name}: {level.gives}"
    ), report.text
    assert "healthy" in report.text
    assert snapshot(home) == before
    assert list((home.parent / "tmp").iterdir()) == []


def below_full() -> set[str]:
    """What fails on any install of a machine whose gate run is below full isolation."""
    return set() if isolation.current().name == isolation.FULL else {"gate run isolation"}


def test_a_hook_removed_from_hooks_json(home: Path, project: Path) -> None:
    """Also the synthetic stop fails: there is no Stop hook to feed."""
    path = plugin_root(home) / "hooks" / "hooks.json"
    config = json.loads(path.read_text())
    del config["hooks"]["Stop"]
    path.write_text(json.dumps(config))
    report = doctor(home, project)
    assert report.failed() == {"hooks.json", "synthetic stop", *below_full()}, report.text
    assert report.code == 1
    assert "does not run stop_implement_hook.py on Stop" in report.rows["hooks.json"]
    assert "claude plugin install" in report.rows["hooks.json"]
    assert "no prompt or no Stop hook" in report.rows["synthetic stop"]


def test_hooks_disabled_in_the_settings(home: Path, project: Path) -> None:
    (project / ".claude").mkdir()
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"disableAllHooks": True}))
    report = doctor(home, project, "--no-synthetic-stop")
    broken(report, "hooks enabled", f"{local} sets disableAllHooks", "remove")


def test_the_plugin_disabled(home: Path, project: Path) -> None:
    cli(home, "disable", PLUGIN_ID)
    report = doctor(home, project, "--no-synthetic-stop")
    broken(report, "plugin enabled", "disabled in", f"claude plugin enable {PLUGIN_ID}")


def test_the_plugin_not_installed(tmp_path: Path, project: Path) -> None:
    empty = tmp_path / "empty-home"
    empty.mkdir()
    report = doctor(empty, project, "--no-synthetic-stop")
    broken(report, "plugin installed", "not in installed_plugins.json", "claude plugin install")


def test_the_hooks_launcher_picks_a_python3_that_is_no_python(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A program of its own named python3, first on PATH (not a script, so the launcher
    takes it): the hooks could not run."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    shutil.copy("/bin/false", fake / "python3")
    path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    report = doctor(home, project, "--no-synthetic-stop", env={"PATH": path})
    broken(report, "hooks' python3", "the launcher's python3 fails", "python3 >= 3.8")


def test_a_read_only_state_folder(home: Path, project: Path) -> None:
    """The state folder, made before (as by any earlier hook), mounted read-only (root
    writes through a mode)."""
    state = home / ".claude" / "plugins" / "data" / "pytest-acceptance-pytest-acceptance"
    state.mkdir(parents=True)
    prefix: list[str] = []
    if os.geteuid() == 0:
        remount = f"mount --bind {state} {state} && mount -o remount,bind,ro {state}"
        prefix = ["unshare", "--mount", "--", "/bin/sh", "-c", f'{remount} && exec "$@"', "sh"]
    else:
        state.chmod(0o555)
    report = doctor(home, project, "--no-synthetic-stop", prefix=prefix)
    broken(report, "state folder", f"{state} is not writable", "writable by your user")


@pytest.mark.isolation_level
@pytest.mark.parametrize("level", [isolation.VIEW, isolation.PID, isolation.NONE])
def test_no_bubblewrap(home: Path, project: Path, level: str) -> None:
    """Made for real (support/isolation.py); each level's reason and fix."""
    report = doctor(home, project, "--no-synthetic-stop", prefix=wrapper_for(level))
    expected = isolation.LEVELS[level]
    broken(report, "gate run isolation", f"{level}: {expected.gives}", "install bubblewrap")
    found = report.rows["gate run isolation"]
    assert "bwrap: not at /usr/bin/bwrap" in found
    if level == isolation.VIEW:
        assert "unshare and mount: /usr/bin/unshare starts a PID namespace with a read" in found
    if level == isolation.PID:
        assert "mount: not at /usr/bin/mount" in found


# --- Codex: the gate installed into a project by the installer, as docs/codex.md says ------


class CodexInstall:
    """A project with the gate installed for the pinned Codex CLI, and the Codex home that
    trusts it; `env` is what the user's shell would give doctor."""

    def __init__(self, root: Path, codex: Path) -> None:
        self.home = root / "home"
        self.codex_home = root / "codex-home"
        self.project = root / "codex-project"
        for folder in (self.home, self.codex_home, root / "tmp", self.project):
            folder.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=self.project, check=True)
        self.env = {"CODEX_HOME": str(self.codex_home), "ACCEPTANCE_CODEX": str(codex)}
        installer = [sys.executable, str(REPO_ROOT / "hooks" / "codex" / "install.py")]
        done = subprocess.run(
            [*installer, str(self.project)],
            env={**clean_environment(self.home, root / "tmp"), **self.env},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    @property
    def hooks_file(self) -> Path:
        return self.project / ".codex" / "hooks.json"

    @property
    def config(self) -> Path:
        return self.codex_home / "config.toml"

    def doctor(self, *extra: str, prefix: Sequence[str] = (), **env: str) -> Report:
        return doctor(
            self.home,
            self.project,
            "--agent",
            "codex",
            *extra,
            prefix=prefix,
            env={**self.env, **env},
            host="codex",
        )

    def edit_stop_hook(self) -> None:
        hooks = json.loads(self.hooks_file.read_text())
        hooks["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 901
        self.hooks_file.write_text(json.dumps(hooks, indent=2) + "\n")

    def stop_state_table(self) -> int:
        """The line of config.toml that opens the Stop hook's [hooks.state] table."""
        lines = self.config.read_text().splitlines()
        return next(i for i, line in enumerate(lines) if ":stop:0:0" in line)


@pytest.fixture
def codex_install(tmp_path: Path, codex_bin: Path) -> CodexInstall:
    return CodexInstall(tmp_path, codex_bin)


def codex_broken(report: Report, check: str, *words: str) -> None:
    """As `broken`, for the Codex rows."""
    broken(report, check, *words)


def test_codex_a_healthy_install_is_said_healthy_and_left_as_it_was(
    codex_install: CodexInstall,
) -> None:
    """Codex itself reports our three hooks registered, enabled and trusted; the synthetic
    claim of done on a failing criterion, fed to the installed hooks' commands, was
    blocked; nothing in HOME, the Codex home, the project or the temporary folder changed
    (Codex writes into the home it runs with: doctor runs it in one of its own)."""
    folders = (codex_install.home, codex_install.codex_home, codex_install.project)
    before = [snapshot(folder) for folder in folders]
    report = codex_install.doctor()
    assert report.failed() == below_full(), report.text
    assert report.code == (1 if below_full() else 0), report.text
    for check in ("codex CLI", "hooks registered", "hooks enabled", "hooks trusted"):
        assert report.status(check) == "ok", report.text
    assert "3 hooks of" in report.rows["hooks registered"], report.text
    assert report.rows["hooks' python3"].startswith("ok | /"), report.text
    assert str(codex_install.codex_home / "pytest-acceptance") in report.rows["state folder"]
    assert report.status("agent sandbox") == "ok", report.text
    assert "blocked: [pytest-acceptance stop guard]" in report.rows["synthetic stop"]
    assert "AC-1" in report.rows["synthetic stop"], report.text
    assert [snapshot(folder) for folder in folders] == before
    assert list((codex_install.home.parent / "tmp").iterdir()) == []


def test_codex_not_installed_in_the_project_is_no_failure(
    codex_install: CodexInstall, tmp_path: Path
) -> None:
    """A project the gate was never installed into: said, with the installer's command;
    nothing failed."""
    other = tmp_path / "other-project"
    other.mkdir()
    report = doctor(codex_install.home, other, env=codex_install.env, host="codex")
    assert report.statuses == {"installed": "-"}, report.text
    assert "hooks/codex/install.py" in report.rows["installed"]


def test_codex_the_stop_hook_removed(codex_install: CodexInstall) -> None:
    """Also the trust record no longer matches the file, and the synthetic stop has no Stop
    hook to feed."""
    hooks = json.loads(codex_install.hooks_file.read_text())
    del hooks["hooks"]["Stop"]
    codex_install.hooks_file.write_text(json.dumps(hooks, indent=2) + "\n")
    report = codex_install.doctor()
    expected = {"hooks registered", "hooks trusted", "synthetic stop"}
    assert report.failed() == expected | below_full(), report.text
    assert "Codex runs no stop.py on stop" in report.rows["hooks registered"]
    assert "hooks/codex/install.py" in report.rows["hooks registered"]
    assert "no prompt or no Stop hook" in report.rows["synthetic stop"]


def test_codex_a_hook_disabled_in_config_toml(codex_install: CodexInstall) -> None:
    lines = codex_install.config.read_text().splitlines()
    lines.insert(codex_install.stop_state_table() + 1, "enabled = false")
    codex_install.config.write_text("\n".join(lines) + "\n")
    report = codex_install.doctor("--no-synthetic-stop")
    codex_broken(report, "hooks enabled", "disabled: ", ":stop:0:0", "enabled = false")


def test_codex_a_hook_untrusted(codex_install: CodexInstall) -> None:
    """Its trusted_hash gone from config.toml: Codex would skip it without a word."""
    lines = codex_install.config.read_text().splitlines()
    del lines[codex_install.stop_state_table() : codex_install.stop_state_table() + 2]
    codex_install.config.write_text("\n".join(lines) + "\n")
    report = codex_install.doctor("--no-synthetic-stop")
    codex_broken(report, "hooks trusted", ":stop:0:0 is untrusted", "hooks/codex/install.py")


def test_codex_the_hooks_file_edited(codex_install: CodexInstall) -> None:
    """A trusted hook whose file changed: Codex skips it until trusted again."""
    codex_install.edit_stop_hook()
    report = codex_install.doctor("--no-synthetic-stop")
    codex_broken(
        report,
        "hooks trusted",
        ":stop:0:0 is modified",
        "changed since it was trusted",
        "check who edited",
    )


def test_codex_the_hooks_launcher_picks_a_python3_that_is_no_python(
    codex_install: CodexInstall, tmp_path: Path
) -> None:
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    shutil.copy("/bin/false", fake / "python3")
    path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    report = codex_install.doctor("--no-synthetic-stop", PATH=path)
    codex_broken(report, "hooks' python3", "the launcher's python3 fails", "python3 >= 3.8")


def test_codex_a_read_only_state_folder(codex_install: CodexInstall) -> None:
    state = codex_install.codex_home / "pytest-acceptance"
    prefix: list[str] = []
    if os.geteuid() == 0:
        remount = f"mount --bind {state} {state} && mount -o remount,bind,ro {state}"
        prefix = ["unshare", "--mount", "--", "/bin/sh", "-c", f'{remount} && exec "$@"', "sh"]
    else:
        state.chmod(0o555)
    report = codex_install.doctor("--no-synthetic-stop", prefix=prefix)
    codex_broken(report, "state folder", f"{state} is not writable", "writable by your user")


@pytest.mark.isolation_level
@pytest.mark.parametrize("level", [isolation.VIEW, isolation.PID, isolation.NONE])
def test_codex_no_bubblewrap(codex_install: CodexInstall, level: str) -> None:
    report = codex_install.doctor("--no-synthetic-stop", prefix=wrapper_for(level))
    expected = isolation.LEVELS[level]
    codex_broken(report, "gate run isolation", f"{level}: {expected.gives}", "install bubblewrap")


@pytest.mark.isolation_level
@pytest.mark.parametrize("level", LEVELS)
def test_codex_implement_says_what_this_machine_leaves_open(
    codex_install: CodexInstall, level: str
) -> None:
    """The flow's first answer (the installed prompt hook's, run as Codex runs it) carries
    the level's sentence and points to doctor below full; at full it carries neither."""
    hooks = json.loads(codex_install.hooks_file.read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {
        "session_id": f"doctor-test-{level}",
        "turn_id": "turn-1",
        "transcript_path": str(codex_install.home / "rollout.jsonl"),
        "cwd": str(codex_install.project),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "prompt": "$acceptance-implement spec.md",
    }
    env = {
        **clean_environment(codex_install.home, codex_install.home.parent / "tmp"),
        **codex_install.env,
        "ACCEPTANCE_GATE_PYTHON": gate_python.EXECUTABLE,
    }
    done = subprocess.run(
        [*wrapper_for(level), "/bin/sh", "-c", command],
        input=json.dumps(payload),
        cwd=codex_install.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    warning = isolation.LEVELS[level].warning
    if warning is None:
        assert "systemMessage" not in answer and "doctor" not in context, answer
        return
    assert warning in answer["systemMessage"] and warning in context, answer
    assert "pytest-acceptance-doctor --agent codex" in answer["systemMessage"], answer
