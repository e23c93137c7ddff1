"""The gate closes classes of attack, not routes: each class below has several variants
(one written after its fix), all refused by the same mechanism, beside an honest control.

- Nothing stale is reused: a stored result stands in for a run only while every file a run
  could read is unchanged (``gate.reuse_key``), and only a trustworthy run is stored. The
  shape: a pass gets stored (here by an /escalate the gate refuses because everything
  passes), then the agent changes something a criterion reads that git does not show.
- The environment is pinned file by file (``tree/closure.py``): any module of the project's
  virtualenv that changes, or a new project module named like an installed one, blocks.

Real hook subprocesses, real git, real virtualenvs, real gate runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hook_transcripts import (
    CRITERION,
    HookRun,
    ask_gate,
    git,
    make_repo,
    pinned_flow,
    run_hook,
    stop_payload,
)
from support.isolation import LEVELS

from pytest_acceptance.claude import isolation

SPEC = "specs/feature.md"


def spec_reading(module_dir: str) -> str:
    """AC-1 imports `helper` from `module_dir` and passes while helper.OK is true."""
    command = (
        f'python3 -c \'import sys; sys.path.insert(0, \\"{module_dir}\\"); import helper; '
        "sys.exit(0 if helper.OK else 1)'"
    )
    return "# Spec\n" + CRITERION.format("AC-1", "helper is OK", command)


def ignored_helper(repo: Path, tmp_path: Path) -> Callable[[], None]:
    (repo / ".gitignore").write_text("helper.py\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore the helper")
    (repo / "helper.py").write_text("OK = True\n")
    return lambda: (repo / "helper.py").write_text("OK = False\n")


def module_in_pytest_cache(repo: Path, tmp_path: Path) -> Callable[[], None]:
    folder = repo / ".pytest_cache" / "lib"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("OK = True\n")
    return lambda: (folder / "helper.py").write_text("OK = False\n")


def module_behind_a_symlink_out_of_the_tree(repo: Path, tmp_path: Path) -> Callable[[], None]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("OK = True\n")
    (repo / "lib").symlink_to(outside, target_is_directory=True)
    git(repo, "add", "lib")
    git(repo, "commit", "-qm", "vendored lib")
    return lambda: (outside / "helper.py").write_text("OK = False\n")


def module_in_mypy_cache(repo: Path, tmp_path: Path) -> Callable[[], None]:
    """A variant written after the fix: another cache folder, no new code needed."""
    folder = repo / ".mypy_cache" / "lib"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("OK = True\n")
    return lambda: (folder / "helper.py").write_text("OK = False\n")


HIDING_PLACES = {
    ignored_helper: ".",
    module_in_pytest_cache: ".pytest_cache/lib",
    module_behind_a_symlink_out_of_the_tree: "lib",
    module_in_mypy_cache: ".mypy_cache/lib",
}


@pytest.mark.parametrize("hide", list(HIDING_PLACES), ids=lambda hide: hide.__name__)
def test_a_pass_stored_by_a_refused_escalate_is_not_reused_after_a_hidden_change(
    tmp_path: Path, hide: Callable[[Path, Path], Callable[[], None]]
) -> None:
    repo = make_repo(tmp_path / "repo", spec_reading(HIDING_PLACES[hide]))
    change = hide(repo, tmp_path)
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    refused = ask_gate(builder, repo, tmp_path, "escalate")
    assert refused.denied and "nothing to escalate" in refused.deny_reason, refused.stdout
    builder.escalate(outcome="denied")
    change()  # what git does not show: the stored pass must not stand in for a run
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied, done.stdout
    assert "AC-1" in done.deny_reason and "fail" in done.deny_reason, done.deny_reason


def test_done_runs_afresh_and_only_the_stop_right_after_it_reuses_its_run(
    tmp_path: Path, plugin_state: Path
) -> None:
    """The honest control: /done after a refused /escalate on the same files is judged on a
    run of its own (a stored result never stands for /done: what changed where no
    fingerprint looks would count for nothing), and the stop right after the accepted /done
    reuses that run: two gate runs in the flow, and the flow ends cleanly."""
    repo = make_repo(tmp_path / "repo", spec_reading("."))
    ignored_helper(repo, tmp_path)
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    assert ask_gate(builder, repo, tmp_path, "escalate").denied
    builder.escalate(outcome="denied")
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.stdout
    builder.done()
    builder.text("All criteria verified.")
    transcript = builder.write(tmp_path / "session.jsonl")
    stopped = run_hook("Stop", stop_payload(transcript, repo))
    assert not stopped.blocked, stopped.reason
    flows = [json.loads(path.read_text()) for path in plugin_state.rglob("flow.json")]
    assert [flow["gate_runs"] for flow in flows] == [2]


def test_a_transient_error_is_never_stored_as_the_trees_result(tmp_path: Path) -> None:
    """The gate's run cannot write its evidence (.acceptance is a file): /done is refused
    with that error; once the obstacle is gone, /done on the very same tree is judged by a
    new run, not by the stored error."""
    repo = make_repo(tmp_path / "repo", spec_reading("."))
    ignored_helper(repo, tmp_path)
    (repo / ".acceptance").write_text("in the way\n")
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    first = ask_gate(builder, repo, tmp_path, "done")
    assert first.denied, first.stdout
    builder.done(outcome="denied")
    (repo / ".acceptance").unlink()
    second = ask_gate(builder, repo, tmp_path, "done")
    assert not second.denied, second.deny_reason


# --- the environment: pinned file by file, so any module of the virtualenv counts -----------

VENV_SPEC = "# Spec\n" + CRITERION.format(
    "AC-1",
    "thirdparty agrees",
    "python -c 'import sys, thirdparty; sys.exit(0 if thirdparty.ok() else 1)'",
)


def project_venv(repo: Path) -> Path:
    """A real virtualenv in the project (git-ignored), whose site-packages holds a
    third-party module; it reaches pytest and pytest-acceptance through a .pth file."""
    import site
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    found = sorted((repo / ".venv" / "lib").glob("python3*/site-packages"))
    venv_site = found[0]
    here = [*site.getsitepackages(), str(Path(__file__).resolve().parents[2])]
    (venv_site / "reach-the-test-env.pth").write_text("".join(f"{p}\n" for p in here))
    (venv_site / "thirdparty.py").write_text("def ok():\n    return False\n")
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore the venv")
    return venv_site


@pytest.mark.parametrize(
    "tamper",
    [
        lambda site: (site / "thirdparty.py").write_text("def ok():\n    return True\n"),
        # written after the fix: an import hook planted beside it, same mechanism
        lambda site: (site / "zz-hook.pth").write_text(
            "import sys; sys.modules.setdefault('thirdparty', type(sys)('thirdparty'))\n"
        ),
    ],
    ids=["module_rewritten", "pth_import_hook_added"],
)
def test_a_changed_module_of_the_projects_virtualenv_blocks_done(
    tmp_path: Path, tamper: Callable[[Path], None]
) -> None:
    repo = make_repo(tmp_path / "repo", VENV_SPEC)
    venv_site = project_venv(repo)
    env = {"ACCEPTANCE_GATE_PYTHON": str(repo / ".venv" / "bin" / "python")}
    builder = pinned_flow(repo, env)
    builder.verify(repo / SPEC)
    tamper(venv_site)
    done = ask_gate(builder, repo, tmp_path, "done", env)
    assert done.denied, done.stdout
    assert "environment the gate runs in changed" in done.deny_reason, done.deny_reason
    assert str(venv_site) in done.deny_reason


def test_an_untouched_project_virtualenv_lets_an_honest_done_through(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", VENV_SPEC)
    venv_site = project_venv(repo)
    (venv_site / "thirdparty.py").write_text("def ok():\n    return True\n")
    env = {"ACCEPTANCE_GATE_PYTHON": str(repo / ".venv" / "bin" / "python")}
    builder = pinned_flow(repo, env)
    builder.verify(repo / SPEC)
    done = ask_gate(builder, repo, tmp_path, "done", env)
    assert not done.denied, done.deny_reason


def _module_at_the_root(repo: Path) -> None:
    (repo / "thirdparty.py").write_text("def ok():\n    return True\n")


def _package_at_the_root(repo: Path) -> None:  # written after the fix: no new code needed
    (repo / "thirdparty").mkdir()
    (repo / "thirdparty" / "__init__.py").write_text("def ok():\n    return True\n")


@pytest.mark.parametrize("plant", [_module_at_the_root, _package_at_the_root])
def test_a_new_project_module_that_shadows_an_installed_one_blocks_done(
    tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    """`python -c` puts the project first on sys.path: a new thirdparty.py there would be
    imported instead of the installed module the criterion checks."""
    repo = make_repo(tmp_path / "repo", VENV_SPEC)
    project_venv(repo)
    env = {"ACCEPTANCE_GATE_PYTHON": str(repo / ".venv" / "bin" / "python")}
    builder = pinned_flow(repo, env)
    builder.verify(repo / SPEC)
    plant(repo)
    done = ask_gate(builder, repo, tmp_path, "done", env)
    assert done.denied, done.stdout
    assert "named like a module the run could import" in done.deny_reason, done.deny_reason


# --- bytecode: the gate's pytest reads only bytecode it compiled and witnessed unchanged ----

# Project code run by the criterion: find the gate's bytecode folder in an ancestor's
# environment (a criterion's own Python uses another one) and plant a file in it. Up to the
# first process of the run's PID namespace (pid 1 there under unshare), whose parent is 0.
PLANT = """import os, sys
own = os.environ.get("PYTHONPYCACHEPREFIX")
pid = os.getppid()
while pid > 0:
    env = open(f"/proc/{pid}/environ", "rb").read().split(b"\\0")
    found = [e[20:].decode() for e in env if e.startswith(b"PYTHONPYCACHEPREFIX=")]
    if found and found[0] != own:
        target = os.path.join(found[0], "planted.cpython-311.pyc")
        open(target, "wb").write(b"forged")
        if "restore" in sys.argv:
            os.unlink(target)
        break
    pid = int(open(f"/proc/{pid}/status").read().split("PPid:")[1].split()[0])
