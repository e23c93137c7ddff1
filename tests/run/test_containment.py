"""No orphans: what a criterion's command or a judge starts dies with it — real processes,
in each containment mode (cgroup where this machine allows it, tracking, group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import kill_all, running_with, wait_gone

from pytest_acceptance.agent.backends import DispatchError, run_agent_process
from pytest_acceptance.model import Criterion, Location, Method, RunContext, Status
from pytest_acceptance.run import containment
from pytest_acceptance.run.bash import run_criterion

CGROUPS = containment.own_cgroup() is not None

# Each command leaves one process running in its own way and records its pid in `pids`.
ESCAPES = {
    "background job": "sleep 300 & echo $! >> pids",
    "set -m job (own process group)": "set -m; sleep 300 & echo $! >> pids",
    "setsid child (own session)": (
        "setsid sh -c 'echo $$ > session-pid; exec sleep 300' & "
        "until [ -s session-pid ]; do sleep 0.01; done; cat session-pid >> pids"
    ),
    "setsid + double fork": "setsid sh -c 'sleep 300 & echo $! >> pids'; true",
}
# Without a cgroup or a subreaper, what leaves the session and loses its parent is out of
# reach: these escape in "group" mode, and nothing else does.
OUT_OF_REACH_IN_GROUP_MODE = {"setsid child (own session)", "setsid + double fork"}


MODES = [
    pytest.param(
        "cgroup",
        marks=pytest.mark.skipif(not CGROUPS, reason="cgroup v2 is not writable here"),
    ),
    "tracking",
    "group",
]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Put this process's commands under the given containment, as a run would."""
    monkeypatch.setenv(containment.MODE_VARIABLE, request.param)
    run = containment.start_run() if request.param == "cgroup" else None
    assert containment.use(run, "test") == request.param
    yield request.param
    containment.stop_using()
    if run is not None:
        containment.remove_cgroup(run)


def bash_criterion(rootdir: Path, command: str, timeout: float = 30) -> Criterion:
    return Criterion(
        id="AC-1",
        title="leaves something running",
        method=Method.BASH,
        location=Location(rootdir / "spec.md", 3),
        command=command,
        timeout=timeout,
        retries=0,
    )


