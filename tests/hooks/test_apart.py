"""The gate's run apart (gate/apart.py), with each wrapper this machine has: the run sees
only its own processes, nothing of it outlives the hook that started it, and under
bubblewrap, or unshare with mount, what the hooks trust is read-only to it while the
project stays writable."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hook_transcripts import REPO_ROOT, wait_until
from hypothesis import given
from hypothesis import strategies as st
from pinning import collected, take_pins
from support.isolation import hiding
from support.tools import require_tool

from pytest_acceptance.gate import apart
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base, criteria_environments
from pytest_acceptance.gate.pins.closures import Environment
from pytest_acceptance.gate.pins.criteria_environments import CriteriaEnvironments

WRAPPERS = {
    "unshare+mount" if apart.has_view(wrapper) else wrapper[0].rsplit("/", 1)[-1]: wrapper
    for wrapper in apart.candidates()
}


def test_this_machine_sets_runs_apart() -> None:
    """CI installs both (util-linux's unshare is on every Debian, .ci/run installs
    bubblewrap): the gate must not silently fall back to a run that can see the hook."""
    require_tool("bwrap", why="a second way to set the gate's run apart")
    assert {"unshare", "unshare+mount", "bwrap"} <= set(WRAPPERS)
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
    sleeps = f"sleep {pause(tmp_path)} & sleep {pause(tmp_path)}"
    run = (  # its command line names tmp_path, which its world need not hold
        f"# {tmp_path}\n"
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen(['setsid', 'sh', '-c', {sleeps!r}])\n"
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
        assert wait_until(lambda: len(sleeping(tmp_path)) == 2, 60), "the run never started"
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


def sleeping(tmp_path: Path) -> list[int]:
    """The run's sleeps, alive."""
    wanted = f"sleep\0{pause(tmp_path)}\0".encode()
    found = []
    for pid in run_processes(tmp_path):
        with contextlib.suppress(OSError):
            if Path("/proc", str(pid), "cmdline").read_bytes() == wanted:
                found.append(pid)
    return found


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


WRITE = (
    "import sys\n"
    "for path in sys.argv[1:]:\n"
    "    try:\n"
    "        open(path, 'a').close()\n"
    "        print('written', path)\n"
    "    except OSError as error:\n"
    "        print('refused', error.errno, path)\n"
)


def view_wrapper() -> tuple[str, ...]:
    wrapper = WRAPPERS.get("unshare+mount")
    if wrapper is None:
        pytest.skip("util-linux's unshare and mount make the view: not both at their paths")
    return wrapper


def test_the_view_refuses_what_it_was_given_read_only(tmp_path: Path) -> None:
    """unshare with mount (apart.in_view): a folder given read-only cannot be written
    (EROFS), a writable folder inside it can, a read-only one inside that cannot again, and
    the project, given writable, stays so; as your user."""
    kept, opened, project = tmp_path / "kept", tmp_path / "kept" / "open", tmp_path / "repo"
    again, venv = opened / "again", project / ".venv"
    for folder in (again, venv):
        folder.mkdir(parents=True)
    tries = {kept / "x": False, opened / "x": True, again / "x": False}
    tries.update({venv / "x": False, project / "x": True})
    words = apart.in_view(
        view_wrapper(),
        [sys.executable, "-c", WRITE, *map(str, tries)],
        [str(kept), str(again), str(venv)],
        [str(project), str(opened)],
    )
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    for path, writable in tries.items():
        expected = "written" if writable else f"refused {errno.EROFS}"
        assert f"{expected} {path}\n" in said, said
    who = apart.in_view(view_wrapper(), ["id", "-u"], [str(kept)], [])
    uid = subprocess.run(who, capture_output=True, text=True, check=True)
    assert uid.stdout.strip() == str(os.getuid())


