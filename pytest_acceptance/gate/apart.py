"""Runs apart: what the hooks start that runs the project's code gets a PID namespace of its
own, with its own ``/proc``.

The gate's pytest runs the criteria, and so the project's code, as your user. Without a
namespace that code can find the hook that started the run (its parent's parent, or any
process in ``/proc``) and open what the hook holds through ``/proc/<pid>/fd``: its standard
output, the hook's answer to Claude Code (a second JSON value there and the CLI acts on
neither), or signal it. Inside a namespace of its own the run sees no process but its own:
nothing outside it can be named, opened or signalled, whatever shape the code takes. And
when the run's first process ends, the kernel ends every process left in it.

Under bubblewrap the run also sees what the hooks trust read-only (:func:`trusted`): the
plugin, its state, Claude Code's configuration, the pinned interpreter. The run executes
the project's code outside Claude Code's sandbox (hooks run outside it), so without this
that code could rewrite the hook that judges the next /done.

Without bubblewrap, util-linux's ``unshare`` gives the same read-only view where the kernel
lets a user make a user and mount namespace: a shell at a fixed path binds each path over
itself with util-linux's ``mount`` and makes it read-only, then starts the command as your
user in a user namespace below, which has no right over those mounts. System binaries
rather than a Python launcher calling mount(2) through ctypes: ``mount`` already keeps the
flags a user namespace locks (nosuid, nodev, ...) when it makes a bind read-only, and a
machine without it is made in a test by hiding it, as bubblewrap is hidden.

Each wrapper is a system binary at a fixed path (never looked up on PATH, which the agent
can write): bubblewrap, then ``unshare`` with ``mount`` (the view), then ``unshare`` alone (a
PID namespace only). Each is tried once per hook process with a probe that must see its
own pid namespace, the same user id, and (with the view) a file it was given read-only
refused; with none working, the run goes as before, in the hook's namespace
(docs/threat-model.md says what each level leaves open).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
from typing import Iterable

from pytest_acceptance.gate.flow_state import Flow, data_dir
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.pins import table

# Where each wrapper is looked for, best first (isolation.py names the level each gives).
SYSTEM_PATHS = {
    "bwrap": ("/usr/bin/bwrap", "/bin/bwrap"),
    "unshare": ("/usr/bin/unshare", "/bin/unshare"),
    "mount": ("/usr/bin/mount", "/bin/mount"),
}
SHELL = "/bin/sh"
# The read-only view's mounts, run by SHELL in the run's new mount namespace, as root of the
# user namespace that owns it. Every path is a positional argument, never part of the
# script: pairs "ro PATH" (PATH and what is mounted below it, bound over itself, read-only
# at the top) and "rw PATH" (the same, writable again), up to "--". The first mount that
# fails ends the script: the command never runs without its view. The command then runs as
# your user in a user namespace of its own below that one, with no right over the mounts
# (and a mount namespace it makes gets them locked, read-only included).
_VIEW_SCRIPT = """\
mount=$1 unshare=$2 uid=$3 gid=$4
shift 4
while [ "$1" != -- ]; do
    case $1 in
        ro) "$mount" --rbind -o ro -- "$2" "$2" ;;
        rw) "$mount" --rbind -- "$2" "$2" &&
            "$mount" --options-mode=ignore -o remount,bind,rw -- "$2" ;;
        *) false ;;
    esac || { echo "pytest-acceptance: no read-only view: $1 $2" >&2; exit 125; }
    shift 2
