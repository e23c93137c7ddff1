"""Doctor's checks for the OpenAI Codex CLI, in the project named: the `codex` that runs;
our hooks registered, enabled and trusted as Codex itself reports them (`codex app-server`,
`hooks/list`, asked with a copy of your config.toml in a temporary CODEX_HOME, so that
nothing of yours is written), and as the gate's own trust record says; the interpreter the
hooks' launcher picks; the state folder writable; the gate run's isolation level; Codex's
sandbox; and a synthetic stop that the installed Stop hook must block.

Codex skips an untrusted hook, or a trusted one whose file changed, without a word: this is
the one place that says so before a session."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_acceptance.doctor import FAIL, NOT_INSTALLED, OK, WARN, Check, Options, probes
from pytest_acceptance.doctor.codex_stop import codex_environment, synthetic_stop
from pytest_acceptance.gate import codex_install, host_codex, hosts

HOST = "codex"
# Codex's name of each event (hooks/list) and the script of ours it runs.
SCRIPTS = {"userPromptSubmit": "prompt.py", "preToolUse": "pretool.py", "stop": "stop.py"}
_SANDBOX_MODE = re.compile(r'^\s*sandbox_mode\s*=\s*"([^"]*)"\s*$')


def installer(project: Path, root: Path | None = None) -> str:
    return hosts.installer_command(
        host_codex.HOOK_SET, project, root if root is not None else "<plugin>"
    )


def codex_binary() -> str | None:
    """The `codex` the installer asks: $ACCEPTANCE_CODEX, else the one on PATH."""
    return os.environ.get("ACCEPTANCE_CODEX", "").strip() or shutil.which("codex")


def checks(options: Options) -> list[Check]:
    project = options.project
    hooks_file = project / host_codex.HOOKS_FILE
    if not hooks_file.is_file():
        found = f"no {host_codex.HOOKS_FILE} in {project}"
        return [Check(HOST, "installed", NOT_INSTALLED, found, installer(project))]
    codex = codex_binary()
    version = _version(codex) if codex else None
    if codex is None or version is None:
        found = f"{codex or 'codex'} does not run" if codex else "no codex on PATH"
        fix = "install the Codex CLI (npm install -g @openai/codex) or set ACCEPTANCE_CODEX"
        return [Check(HOST, "codex CLI", FAIL, found, fix)]
    rows = [Check(HOST, "codex CLI", OK, f"{codex} ({version})")]
    try:
        listed = _listed_hooks(project, codex)
    except hosts.InstallError as error:
        return [*rows, Check(HOST, "hooks registered", FAIL, str(error), installer(project))]
    ours = _ours(listed, hooks_file)
    rows += [_registered(project, hooks_file, ours), _enabled(ours), _trusted(project, ours)]
    root = next(filter(None, (probes.plugin_root(h.get("command")) for h in ours.values())), None)
    rows.append(probes.hooks_python(HOST, root, project, installer(project)))
    rows += [probes.writable_folder(HOST, host_codex.state_dir()), probes.isolation_level(HOST)]
    rows.append(_sandbox())
    if options.synthetic_stop:
        rows.append(_synthetic(codex, project, hooks_file, ours))
    return rows


def _version(codex: str) -> str | None:
    try:
        with scratch_codex_home():
            done = subprocess.run(
                [codex, "--version"], capture_output=True, text=True, timeout=60, check=False
            )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _listed_hooks(project: Path, codex: str) -> list[dict[str, Any]]:
    """Every hook Codex sees for the project, asked with a copy of the user's config.toml."""
    config = host_codex.codex_home() / "config.toml"
    with scratch_codex_home() as home:
        if config.is_file():
            shutil.copyfile(config, home / "config.toml")
        return codex_install.list_hooks(project, codex)