def test_a_failed_mount_never_starts_the_command(tmp_path: Path) -> None:
    """A path that cannot be mounted (gone since it was listed): the run errors, and the
    command, which would leave a mark, never runs without its view."""
    mark = tmp_path / "ran"
    touch = [sys.executable, "-c", f"open({str(mark)!r}, 'w').close()"]
    words = apart.in_view(view_wrapper(), touch, [str(tmp_path / "gone")], [])
    done = subprocess.run(words, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "no read-only view" in done.stderr, done.stderr
    assert not mark.exists()
    assert subprocess.run(apart.in_view(view_wrapper(), touch, [], []), check=False).returncode == 0
    assert mark.exists()  # the control: the same command, nothing to mount, runs


def test_the_probe_proves_the_view_by_writing(tmp_path: Path) -> None:
    """apart.works on a view whose `mount` does nothing (/bin/true in its place): the probe's
    file stays writable, so the wrapper is refused, not trusted for its name."""
    wrapper = view_wrapper()
    assert apart.works(wrapper)
    mount = apart.installed("mount")
    idle = tuple("/bin/true" if word == mount else word for word in wrapper)
    assert idle != wrapper and not apart.works(idle)


def test_a_submount_of_a_read_only_path_is_read_only(tmp_path: Path) -> None:
    """A file system mounted inside a path given read-only (a tmpfs, in a mount namespace
    of this test's own, which needs root): the recursive bind carries it, and it is made
    read-only too, not left writable nor hidden."""
    if os.geteuid() != 0:
        pytest.skip("mounting the tmpfs this test needs takes root")
    kept = tmp_path / "kept"
    (kept / "sub").mkdir(parents=True)
    inside = (
        "import subprocess, sys\n"
        "from pytest_acceptance.gate import apart\n"
        f"subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', {str(kept / 'sub')!r}], check=True)\n"
        f"open({str(kept / 'sub' / 'seen')!r}, 'w').close()\n"
        f"words = [sys.executable, '-c', {WRITE!r}, {str(kept / 'sub' / 'seen')!r}]\n"
        f"words = apart.in_view({view_wrapper()!r}, words, [{str(kept)!r}], [])\n"
        "print(subprocess.run(words, capture_output=True, text=True, check=True).stdout)\n"
    )
    unshare = apart.installed("unshare")
    assert unshare is not None
    command = [unshare, "--mount", "--", sys.executable, "-c", inside]
    said = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert f"refused {errno.EROFS} {kept / 'sub' / 'seen'}" in said, said


def test_a_user_who_is_not_root_without_bubblewrap_gets_the_view() -> None:
    """Most machines without bubblewrap: the hook runs as a user who is not root (nobody,
    switched to by setpriv, which takes root), bubblewrap hidden (support/isolation.py).
    The probe, which writes to prove the view, finds level `view` there."""
    python, setpriv = Path("/usr/bin/python3"), Path("/usr/bin/setpriv")
    if os.geteuid() != 0 or not (python.exists() and setpriv.exists()):
        pytest.skip("switching to another user takes root, setpriv and a system python3")
    if REPO_ROOT.stat().st_mode & 0o005 != 0o005:
        pytest.skip(f"{REPO_ROOT} is not readable by other users")
    code = (
        f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "from pytest_acceptance.gate import isolation\n"
        "print(isolation.current().name)\n"
    )
    nobody = [str(setpriv), "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    words = [*hiding(("bwrap",)), *nobody, str(python), "-I", "-c", code]
    done = subprocess.run(
        words, capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"}, timeout=60
    )
    assert done.stdout.strip() == "view", done


KERNEL_ESCAPES = {" ": "\\040", "\t": "\\011", "\n": "\\012", "\\": "\\134"}


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1), max_size=5))
def test_mount_points_are_read_as_the_kernel_writes_them(names: list[str]) -> None:
    """Each mount point comes back whole from mountinfo's escaped fifth field: spaces,
    tabs, newlines and backslashes in a name cannot split it or shift the fields."""
    points = ["/" + name.replace("\0", "") for name in names]
    lines = [
        f"{36 + n} 1 0:{n} / {''.join(KERNEL_ESCAPES.get(c, c) for c in point)} rw - tmpfs x rw"
        for n, point in enumerate(points)
    ]
    assert apart.mount_points("\n".join(lines).encode()) == list(dict.fromkeys(points))


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[list[Path]]:
    """A file in each place the run must not see, removed after: beside the project, in the
    real HOME, in /var/tmp and /dev/shm (any user may write both), in the machine's /tmp."""
    places = [tmp_path / "beside", Path.home(), Path("/var/tmp"), Path("/dev/shm"), Path("/tmp")]
    files = []
    for place in places:
        place.mkdir(exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".acceptance-unpinned-", dir=place)
        os.close(handle)
        files.append(Path(name))
    try:
        yield files
    finally:
        for path in files:
            path.unlink(missing_ok=True)