done
shift
exec "$unshare" --user --map-user="$uid" --map-group="$gid" -- "$@"
"""
_ESCAPE = re.compile(rb"\\([0-7]{3})")
_PROBE_TIMEOUT = 10.0  # seconds: a wrapper that needs longer to start is not used


def candidates() -> list[tuple[str, ...]]:
    """The wrappers this machine has, best first, each ending where the command begins.
    bubblewrap first: it also gives the run a read-only view of what the hooks trust
    (:func:`command`), as unshare does with mount. Each ends the whole namespace when it
    dies itself (SIGKILL to its first process; a namespace's first process ignores a
    SIGTERM it has no handler for)."""
    found: list[tuple[str, ...]] = []
    bwrap = installed("bwrap")
    if bwrap is not None:  # the whole file system as it is, but a /proc of its own
        mounts = ("--dev-bind", "/", "/", "--proc", "/proc")
        found.append((bwrap, *mounts, "--unshare-pid", "--die-with-parent", "--"))
    return found + _unshare_wrappers()


def _unshare_wrappers() -> list[tuple[str, ...]]:
    """util-linux's unshare: with the read-only view when util-linux's mount is there too
    (:data:`_VIEW_SCRIPT`), then with a PID namespace only. The view's namespaces belong to
    a user namespace whose root is your user (root there may mount; --map-current-user
    would leave the mounting shell no capability)."""
    unshare = installed("unshare")
    if unshare is None:
        return []
    namespaces = ("--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL")
    found: list[tuple[str, ...]] = []
    mount = installed("mount")
    if mount is not None:
        ids = (str(os.getuid()), str(os.getgid()))
        view = (SHELL, "-c", _VIEW_SCRIPT, "sh", mount, unshare, *ids, "--")
        found.append((unshare, "--user", "--map-root-user", "--mount", *namespaces, "--", *view))
    user = () if os.geteuid() == 0 else ("--user", "--map-current-user")
    found.append((unshare, *user, *namespaces, "--"))
    return found


def has_view(wrapper: tuple[str, ...]) -> bool:
    """The wrapper is unshare's with the read-only view (:func:`_unshare_wrappers`)."""
    return _VIEW_SCRIPT in wrapper


def in_view(
    wrapper: tuple[str, ...], words: list[str], kept: list[str], opened: list[str]
) -> list[str]:
    """`words` run by the view's wrapper: each path of `kept` read-only with what is mounted
    below it, then each path of `opened` inside one of them writable again, then what of
    `kept` lies inside those read-only again (the order of :func:`command`'s binds). A
    submount is carried by the recursive bind, which makes only its top read-only: each
    mount point below a path (this process's, which the run's namespace starts as a copy of)
    gets its own mount. A writable path's submount that is read-only here stays so."""
    points = _mount_points()
    if points is None:  # the script refuses the word: the run never starts without its view
        return [*wrapper[:-1], "unreadable", "/proc/self/mountinfo", "--", *words]
    reopened = [path for path in opened if any(_within(path, k) or path == k for k in kept)]
    mounts: list[tuple[str, str]] = []
    for path in kept:
        mounts += [("ro", point) for point in _tree(path, points)]
    for path in reopened:
        mounts += [("rw", point) for point in _tree(path, points) if _writable_here(point)]
    for path in kept:
        if any(_within(path, folder) for folder in reopened):
            mounts += [("ro", point) for point in _tree(path, points)]
    return [*wrapper[:-1], *(word for mount in mounts for word in mount), "--", *words]


def _tree(path: str, points: list[str]) -> list[str]:
    """`path` and the mount points strictly inside it, each after the one it lies in."""
    return [path, *sorted(point for point in points if _within(point, path))]


def _mount_points() -> list[str] | None:
    """The mount points of this process's namespace, each once; None when unreadable."""
    try:
        with open("/proc/self/mountinfo", "rb") as mountinfo:
            return mount_points(mountinfo.read())
    except OSError:
        return None


def mount_points(mountinfo: bytes) -> list[str]:
    """The mount points a mountinfo text lists (its fifth field, where the kernel writes
    space, tab, newline and backslash as \\ooo), each once, in its order."""
    found: dict[str, None] = {}
    for line in mountinfo.split(b"\n"):  # a name may hold \r, which the kernel keeps
        fields = line.split(b" ")
        if len(fields) > 4:
            point = _ESCAPE.sub(lambda octal: bytes([int(octal[1], 8)]), fields[4])
            found[os.fsdecode(point)] = None
    return list(found)


def _writable_here(path: str) -> bool:
    try:
        return not os.statvfs(path).f_flag & os.ST_RDONLY
    except OSError:
        return False


def installed(tool: str) -> str | None:
    """The first of the tool's system paths that is an executable file, or None."""
    return next((path for path in SYSTEM_PATHS[tool] if os.access(path, os.X_OK)), None)


