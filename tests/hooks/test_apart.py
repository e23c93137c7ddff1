"""The gate's run apart (gate/apart.py), with each wrapper this machine has: the run sees
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
from pinning import collected, take_pins
from support.tools import require_tool

from pytest_acceptance.gate import apart
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, criteria_environments
from pytest_acceptance.gate.pins.closures import Environment
from pytest_acceptance.gate.pins.criteria_environments import CriteriaEnvironments

WRAPPERS = {wrapper[0].rsplit("/", 1)[-1]: wrapper for wrapper in apart.candidates()}


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
    done = subprocess.run([*WRAPPERS[name], sys.executable, "-c", look], check=False)
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
        "from pytest_acceptance.gate.gate import _die_with\n"
        f"wrapper = {list(WRAPPERS[name])!r}\n"
        f"subprocess.Popen([*wrapper, sys.executable, '-c', {run!r}],\n"
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
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "collection": collected(sys.executable)})
    flow.folder.mkdir()
    take_pins(flow, {"roots": [str(site)]})
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
    words = apart.command([sys.executable, "-c", probe, *tries], flow, writable=[str(private)])
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    for path, writable in tries.items():
        assert f"{'written' if writable else 'refused'} {path}" in said, said