def test_the_run_sees_nothing_of_the_machine_no_pin_names(
    tmp_path: Path, planted: list[Path]
) -> None:
    """Under bubblewrap the run's world is built from nothing: the system's folders, the
    project, the run's private folder and what a pin names are there; a file anywhere else
    is not, and HOME's own path holds only what is pinned below it."""
    require_tool("bwrap", why="the run's world of its own")
    repo, private, site = tmp_path / "repo", tmp_path / "private", tmp_path / "site"
    for folder in (repo, private, site):
        folder.mkdir()
    (site / "pinned.py").write_text("")
    (repo / "app.py").write_text("")
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "collection": collected(sys.executable)})
    flow.folder.mkdir()
    take_pins(flow, {"roots": [str(site)]})
    seen = [repo / "app.py", site / "pinned.py", private, Path("/etc/passwd"), Path("/usr/bin")]
    probe = "import os, sys\nfor path in sys.argv[1:]:\n    print(os.path.exists(path), path)\n"
    paths = [*map(str, [*seen, *planted]), "/srv", "/mnt", "/media", "/var", "/run/user"]
    words = apart.command([sys.executable, "-c", probe, *paths], flow, writable=[str(private)])
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    for path in paths:
        assert f"{path in map(str, seen)} {path}" in said.splitlines(), said


def test_a_path_inside_a_folder_shown_already_takes_no_mount_of_its_own(tmp_path: Path) -> None:
    """Pins name folders and files inside them (an installation and each file of its
    closure). The folder's read-only mount shows those files already, so they take no mount
    of their own (the kernel makes and takes down each one, on every run). The run still
    reads them and cannot write them. Inside the writable project too: there the folder is
    made read-only again after the project's mount, and its files go with it."""
    require_tool("bwrap", why="the run's world of its own")
    repo, site = tmp_path / "repo", tmp_path / "site"
    outside, inside = site / "pkg" / "mod.py", repo / ".venv" / "lib" / "mod.py"
    for file in (outside, inside):
        file.parent.mkdir(parents=True)
        file.write_text("VALUE = 1\n")
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "collection": collected(sys.executable)})
    flow.folder.mkdir()
    take_pins(flow, {"roots": [str(site)], "files": [str(outside)]})
    venv = Environment("python", (str(repo / ".venv"),), (str(inside),), (), (), "closure-0.json")
    base.write(flow, criteria_environments.NAME, CriteriaEnvironments((venv,)).to_json())
    probe = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    seen = open(path).read() == 'VALUE = 1\\n'\n"
        "    try:\n"
        "        open(path, 'a').close()\n"
        "        print(seen, 'written')\n"
        "    except OSError:\n"
        "        print(seen, 'refused')\n"
    )
    words = apart.command([sys.executable, "-c", probe, str(outside), str(inside)], flow)
    mounted = [words[at + 1] for at, word in enumerate(words) if word == "--ro-bind"]
    assert str(site) in mounted and str(outside) not in mounted
    assert mounted.count(str(repo / ".venv")) == 2 and str(inside) not in mounted
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    assert said.splitlines() == ["True refused", "True refused"], said