@contextmanager
def scratch_codex_home() -> Iterator[Path]:
    """A temporary CODEX_HOME (and TMPDIR beside it) for this process while Codex runs:
    Codex writes into the home it runs with, even for --version, and nothing of the user's
    may change."""
    scratch = Path(tempfile.mkdtemp(prefix="pytest-acceptance-doctor-"))
    try:
        home, tmp = scratch / "codex-home", scratch / "tmp"
        home.mkdir()
        tmp.mkdir()
        with codex_environment({"CODEX_HOME": str(home), "TMPDIR": str(tmp)}):
            yield home
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _ours(listed: list[dict[str, Any]], hooks_file: Path) -> dict[str, dict[str, Any]]:
    """Our handler of each event, from the project's hooks file."""
    found: dict[str, dict[str, Any]] = {}
    for handler in listed:
        event, command = handler.get("eventName"), handler.get("command")
        script = SCRIPTS.get(str(event))
        if handler.get("sourcePath") != str(hooks_file) or not isinstance(command, str):
            continue
        if script is not None and f"hooks/codex/{script}" in command:
            found.setdefault(str(event), handler)
    return found


def _registered(project: Path, hooks_file: Path, ours: dict[str, dict[str, Any]]) -> Check:
    missing = [f"{SCRIPTS[event]} on {event}" for event in SCRIPTS if event not in ours]
    if not ours:
        found = f"Codex lists none of our hooks of {hooks_file} (is the project trusted?)"
        return Check(HOST, "hooks registered", FAIL, found, installer(project))
    if missing:
        found = f"Codex runs no {', no '.join(missing)} from {hooks_file}"
        return Check(HOST, "hooks registered", FAIL, found, installer(project))
    return Check(HOST, "hooks registered", OK, f"{len(ours)} hooks of {hooks_file}")


def _enabled(ours: dict[str, dict[str, Any]]) -> Check:
    disabled = [str(h.get("key")) for h in ours.values() if h.get("enabled") is not True]
    if disabled:
        config = host_codex.codex_home() / "config.toml"
        fix = f'remove `enabled = false` from [hooks.state."<key>"] in {config}'
        return Check(HOST, "hooks enabled", FAIL, f"disabled: {', '.join(disabled)}", fix)
    return Check(HOST, "hooks enabled", OK, "Codex reports each of them enabled")


def _trusted(project: Path, ours: dict[str, dict[str, Any]]) -> Check:
    """Codex's trust status of each hook, and the gate's own record of what was trusted."""
    statuses = {str(h.get("key")): str(h.get("trustStatus")) for h in ours.values()}
    skipped = [f"{key} is {status}" for key, status in statuses.items() if status != "trusted"]
    problems = host_codex.trust_problems(project / host_codex.HOOKS_FILE)
    if not skipped and not problems:
        return Check(HOST, "hooks trusted", OK, "Codex reports each of them trusted")
    fix = installer(project)
    if any(status == "modified" for status in statuses.values()) or any(
        "changed since it was trusted" in problem for problem in problems
    ):
        fix = f"check who edited {project / host_codex.HOOKS_FILE}, then {fix}"
    found = "Codex skips them: " + "; ".join([*skipped, *problems])
    return Check(HOST, "hooks trusted", FAIL, found, fix)


def _sandbox() -> Check:
    """Codex's sandbox as config.toml sets it (a session's --sandbox can still change it)."""
    config = host_codex.codex_home() / "config.toml"
    mode = _configured_mode(config)
    fix = f'set sandbox_mode = "workspace-write" in {config} (docs/codex.md)'
    if mode == "danger-full-access":
        return Check(HOST, "agent sandbox", WARN, f"off: sandbox_mode = {mode!r}", fix)
    said = f"sandbox_mode = {mode!r}" if mode else "Codex's default (read-only)"
    return Check(HOST, "agent sandbox", OK, f"on: {said}; a session's --sandbox overrides it")


def _configured_mode(config: Path) -> str | None:
    """The top-level sandbox_mode (before the first table) of config.toml."""
    try:
        lines = config.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        if line.lstrip().startswith("["):
            return None
        matched = _SANDBOX_MODE.match(line)
        if matched:
            return matched.group(1)
    return None


def _synthetic(
    codex: str, project: Path, hooks_file: Path, ours: dict[str, dict[str, Any]]
) -> Check:
    fix = f"the Stop hook must block a claim of done on a failing criterion: {installer(project)}"
    commands = {event: str(handler.get("command")) for event, handler in ours.items()}
    if "userPromptSubmit" not in commands or "stop" not in commands:
        return Check(
            HOST, "synthetic stop", FAIL, "not blocked: no prompt or no Stop hook to feed", fix
        )
    return probes.synthetic(HOST, fix, lambda: synthetic_stop(codex, hooks_file, commands))