def recorded(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_what_a_command_leaves_running_is_killed_when_it_ends(
    mode: str, escape: str, tmp_path: Path
) -> None:
    """Each way of leaving a process behind, after a command that exits at once; in
    group mode the documented out-of-reach cases survive (and are counted)."""
    result = run_criterion(bash_criterion(tmp_path, ESCAPES[escape]), RunContext(tmp_path))
    pids = recorded(tmp_path / "pids")
    assert result.status is Status.PASSED
    assert len(pids) == 1
    survivors = wait_gone(pids, 3)
    try:
        expected = 1 if mode == "group" and escape in OUT_OF_REACH_IN_GROUP_MODE else 0
        assert len(survivors) == expected
    finally:
        kill_all(survivors)


def test_what_the_second_of_several_commands_leaves_is_killed_too(
    mode: str, tmp_path: Path
) -> None:
    """What each command leaves is found afresh: a clean command, one that leaves a job,
    then a clean one again, all in the same place (the cgroup's process list is re-read
    through a descriptor kept open; tracking compares with the children of that moment)."""
    context = RunContext(tmp_path)
    commands = ["true", ESCAPES["set -m job (own process group)"], "true"]
    results = [run_criterion(bash_criterion(tmp_path, command), context) for command in commands]
    pids = recorded(tmp_path / "pids")
    survivors = wait_gone(pids, 3)
    kill_all(survivors)
    assert [result.status for result in results] == [Status.PASSED] * 3
    assert len(pids) == 1 and survivors == []


def test_a_timed_out_command_loses_every_process_it_started(mode: str, tmp_path: Path) -> None:
    """A timeout kills the command and all its detached children at once (cgroup and
    tracking), not only the process group."""
    command = "; ".join(f"({escape})" for escape in ESCAPES.values()) + "; sleep 300"
    started = time.monotonic()
    result = run_criterion(bash_criterion(tmp_path, command, timeout=1), RunContext(tmp_path))
    pids = recorded(tmp_path / "pids")
    survivors = wait_gone(pids, 3)
    try:
        assert result.status is Status.FAILED
        assert "timed out after 1 s" in result.issues[0].actual
        assert time.monotonic() - started < 120  # far below the 300 s children
        expected = len(OUT_OF_REACH_IN_GROUP_MODE) if mode == "group" else 0
        assert len(survivors) == expected
    finally:
        kill_all(survivors)


def test_a_judge_that_detaches_a_child_neither_hangs_nor_leaves_it(
    mode: str, tmp_path: Path
) -> None:
    """A judge command that starts `setsid sleep` holding its stdout answers at once, and
    the detached child is killed (in group mode it is out of reach, as documented)."""
    script = (
        "setsid sh -c 'echo $$ > judge-pid; exec sleep 300' & "
        "until [ -s judge-pid ]; do sleep 0.01; done; "
        'echo \'{"status": "pass", "summary": "ok", "issues": []}\''
    )
    started = time.monotonic()
    stdout, _ = run_agent_process(["bash", "-c", script], b"prompt", tmp_path, 30, "judge")
    pids = recorded(tmp_path / "judge-pid")
    survivors = wait_gone(pids, 3)
    try:
        assert '"status": "pass"' in stdout
        assert time.monotonic() - started < 120  # far below the 300 s child
        assert len(survivors) == (1 if mode == "group" else 0)
    finally:
        kill_all(survivors)


def test_a_judge_that_times_out_is_killed_with_everything_it_started(
    mode: str, tmp_path: Path
) -> None:
    script = "set -m; sleep 300 & echo $! > judge-pid; sleep 300"
    with pytest.raises(DispatchError, match="timed out after 1 s"):
        run_agent_process(["bash", "-c", script], None, tmp_path, 1, "judge")
    pids = recorded(tmp_path / "judge-pid")
    assert pids and wait_gone(pids, 3) == []


@pytest.mark.skipif(not CGROUPS, reason="cgroup v2 is not writable here")
def test_commands_are_born_in_the_runs_cgroup_and_it_goes_with_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(containment.MODE_VARIABLE, "cgroup")
    home = containment.own_cgroup()
    run = containment.start_run()
    assert home is not None and run is not None
    try:
        assert containment.use(run, "gw7") == "cgroup"
        command = "cat /proc/self/cgroup > where"
        result = run_criterion(bash_criterion(tmp_path, command), RunContext(tmp_path))
        assert result.status is Status.PASSED
    finally:
        containment.stop_using()
        containment.remove_cgroup(run)
    line = (tmp_path / "where").read_text().strip().splitlines()[-1]
    assert line.endswith(f"/{run.name}/gw7")
    assert containment.own_cgroup() == home  # back where it was
    assert not run.exists()


@pytest.mark.skipif(not CGROUPS, reason="cgroup v2 is not writable here")
def test_a_run_of_another_pid_namespace_is_only_ever_removed_empty_and_old() -> None:
    """The gate starts runs in pid namespaces of their own, where the controller's pid is 1
    or 2 in each: a run named by another namespace is never judged by a pid of ours. Its
    cgroup is left alone while a process is in it (nothing in it is signalled, however old),
    and while it is young (its run may be about to move in); an old empty one is removed."""
    home = containment.own_cgroup()
    assert home is not None
    names = {
        role: home / f"{containment.RUN_PREFIX}{n}-ns1"
        for n, role in enumerate(("live", "young", "abandoned"), start=2)
    }
    (names["live"] / "main").mkdir(parents=True)
    (names["young"] / "main").mkdir(parents=True)
    (names["abandoned"] / "gw0").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        # In before it is made old: the runs of other tests sweep this same cgroup home, and
        # would remove an old cgroup that is still empty.
        (names["live"] / "main" / "cgroup.procs").write_text(str(sleeper.pid))
        an_hour_ago = time.time() - 3600
        for role in ("live", "abandoned"):
            os.utime(names[role], (an_hour_ago, an_hour_ago))
        run = containment.start_run()
        assert run is not None and run.name.endswith(f"-ns{containment._pid_namespace()}")
        containment.remove_cgroup(run)
        assert sleeper.poll() is None and names["live"].exists()
        assert names["young"].exists()
        assert not names["abandoned"].exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        for cgroup in names.values():
            containment.remove_cgroup(cgroup)


@pytest.mark.skipif(not CGROUPS, reason="cgroup v2 is not writable here")
def test_a_dead_runs_cgroup_is_swept_with_its_processes(tmp_path: Path) -> None:
    """A run that was SIGKILLed leaves its cgroup; the next run kills what is in it."""
    home = containment.own_cgroup()
    assert home is not None
    dead = home / f"{containment.RUN_PREFIX}999999999"
    (dead / "gw0" / "1").mkdir(parents=True)

    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        (dead / "gw0" / "1" / "cgroup.procs").write_text(str(sleeper.pid))
        run = containment.start_run()
        assert run is not None
        containment.remove_cgroup(run)
        assert sleeper.wait(5) == -signal.SIGKILL
        assert not dead.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_process_a_test_started_before_the_criterion_is_left_alone(
    mode: str, tmp_path: Path
) -> None:
    """In a session mixing Python tests and criteria, a server a fixture started earlier
    lives in the same cgroup as the commands: only what started after the command goes."""

    server = subprocess.Popen(["sleep", "300"])
    try:
        time.sleep(0.05)
        command = "sleep 300 & echo $! >> pids"
        result = run_criterion(bash_criterion(tmp_path, command), RunContext(tmp_path))
        assert result.status is Status.PASSED
        assert wait_gone(recorded(tmp_path / "pids"), 3) == []
        assert server.poll() is None
    finally:
        server.kill()
        server.wait()


@pytest.mark.skipif(not CGROUPS, reason="cgroup v2 is not writable here")
def test_a_process_moved_into_a_cgroup_the_command_made_is_still_killed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A command may make cgroups below its own (a nested pytest-acceptance run does):
    what it puts there is still the command's."""
    monkeypatch.setenv(containment.MODE_VARIABLE, "cgroup")
    mount = containment._cgroup2_mount()
    run = containment.start_run()
    assert mount is not None and run is not None
    command = (
        f"cg={mount}$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir \"$cg/inner\"; "
        'sleep 300 & echo $! > "$cg/inner/cgroup.procs"; echo $! >> pids'
    )
    try:
        containment.use(run, "nested")
        result = run_criterion(bash_criterion(tmp_path, command), RunContext(tmp_path))
        pids = recorded(tmp_path / "pids")
        survivors = wait_gone(pids, 3)  # before the run's cgroup goes, which kills all
    finally:
        containment.stop_using()
        containment.remove_cgroup(run)
    kill_all(survivors)
    assert result.status is Status.PASSED
    assert pids and survivors == []


def _zombie_children() -> list[int]:
    """This process's children that exited and were never waited for."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            continue
        if fields[0] == b"Z" and int(fields[1]) == os.getpid():
            found.append(int(name))
    return found


def test_after_a_tracking_run_this_process_adopts_no_orphans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that tracked its commands as a subreaper stops being one when it ends: the
    pytest process (an xdist worker running runs in-process) then adopts none of the orphans
    of what it starts later, such as the inner process of each bubblewrap wrapper, which
    nobody would ever reap. Counted in /proc: zombie children of this process."""
    assert not containment.is_subreaper(), "this process is a subreaper before the run"
    monkeypatch.setenv(containment.MODE_VARIABLE, "tracking")
    assert containment.use(None, "test") == "tracking"
    assert containment.is_subreaper(), "tracking needs the orphans of the run's commands"
    containment.stop_using()
    assert not containment.is_subreaper()
    before = set(_zombie_children())
    # A child that exits at once, leaving a grandchild that outlives it: an orphan.
    subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], check=True)
    time.sleep(0.5)
    assert set(_zombie_children()) - before == set(), "an orphan became our zombie"