"""


def refused_or_read_only(done: HookRun, changed: str, plugin_state: Path, level: str) -> None:
    """Under bubblewrap the plugin's state is read-only to the gate's run (apart.trusted):
    the plant itself fails, so the criterion fails and nothing is planted. At the levels
    without that view the write happens and the folder's stat keys refuse the run."""
    if level == isolation.FULL:
        assert "AC-1" in done.deny_reason, done.deny_reason
        assert not [
            p for p in plugin_state.rglob("*.pyc") if "planted" in p.name or "forged" in p.name
        ]
    else:
        assert changed in done.deny_reason, done.deny_reason


@pytest.mark.parametrize("isolation_level", LEVELS, indirect=True)
@pytest.mark.parametrize("restore", [False, True], ids=["planted", "planted_and_removed"])
def test_bytecode_planted_in_the_gates_folder_during_its_run_is_never_trusted(
    tmp_path: Path, restore: bool, plugin_state: Path, isolation_level: str
) -> None:
    """Removing the planted file again (written after the fix) changes the folder's ctime:
    the same mechanism refuses it."""
    command = "python3 plant.py" + (" restore" if restore else "")
    repo = make_repo(tmp_path / "repo", "# Spec\n" + CRITERION.format("AC-1", "plants", command))
    (repo / "plant.py").write_text(PLANT)
    git(repo, "add", "plant.py")
    git(repo, "commit", "-qm", "plant")
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied, done.stdout
    refused_or_read_only(
        done, "bytecode folder changed during its run", plugin_state, isolation_level
    )


