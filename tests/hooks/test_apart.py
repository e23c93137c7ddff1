"""The gate's run apart (claude/apart.py), with each wrapper this machine has: the run sees
only its own processes, nothing of it outlives the hook that started it, and under
bubblewrap what the hooks trust is read-only to it while the project stays writable."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hook_transcripts import wait_until
from pinning import take_pins
from support.tools import require_tool

from pytest_acceptance.claude import apart, world
from pytest_acceptance.claude.flow_state import Flow
from pytest_acceptance.claude.pins import base, criteria_environments, path_and_home
from pytest_acceptance.claude.pins.closures import Environment
from pytest_acceptance.claude.pins.criteria_environments import CriteriaEnvironments

WRAPPERS = {wrapper[0].rsplit("/", 1)[-1]: wrapper for wrapper in apart.candidates()}
# This interpreter by its real path: a virtualenv's link is not in bubblewrap's world.
PYTHON = os.path.realpath(sys.executable)


def started(name: str, *writable: Path) -> list[str]:
    """The wrapper's words for a run of this interpreter (its folder given read-only, as the
    gate's pinned interpreter is) that may write into `writable`."""
    wrapper = list(WRAPPERS[name])
    if name != "bwrap":
        return wrapper
    binds = [word for path in writable for word in ("--bind", str(path), str(path))]
    return [*wrapper[:-1], *world.probe(), *binds, "--"]


def test_this_machine_sets_runs_apart() -> None:
    """CI installs both (util-linux's unshare is on every Debian, .ci/run installs
    bubblewrap): the gate must not silently fall back to a run that can see the hook."""
    require_tool("bwrap", why="a second way to set the gate's run apart")
    assert {"unshare", "bwrap"} <= set(WRAPPERS)
    assert apart.prefix() == WRAPPERS["bwrap"]


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_the_run_sees_no_process_outside_it(name: str) -> None:
    """Not its parent (the hook), not any process of the machine: /proc holds only the
    run's own, and the hook's /proc entry cannot be opened."""
    look = (
        "import os, sys\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        f"hook_visible = os.path.exists('/proc/{os.getpid()}/fd')\n"
        "sys.exit(0 if len(pids) <= 3 and not hook_visible and os.getppid() <= 1 else 1)\n"
    )
    done = subprocess.run([*started(name), PYTHON, "-c", look], check=False)
    assert done.returncode == 0


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_nothing_of_the_run_outlives_the_hook(name: str, tmp_path: Path) -> None:
    """A stand-in hook starts the run apart as the gate does (its first process told to die
    with it) and is SIGKILLed: the run and a daemon it left (setsid, double fork) end."""
    marker = tmp_path / "alive"
    sleeps = f"sleep {pause(tmp_path)} & sleep {pause(tmp_path)}"
    run = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen(['setsid', 'sh', '-c', {sleeps!r}])\n"
        f"open({str(marker)!r}, 'w').close()\n"
        "time.sleep(300)\n"
    )
    hook = (
        "import functools, os, signal, subprocess, sys, time\n"
        "from pytest_acceptance.claude.gate import _die_with\n"
        f"wrapper = {started(name, tmp_path)!r}\n"
        f"subprocess.Popen([*wrapper, {PYTHON!r}, '-c', {run!r}],\n"
        "    preexec_fn=functools.partial(_die_with, os.getpid(), signal.SIGKILL))\n"
        "time.sleep(300)\n"
    )
    stand_in = subprocess.Popen([sys.executable, "-c", hook])
    try:
        assert wait_until(marker.exists, 60), "the run never started"
        assert run_processes(tmp_path), "the run's processes are not seen from outside"
        stand_in.kill()
        stand_in.wait()
        assert wait_until(lambda: not run_processes(tmp_path), 60), run_processes(tmp_path)
    finally:
        stand_in.kill()
        for pid in run_processes(tmp_path):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


def pause(tmp_path: Path) -> str:
    """The sleeps' duration, this test's own (another test's sleeps are not its run's)."""
    return f"300.{zlib.crc32(str(tmp_path).encode()) % 10**6:06d}"


def run_processes(tmp_path: Path) -> list[int]:
    """Live processes of the run: the Python naming `tmp_path`, and the sleeps."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            command = Path("/proc", entry, "cmdline").read_bytes()
            state = Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        ours = str(tmp_path).encode() in command
        if state != "Z" and (ours or command == f"sleep\0{pause(tmp_path)}\0".encode()):
            found.append(int(entry))
    return found


def test_what_the_hooks_trust_is_read_only_to_the_run(tmp_path: Path) -> None:
    """The plugin's own files, its state, the pinned interpreter's folders and those of the
    environments the criteria ran in (inside the project too) cannot be written from the
    run; the rest of the project and the run's private folder can."""
    require_tool("bwrap", why="the read-only view of the gate's run")
    repo, private, site = tmp_path / "repo", tmp_path / "private", tmp_path / "site"
    for folder in (repo, private, site):
        folder.mkdir()
    venv = repo / ".venv" / "site-packages"  # a criterion's environment, inside the project
    venv.mkdir(parents=True)
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "python": sys.executable})
    flow.folder.mkdir()
    take_pins(flow, {"roots": [str(site), sys.base_prefix]})  # the pinned interpreter: this one
    criterion = Environment("python", (str(venv),), (), (), (), "closure-0.json")
    record = CriteriaEnvironments((criterion,))
    base.write(flow, criteria_environments.NAME, record.to_json())
    hook = Path(apart.PLUGIN_ROOT, "hooks", "pretool_gate_hook.py")
    tries = {str(hook): False, str(site / "x.pth"): False, str(venv / "x.pth"): False}
    tries.update({str(repo / "out.txt"): True, str(private / "tmp.txt"): True})
    probe = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'a').close()\n"
        "        print('written', path)\n"
        "    except OSError:\n"
        "        print('refused', path)\n"
    )
    words = apart.command([PYTHON, "-c", probe, *tries], flow, writable=[str(private)])
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    for path, writable in tries.items():
        assert f"{'written' if writable else 'refused'} {path}" in said, said


