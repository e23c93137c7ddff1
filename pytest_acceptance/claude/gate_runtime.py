"""The interpreter the gate verifies with, pinned at /implement, and what it is made of.

Found in this order: ``$ACCEPTANCE_GATE_PYTHON``, ``<repo>/.venv/bin/python``,
``<repo>/venv/bin/python``, ``python3`` on PATH -- the first that can run
``pytest_acceptance.gate_probe`` (which also parses the pinned spec and reads the pinned
settings). This stdlib process hashes the interpreter's files itself: a probe running in
a tampered interpreter could lie about them. Also the environment every gate subprocess
gets, built from scratch.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from pytest_acceptance.claude import environment_digests, gate_env, interpreter_paths, witness
from pytest_acceptance.claude.criteria_env import CRITERIA_PYCACHE_VARIABLE
from pytest_acceptance.claude.flow_state import CRITERIA_CLOSURES_KEY, Flow, write_json
from pytest_acceptance.claude.hook_io import PLUGIN_ROOT
from pytest_acceptance.tree import closure

_KEPT_ENV = ("PATH", "HOME", "LANG", "TZ", "USER", "LOGNAME")
# The top-level names the gate has Pythons of the run import its own code and its runner's
# by (its pytest's `-p`, the modules a criterion's pytest loads them through): a project
# module that takes one since /implement is refused like any other that shadows.
GATE_NAMES = frozenset(
    {"pytest_acceptance", "pytest", "_pytest", "xdist", "pluggy", "execnet", witness.PLUGIN_PACKAGE}
)


class GateError(Exception):
    """The gate cannot verify; the message says why and what to do. It blocks."""


CLOSURE_BUDGET = 120.0  # seconds to pin, or to check, the environment's files


def candidate_pythons(repo: Path) -> list[str]:
    """Where the gate looks for an interpreter that can import pytest_acceptance."""
    configured = os.environ.get("ACCEPTANCE_GATE_PYTHON", "").strip()
    if configured:
        return [configured]
    found = [str(repo / folder / "bin" / "python") for folder in (".venv", "venv")]
    found = [path for path in found if os.path.isfile(path)]
    return [*found, "python3"]


def probe(python: str, spec: Path, config_dir: Path, timeout: float) -> dict[str, Any]:
    """Run pytest_acceptance.gate_probe with `python`; its JSON, or GateError."""
    with interpreter_paths.private_pycache() as pycache:
        return _probe(python, spec, config_dir, timeout, pycache)


def _probe(
    python: str, spec: Path, config_dir: Path, timeout: float, pycache: str
) -> dict[str, Any]:
    arguments = ["-m", "pytest_acceptance.gate_probe", "--config-dir", str(config_dir), str(spec)]
    report = _probe_report(python, arguments, pycache, timeout, cwd=str(config_dir))
    if not isinstance(report.get("criteria"), list):
        raise GateError(f"{python}: pytest_acceptance.gate_probe answered {report!r:.200}")
    return report


def _probe_report(
    python: str, arguments: list[str], pycache: str, timeout: float, cwd: str | None = None
) -> dict[str, Any]:
    """The JSON object `python -I <arguments>` prints (the gate's bytecode kept private), or
    GateError."""
    command = [python, "-I", "-X", f"pycache_prefix={pycache}", *arguments]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=clean_env(python, pycache),
            capture_output=True,
            timeout=max(1.0, timeout),
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GateError(f"{python} could not run the probe ({error})") from None
    try:
        report = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise GateError(f"{python} cannot run pytest_acceptance ({' | '.join(tail)})") from None
    if not isinstance(report, dict):
        raise GateError(f"{python}: the probe answered {report!r:.200}")
    return report


def discover(repo: Path, spec: Path, config_dir: Path, timeout: float) -> dict[str, Any]:
    """The probe of the first candidate interpreter that can run it."""
    failures = []
    for python in candidate_pythons(repo):
        try:
            return {**probe(python, spec, config_dir, timeout), "python": python}
        except GateError as error:
            failures.append(str(error))
    raise GateError(
        "no Python interpreter that can import pytest_acceptance was found ("
        + "; ".join(failures)
        + "). Install the package into the project's .venv, or set ACCEPTANCE_GATE_PYTHON."
    )


def pin_runtime(flow: Flow, report: dict[str, Any]) -> None:
    """Record what the gate's interpreter is made of (its whole closure, tree/closure.py),
    hashed by this (stdlib) process, and how its path resolves."""
    python = interpreter_paths.absolute_python(str(report["python"]))
    flow.data["python"] = python
    flow.data["prefix"] = str(report.get("prefix") or "")
    flow.data["python_paths"] = interpreter_paths.pin(python)
    wanted = report.get("closure") if isinstance(report.get("closure"), dict) else {}
    places = _closure_places(flow.repo, wanted or {})
    flow.data["closure"] = places.as_dict()
    try:
        pinned = _pin_closure(python, places)
    except closure.ClosureError as error:
        flow.data["closure_error"] = str(error)
        return
    write_json(flow.closure_file, pinned)
    deadline_at = time.monotonic() + CLOSURE_BUDGET
    modules = closure.project_modules(flow.repo, deadline_at)
    names = environment_names(pinned, places.roots, (wanted or {}).get("gate_roots"))
    flow.data[witness.SHADOWED_KEY] = sorted(names | set(modules.values()) | GATE_NAMES)
    flow.data["project_modules"] = sorted(modules)


def environment_names(pinned: closure.Pin, roots: list[str], gate_roots: Any) -> set[str]:
    """The top-level names the environment offers: those of its import path's folders, and
    the name of each package folder its run imports (a gate root is a package, whose own
    modules are no top-level names: markdown_it's `helpers` does not shadow a project's)."""
    packages = [str(root) for root in gate_roots or [] if isinstance(root, str)]
    path_roots = [root for root in roots if root not in packages]
    names = closure.module_names(pinned, path_roots)
    names |= {os.path.basename(root.rstrip(os.sep)).split(".")[0] for root in packages}
    return {name for name in names if name.isidentifier()}


def _pin_closure(python: str, places: closure.Places) -> closure.Pin:
    """Every file of ``python``'s closure, by content (the digests its last pin took are
    reused while their files' stat keys are unchanged)."""
    known = environment_digests.known(python)
    pinned = closure.pin(places, time.monotonic() + CLOSURE_BUDGET, known)
    environment_digests.keep(python, pinned)
    return pinned


# A criterion's interpreter need not have pytest_acceptance installed: the probe's closure()
# is read from the plugin's own copy (standard library only, like the rest of gate_probe),
# by identity: whatever of that name the interpreter loaded at start-up is dropped, a finder
# ahead of every other (an editable install's included) finds the package in the plugin's
# root only, and an answer from any module of the package found elsewhere is no answer.
_CLOSURE_PROBE = """\
import importlib.machinery, json, os, sys
root = os.path.realpath({root!r})
for name in [n for n in sys.modules if n.split(".")[0] == "pytest_acceptance"]:
    del sys.modules[name]
class PluginCopy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] != "pytest_acceptance":
            return None
        where = [root] if "." not in name else list(path or [])
        return importlib.machinery.PathFinder.find_spec(name, where)
sys.meta_path.insert(0, PluginCopy)
from pytest_acceptance.gate_probe import closure
found = [m for n, m in sys.modules.items() if n.split(".")[0] == "pytest_acceptance"]
paths = [os.path.realpath(getattr(m, "__file__", None) or "") for m in found]
if all(path.startswith(root + os.sep) for path in paths):
    print(json.dumps(closure()))
"""


def pin_criteria_environments(flow: Flow) -> None:
    """Pin, like the gate's own, the closure of every other environment a criterion's pytest
    ran in at /implement (a project's `.venv/bin/python -m pytest`, a `tox` or `uv`
    environment): the gate's run uses them as they are, and trusts no session run in an
    environment not pinned here (witness.pinned_environments)."""
    found = flow.get(witness.INTERPRETERS_KEY)
    gate_prefix = os.path.realpath(str(flow.get("prefix") or ""))
    pinned: list[dict[str, Any]] = []
    for prefix, python in sorted((found if isinstance(found, dict) else {}).items()):
        if os.path.realpath(str(prefix)) == gate_prefix:
            continue
        try:
            places = _closure_places(flow.repo, _closure_probe(str(python)))
            name = f"closure-{len(pinned)}.json"
            write_json(flow.folder / name, _pin_closure(str(python), places))
        except (GateError, closure.ClosureError) as error:
            flow.data["closure_error"] = f"the environment of {python}: {error}"
            return
        pinned.append({"python": str(python), "places": places.as_dict(), "file": name})
    flow.data[CRITERIA_CLOSURES_KEY] = pinned


def _closure_probe(python: str) -> dict[str, Any]:
    code = _CLOSURE_PROBE.format(root=str(PLUGIN_ROOT))
    with interpreter_paths.private_pycache() as pycache:
        return _probe_report(python, ["-c", code], pycache, CLOSURE_BUDGET)


def _closure_places(repo: str, wanted: dict[str, Any]) -> closure.Places:
    def strings(key: str) -> list[str]:
        return [str(item) for item in wanted.get(key) or [] if isinstance(item, str)]

    roots = closure.outside(strings("roots"), repo)
    roots += [root for root in strings("gate_roots") if root not in roots]
    # git's own configuration steers every git command a criterion runs (core.worktree, ...)
    git_config = [os.path.join(repo, ".git", "config")]
    files = strings("files") + closure.config_above(repo) + git_config
    return closure.Places(roots, files, strings("left_out"))


def runtime_changes(flow: Flow) -> list[str]:
    """What changed in the gate's environment since /implement: any file of its closure,
    or how the interpreter's path resolves."""
    changed: list[str] = []
    paths = flow.get("python_paths")
    if isinstance(paths, dict):  # the symlink hops and the bin folder
        rest = gate_env.rest_of_path(flow, clean_env("")["PATH"])
        changed += interpreter_paths.changes(str(flow.get("python")), paths, rest)
    if flow.get("closure_error"):
        raise GateError(
            f"the interpreter's environment could not be pinned: {flow.get('closure_error')}"
        )
    return changed + environment_changes(flow) + new_shadows(flow) + gate_env.changes(flow)


def environment_changes(flow: Flow) -> list[str]:
    """Files added, removed or changed since /implement in the gate's environment and in
    each environment a criterion ran in."""
    return [
        change for places, pin in flow.pinned_closures() for change in _closure_changes(places, pin)
    ]


def _closure_changes(places: dict[str, Any], pin_file: Path) -> list[str]:
    try:
        pinned = json.loads(pin_file.read_bytes())
        where = closure.Places(places["roots"], places["files"], places["left_out"])
        return closure.changes(pinned, where, time.monotonic() + CLOSURE_BUDGET)
    except (OSError, ValueError, KeyError, closure.ClosureError) as error:
        raise GateError(f"cannot check the interpreter's environment ({error})") from None


def new_shadows(flow: Flow) -> list[str]:
    """Modules the project gained since /implement that would be imported instead of one the
    run imports (named like one of the environment's or the project's own), and new
    sourceless bytecode."""
    names = flow.get(witness.SHADOWED_KEY)
    before = flow.get("project_modules")
    if not isinstance(names, list) or not isinstance(before, list):
        return []
    try:
        now = closure.project_modules(flow.repo, time.monotonic() + CLOSURE_BUDGET)
    except closure.ClosureError as error:
        raise GateError(f"cannot look for modules that shadow others ({error})") from None
    found = closure.new_modules([str(b) for b in before], now, {str(n) for n in names})
    return [os.path.join(flow.repo, entry) for entry in found]


def never_pinned(flow: Flow) -> str | None:
    """Why the gate cannot verify this flow at all: no interpreter could run
    pytest_acceptance when /implement started. Pinning one later would pin whatever the
    agent planted meanwhile (a .venv whose .pth sets PYTEST_ADDOPTS), so it never is."""
    if flow.get("criteria") is not None:
        return None
    return (
        "no Python interpreter could run pytest_acceptance when /implement started "
        f"({str(flow.get('pin_pending') or 'not recorded')[:300]}), and the gate never pins "
        "one later (the agent could have planted it). /pytest-acceptance:done cannot be "
        "verified in this flow: call /pytest-acceptance:escalate, or install the package "
        "(into the project's .venv, or set ACCEPTANCE_GATE_PYTHON) and start a new /implement"
    )


def complete_pin(flow: Flow, timeout: float) -> None:
    """Parse the pinned spec and pin the interpreter: at /implement only (pin.py)."""
    if flow.get("criteria") is not None:
        return
    report = discover(Path(flow.repo), flow.spec_copy, flow.config_folder, timeout)
    flow.data["criteria"] = report["criteria"]
    flow.data["collect_error"] = report.get("error")
    flow.data["settings"] = report.get("settings") or {}
    flow.data["pinned_late"] = True
    pin_runtime(flow, report)
    pin_integrity(flow)
    gate_env.pin(flow, str(flow.get("python") or ""))
    witness.pin(flow, str(flow.data["python"]), clean_env)
    pin_criteria_environments(flow)
    flow.save()


def pin_integrity(flow: Flow) -> None:
    """The integrity snapshot of the files the bash criteria's commands name."""
    commands = [
        str(item["command"])
        for item in flow.get("criteria") or []
        if item.get("method") == "bash" and item.get("command")
    ]
    try:
        integrity = integrity_module()
        flow.data["integrity"] = integrity.snapshot(flow.repo, commands)
    except ImportError:
        flow.data["integrity"] = None  # this version of the package has no integrity module
    except Exception as error:  # recorded: a check that cannot be made blocks later
        flow.data["integrity_error"] = f"{type(error).__name__}: {error}"


def integrity_module() -> Any:
    from pytest_acceptance import integrity

    return integrity


def clean_env(
    python: str, pycache: str = "", gate_bytecode: str = "", criteria_bytecode: str = ""
) -> dict[str, str]:
    """The run's environment, from scratch: nothing the agent's shell could have set.
    `pycache`: the run's private folder, so no child Python reads __pycache__; with
    `gate_bytecode`, the gate's pytest reads that instead, and its criteria's Pythons read
    `criteria_bytecode` (or `pycache`, empty)."""
    env = {key: os.environ[key] for key in _KEPT_ENV if os.environ.get(key)}
    env.update(
        {
            key: value
            for key, value in os.environ.items()
            if key.startswith(("LC_", "ANTHROPIC_")) and value
        }
    )
    folder = os.path.dirname(python)
    path = env.get("PATH", os.defpath)
    env["PATH"] = f"{folder}{os.pathsep}{path}" if folder else path
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["ACCEPTANCE_PARSE_CACHE"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # A criterion's own pytest writes no .pytest_cache into the tree: the gate files its
    # result under a fingerprint of every file, and an honest run must not change it.
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = pycache
    if pycache and gate_bytecode:  # the gate's pytest and workers read the gate's own
        env["PYTHONPYCACHEPREFIX"] = gate_bytecode
        env[CRITERIA_PYCACHE_VARIABLE] = criteria_bytecode or pycache
    if pycache:
        # The run's own temporary folder, fresh: nothing planted in /tmp is where it looks.
        env["TMPDIR"] = os.path.join(pycache, "tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
    return env