def test_bytecode_planted_between_runs_is_thrown_away_and_rebuilt(
    tmp_path: Path, plugin_state: Path
) -> None:
    """A forged .pyc put in the gate's bytecode folder after its last run: the next run sees
    a changed folder and compiles it afresh; the honest /done goes through."""
    repo = make_repo(tmp_path / "repo", spec_reading("."))
    ignored_helper(repo, tmp_path)
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    assert ask_gate(builder, repo, tmp_path, "escalate").denied  # a run: the folder is built
    builder.escalate(outcome="denied")
    (folder,) = plugin_state.rglob("bytecode")
    forged = next(folder.rglob("*.pyc"))
    forged.write_bytes(b"forged")
    (repo / "unrelated.txt").write_text("a new tree: no stored result stands in\n")
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    assert forged.read_bytes() != b"forged"


# --- bytecode: the criteria's Pythons read only checked-hash bytecode the gate compiled ------

PYTEST_SPEC = "# Spec\n" + CRITERION.format("AC-1", "the tests pass", "python -m pytest -q tests")
PASSING_TEST = "def test_passes():\n    assert True\n"


def pytest_project(tmp_path: Path, files: dict[str, str]) -> Path:
    """AC-1 runs the project's tests with pytest (a witnessed criterion); `files` committed."""
    repo = make_repo(tmp_path / "repo", PYTEST_SPEC)
    for name, text in {"tests/test_ok.py": PASSING_TEST, **files}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tests")
    return repo