# A file planted outside every pin: in HOME, in /srv, /var/tmp and /tmp (world-writable
# folders), and next to the project. None is named by any pin.
def planted_outside(tmp_path: Path) -> list[Path]:
    tag = f"pytest-acceptance-planted-{zlib.crc32(str(tmp_path).encode()):08x}"
    places = [Path.home(), Path("/srv"), Path("/var/tmp"), Path("/tmp"), tmp_path]
    planted = []
    for folder in places:
        with contextlib.suppress(OSError):  # a folder this user cannot write: not a place
            (folder / tag).write_text("nobody pinned this\n")
            planted.append(folder / tag)
    return planted


def test_the_run_sees_only_what_it_was_given(tmp_path: Path) -> None:
    """bubblewrap's world is an allowlist (world.py): a file no pin covers does not exist
    for the run, wherever it is, with no pin written for it; the system's folders, the
    pinned interpreter and the project do, the project writable; the system's folders and
    the folders made to hold the mounts (above the project) read-only."""
    require_tool("bwrap", why="the gate's run's world of its own")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "data.txt").write_text("the project's own\n")
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "python": sys.executable})
    flow.folder.mkdir()
    take_pins(flow, {"roots": [sys.base_prefix]})
    planted = planted_outside(tmp_path)
    try:
        assert len(planted) >= 3, planted  # HOME, /tmp and next to the project at least
        look = (
            "import os, sys\n"
            "seen = [p for p in sys.argv[1:] if os.path.exists(p)]\n"
            "open('written.txt', 'w').write('ok')\n"
            "try:\n"
            "    open('../conftest.py', 'w')\n"
            "    seen.append('above the project writable')\n"
            "except OSError:\n"
            "    pass\n"
            "try:\n"
            "    open('/etc/pytest-acceptance-probe', 'w')\n"
            "    seen.append('/etc writable')\n"
            "except OSError:\n"
            "    pass\n"
            "for needed in ('/usr/bin/env', '/etc/passwd', 'data.txt', sys.executable):\n"
            "    if not os.path.exists(needed):\n"
            "        seen.append('missing ' + needed)\n"
            "print(seen)\n"
        )
        words = apart.command([PYTHON, "-I", "-c", look, *map(str, planted)], flow)
        done = subprocess.run(words, cwd=repo, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == "[]", done.stdout + done.stderr
        assert (repo / "written.txt").read_text() == "ok"
    finally:
        for path in planted:
            path.unlink()


def test_honest_what_the_criteria_need_from_home_is_given_by_its_pin(tmp_path: Path) -> None:
    """A toolchain home pinned at /implement (gate_env's toolchains) whose tool a criterion
    names, and the installation of a pinned tool that lives in HOME, are in the run's
    world, read-only; the rest of HOME is not."""
    require_tool("bwrap", why="the gate's run's world of its own")
    home = Path.home()
    tag = f"pytest-acceptance-home-{zlib.crc32(str(tmp_path).encode()):08x}"
    cargo, tool_home = home / f"{tag}-cargo", home / f"{tag}-tool"
    other = home / f"{tag}-other.txt"
    try:
        (cargo / "bin").mkdir(parents=True)
        (tool_home / "bin").mkdir(parents=True)
        (tool_home / "lib").mkdir()
        (tool_home / "lib" / "module.txt").write_text("the tool's own\n")
        (tool_home / "bin" / "tool").write_text("#!/bin/sh\n")
        (cargo / "bin" / "cargo").write_text("#!/bin/sh\n")
        other.write_text("nobody pinned this\n")
        repo = tmp_path / "repo"
        repo.mkdir()
        flow = Flow(tmp_path / "flow", {"repo": str(repo), "python": sys.executable})
        flow.folder.mkdir()
        take_pins(flow, {"roots": [sys.base_prefix]})
        tools = (
            path_and_home.Tool("tool", str(tool_home / "bin" / "tool"), "x"),
            path_and_home.Tool("cargo", str(cargo / "bin" / "cargo"), "x"),
        )
        pinned = path_and_home.PathAndHome(
            os.defpath, str(home), tools, (("CARGO_HOME", str(cargo)),)
        )
        base.write(flow, path_and_home.NAME, pinned.to_json())
        wanted = [cargo / "bin", tool_home / "lib" / "module.txt"]
        look = (
            "import os, sys\n"
            "*wanted, other, written = sys.argv[1:]\n"
            "print([p for p in wanted if not os.path.exists(p)], os.path.exists(other))\n"
            "try:\n"
            "    open(written, 'w')\n"
            "    print('written')\n"
            "except OSError:\n"
            "    print('refused')\n"
        )
        paths = [*map(str, wanted), str(other), str(cargo / "planted")]
        words = apart.command([PYTHON, "-I", "-c", look, *paths], flow)
        done = subprocess.run(words, capture_output=True, text=True, check=True)
        assert done.stdout.split("\n")[:2] == ["[] False", "refused"], done.stdout + done.stderr
    finally:
        for path in (cargo, tool_home):
            subprocess.run(["rm", "-rf", str(path)], check=False)
        other.unlink(missing_ok=True)