def test_a_pinned_root_is_mounted_read_only_with_what_is_pinned_inside_it(
    tmp_path: Path,
) -> None:
    """A pin may name `/` (a PATH that lists it): `/` is then mounted read-only, the whole
    machine with it, and what else is pinned (inside it, as everything is) is there and
    read-only, in the run's fresh /tmp too, and inside the writable project (its .venv)
    too. `/` is not inside itself: it is never dropped as a path another mount shows."""
    require_tool("bwrap", why="the run's world of its own")
    repo, site = tmp_path / "repo", tmp_path / "site"
    for file in (site / "pinned.py", repo / ".venv" / "lib.py"):
        file.parent.mkdir(parents=True)
        file.write_text("VALUE = 1\n")
    world = apart._bwrap_world(["/", str(site), str(repo / ".venv")], [str(repo)])
    mounted = [world[at + 1] for at, word in enumerate(world) if word == "--ro-bind"]
    assert "/" in mounted and str(site) not in mounted
    tries = [site / "pinned.py", repo / ".venv" / "lib.py", repo / "new.txt"]
    command = [WRAPPERS["bwrap"][0], *world, "--", sys.executable, "-c", WRITE, *map(str, tries)]
    said = subprocess.run(command, capture_output=True, text=True, check=False)
    outcomes = [line.split()[0] for line in said.stdout.splitlines()]
    assert outcomes == ["refused", "refused", "written"], said.stdout + said.stderr
    assert (site / "pinned.py").read_text() == "VALUE = 1\n"


def test_a_path_folder_in_home_is_in_the_world_read_only_and_nothing_else_of_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the run takes from HOME is what the pins show: a folder of the PATH pinned at
    /implement (~/.local/bin) is there, read-only, with its tools; the rest of HOME is not."""
    require_tool("bwrap", why="the run's world of its own")
    home, repo = tmp_path / "home", tmp_path / "repo"
    userbin = home / ".local" / "bin"
    userbin.mkdir(parents=True)
    repo.mkdir()
    (userbin / "tool").write_text("#!/bin/sh\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{userbin}{os.pathsep}{os.environ['PATH']}")
    flow = Flow(tmp_path / "flow", {"repo": str(repo), "collection": collected(sys.executable)})
    flow.folder.mkdir()
    take_pins(flow, {"roots": []})
    probe = (
        "import os, sys\n"
        "tool, key, new = sys.argv[1:]\n"
        "print('tool', os.path.exists(tool), 'key', os.path.exists(key))\n"
        "try:\n"
        "    open(new, 'w').close()\n"
        "    print('written')\n"
        "except OSError:\n"
        "    print('refused')\n"
    )
    paths = [userbin / "tool", home / ".ssh" / "id_ed25519", userbin / "planted"]
    words = apart.command([sys.executable, "-c", probe, *map(str, paths)], flow)
    said = subprocess.run(words, capture_output=True, text=True, check=True).stdout
    assert said.split() == ["tool", "True", "key", "False", "refused"], said


def test_a_hook_interpreter_reached_through_links_gets_bubblewrap(tmp_path: Path) -> None:
    """A hook run by a virtualenv's python3 (no other python3 on PATH) starts through links
    in a folder the probe's world does not show (`python -> python3 -> the real file`):
    each link is made again there, so the probe finds bubblewrap working, not a lower level
    that tells the user to install what is installed."""
    require_tool("bwrap", why="the level a working bubblewrap gives")
    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True)
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    (folder / "python").symlink_to("python3")
    probe = "import sys; from pytest_acceptance.gate import apart; print(apart.prefix()[0])"
    for python in (folder / "python", folder / "python3"):
        done = subprocess.run(
            [
                str(python),
                "-I",
                "-S",
                "-c",
                f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); {probe}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == apart.installed("bwrap"), python