def criteria_folder(plugin_state: Path) -> Path:
    (folder,) = plugin_state.rglob("criteria-bytecode")
    return folder


# The criterion's pytest says, in a file outside the project, which bytecode folder it read
# and where Python found the bytecode of pytest's own collector.
REPORT_PREFIX = """import sys
import _pytest.python


def pytest_sessionstart(session):
    with open({where!r}, "a") as out:
        out.write(f"{{sys.pycache_prefix}}\\n{{_pytest.python.__cached__}}\\n")
"""


def test_the_criterias_pytest_reads_checked_hash_bytecode_the_gate_compiled_once(
    tmp_path: Path, plugin_state: Path
) -> None:
    """Compiling pytest, its plugins and the standard library afresh in each criterion's
    Python made the gate's run 3x the agent's own: the gate compiles them once per flow.
    The bytecode is checked-hash (used only while its source hashes the same), the folder
    is not rebuilt by a second run, and the honest /done goes through."""
    where = tmp_path / "prefix.txt"
    conftest = REPORT_PREFIX.format(where=str(where))
    repo = pytest_project(tmp_path, {"tests/conftest.py": conftest})
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    assert ask_gate(builder, repo, tmp_path, "escalate").denied  # a real run: all passing
    builder.escalate(outcome="denied")
    folder = criteria_folder(plugin_state)
    prefix, cached = where.read_text().splitlines()[-2:]
    assert prefix == str(folder)
    compiled = Path(cached)
    assert compiled.is_file() and str(compiled).startswith(str(folder))
    flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
    assert flags == 0b11, "a checked-hash .pyc"
    (repo / "unrelated.txt").write_text("a new tree: no stored result stands in\n")
    assert ask_gate(builder, repo, tmp_path, "escalate").denied
    built = folder.stat().st_ctime_ns  # with every module the runs imported
    (repo / "unrelated.txt").write_text("another new tree\n")
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    assert folder.stat().st_ctime_ns == built, "a run that imported nothing new rebuilt it"
    assert compiled_from(plugin_state)["rewritten"], "pytest's plugins, rewritten, compiled"
    for path in [p for kind in compiled_from(plugin_state).values() for p in kind]:
        assert not Path(path).is_relative_to(repo), f"the project's own {path} compiled"


def compiled_from(plugin_state: Path) -> dict[str, list[str]]:
    (flow,) = plugin_state.rglob("flow.json")
    return dict(json.loads(flow.read_text())["criteria_modules"])


# A new test file of the project that writes a forged .pyc into the bytecode folder its own
# Python reads (its PYTHONPYCACHEPREFIX), as the pyc of a module a later criterion imports.
PLANT_OWN = """import os, sys


def test_plants():
    target = os.path.join(sys.pycache_prefix, "forged.cpython-311.pyc")
    with open(target, "wb") as out:
        out.write(b"forged")
    {restore}
"""


@pytest.mark.parametrize("isolation_level", LEVELS, indirect=True)
@pytest.mark.parametrize("restore", [False, True], ids=["planted", "planted_and_removed"])
def test_bytecode_planted_in_the_criterias_folder_during_the_run_is_never_trusted(
    tmp_path: Path, restore: bool, plugin_state: Path, isolation_level: str
) -> None:
    """The same stat keys that guard the gate's own folder guard the criteria's: a file
    added to it, even one removed again, refuses the run."""
    planting = PLANT_OWN.format(restore="os.unlink(target)" if restore else "pass")
    repo = pytest_project(tmp_path, {})
    builder = pinned_flow(repo)
    builder.verify(repo / SPEC)
    (repo / "tests" / "test_plant.py").write_text(planting)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied, done.stdout
    refused_or_read_only(done, "criteria's bytecode folder changed", plugin_state, isolation_level)