def test_the_runner_used_as_a_library_is_a_subreaper_only_while_a_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no run choosing the containment (the runner called as a library, as tests do),
    the process tracks each command as a subreaper, and stops being one when the command
    ends: what a setsid and double fork left is still killed, and later orphans are not
    ours to reap."""
    monkeypatch.setenv(containment.MODE_VARIABLE, "tracking")
    containment.stop_using()
    command = ESCAPES["setsid + double fork"]
    result = run_criterion(bash_criterion(tmp_path, command), RunContext(tmp_path))
    assert result.status is Status.PASSED
    survivors = wait_gone(recorded(tmp_path / "pids"), 3)
    kill_all(survivors)
    assert not survivors, "the command's orphan outlived it"
    assert not containment.is_subreaper(), "still a subreaper after the command"
    before = set(_zombie_children())
    subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], check=True)
    time.sleep(0.5)
    assert set(_zombie_children()) - before == set(), "an orphan became our zombie"


def test_a_workers_death_is_awaited_until_its_orphans_are_handed_on() -> None:
    """The controller looks for a dead worker's orphans only once the worker has exited (a
    zombie or gone): its channel closes earlier, while Linux has yet to hand them on."""
    living = subprocess.Popen(["sleep", "30"])
    ending = subprocess.Popen(["sleep", "0.3"])
    try:
        started = time.monotonic()
        assert containment.await_a_death(frozenset({living.pid}), timeout=0.2) == frozenset()
        dead = containment.await_a_death(frozenset({living.pid, ending.pid}), timeout=10)
        assert dead == {ending.pid}
        assert time.monotonic() - started >= 0.3
    finally:
        living.kill()
        living.wait()
        ending.wait()


def test_a_command_whose_start_is_interrupted_after_its_fork_is_killed(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal that lands while Popen waits for the exec (a run stopped with SIGTERM, a
    Ctrl-C) ends Popen with an exception, yet the child runs: the scope finds it by its
    birth and kills it, in every mode. The honest control is every other test here: a
    command that started normally."""
    token = f"interrupted-spawn-{tmp_path.name}"

    class InterruptedPopen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: object, **options: object) -> None:
            super().__init__(*args, **options)  # type: ignore[arg-type]
            self.returncode = 0  # this object is dropped: no "still running" warning
            raise KeyboardInterrupt

    monkeypatch.setattr(containment.subprocess, "Popen", InterruptedPopen)
    command = [sys.executable, "-c", "import time; time.sleep(300)", token]
    with pytest.raises(KeyboardInterrupt), containment.contained(1.0) as scope:
        scope.popen(command)
    survivors = wait_gone(running_with(token), 5)
    kill_all(survivors)
    assert survivors == []