@functools.lru_cache(maxsize=1)
def prefix() -> tuple[str, ...]:
    """The first wrapper that works here, or () when none does."""
    return next((wrapper for wrapper in candidates() if works(wrapper)), ())


def works(wrapper: tuple[str, ...]) -> bool:
    """The wrapper starts a command in a pid namespace of its own (its pid is 1 or 2 there)
    as the same user; with the read-only view (:func:`has_view`), a folder the probe gives
    it read-only cannot be written there (EROFS) and a folder inside it given writable can
    (a project inside a folder the hooks trust: the plugin's own, developed with itself)."""
    check = (
        "import errno, os, sys\n"
        "def written(path):\n"
        "    try:\n"
        "        open(path, 'a').close()\n"
        "    except OSError as error:\n"
        "        return error.errno\n"
        "    return True\n"
        "view = sys.argv[1:] and written(sys.argv[1]) == errno.EROFS\n"
        "view = view and written(sys.argv[2]) is True\n"
        f"sys.exit(os.getpid() > 2 or os.getuid() != {os.getuid()} or view is False)\n"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="pytest-acceptance-probe-") as folder:
            words = [sys.executable, "-I", "-S", "-c", check]
            if has_view(wrapper):
                kept, opened = os.path.join(folder, "kept"), os.path.join(folder, "kept", "open")
                os.makedirs(opened)
                tries = [os.path.join(kept, "x"), os.path.join(opened, "x")]
                words = in_view(wrapper, [*words, *tries], [kept], [opened])
            else:
                words = [*wrapper, *words]
            done = subprocess.run(
                words,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_PROBE_TIMEOUT,
                check=False,
            )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def command(
    words: list[str], flow: Flow, writable: Iterable[str] = (), read_only: Iterable[str] = ()
) -> list[str]:
    """`words`, to be run apart when this machine can. Under bubblewrap, what the hooks
    trust is read-only to the run (:func:`trusted`): code the run executes cannot rewrite
    the plugin's hooks, its state, Claude Code's settings and transcripts, or the pinned
    interpreter's files; the project and `writable` stay writable, but for `read_only`
    (what the gate puts into the run's own processes, inside a writable folder)."""
    wrapper = prefix()
    if has_view(wrapper):
        kept = _existing([*trusted(flow), *read_only])
        return in_view(wrapper, words, kept, _existing([flow.repo, *writable]))
    if not wrapper or os.path.basename(wrapper[0]) != "bwrap":
        return [*wrapper, *words]
    binds: list[str] = []
    kept = _existing([*trusted(flow), *read_only])
    opened = _existing([flow.repo, *writable])
    for path in kept:
        binds += ["--ro-bind", path, path]
    for path in opened:
        binds += ["--bind", path, path]
    # A later mount covers an earlier one: what the hooks trust inside the project (its own
    # .venv, pinned as a criterion's or the gate's environment) is made read-only again.
    for path in kept:
        if any(_within(path, folder) for folder in opened):
            binds += ["--ro-bind", path, path]
    return [*wrapper[:-1], *binds, "--", *words]


def _within(path: str, folder: str) -> bool:
    """Strictly inside: the project itself is never made read-only."""
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def trusted(flow: Flow) -> list[str]:
    """What the hooks read to decide, and what the gate's runs are made of: the plugin (its
    hooks and package), its state, Claude Code's configuration folder (settings,
    transcripts, installed plugins), and what each pin of the gate's table names
    (pins/table.py: the folders and files of the pinned interpreter and of each environment
    a criterion ran in at /implement, ...)."""
    home = os.path.expanduser("~")
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    return [str(PLUGIN_ROOT), str(data_dir()), config, *table.read_only(flow)]


def _existing(paths: Iterable[str]) -> list[str]:
    """Each path that exists, by its real path (a link is followed to what it names), once:
    a mount over it covers every way of naming it."""
    found: dict[str, None] = {}
    for path in paths:
        real = os.path.realpath(path)
        if os.path.isabs(real) and os.path.exists(real):
            found[real] = None
    return list(found)
