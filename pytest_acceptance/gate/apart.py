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
from pytest_acceptance.gate.interpreter_paths import symlink_hops
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
    if bwrap is not None:  # the probe's world: the system and the hook's own interpreter
        found.append((bwrap, *_bwrap_world(_interpreter_folders(), ()), "--"))
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
    words: list[str],
    flow: Flow,
    writable: Iterable[str] = (),
    read_only: Iterable[str] = (),
    pinning: bool = False,
) -> list[str]:
    """`words`, to be run apart when this machine can. Under bubblewrap, in a world built
    from nothing (:func:`_bwrap_world`): the system's folders and what the hooks trust
    read-only (:func:`trusted`), the project and `writable` writable, but for `read_only`
    (what the gate puts into the run's own processes, inside a writable folder); nothing
    else of the machine. Code the run executes cannot rewrite the plugin's hooks, its
    state, Claude Code's settings and transcripts, or the pinned environments, and cannot
    read a file no pin covers. `pinning`: the run that takes the pins at /implement (the
    witness's collection) sees the machine as it is, what the hooks trust read-only: what
    it reads is what gets pinned, so it cannot be limited to what is pinned already."""
    wrapper = prefix()
    if has_view(wrapper):
        kept = _existing([*trusted(flow), *read_only])
        return in_view(wrapper, words, kept, _existing([flow.repo, *writable]))
    if not wrapper or os.path.basename(wrapper[0]) != "bwrap":
        return [*wrapper, *words]
    shown, opened = [*trusted(flow), *read_only], [flow.repo, *writable]
    world = _bwrap_machine(shown, opened) if pinning else _bwrap_world(shown, opened)
    return [wrapper[0], *world, "--", *words]


# The system's own folders, read-only in the run's world; nothing else of the machine is
# there but what a pin, the plugin or the gate names (:func:`command`). Each is here for
# what an honest run needs of it:
SYSTEM_FOLDERS = (
    "/usr",  # programs, shared libraries, the locale archive, the system's Pythons and git
    "/bin",  # on most systems links into /usr (kept as links); elsewhere the folders
    "/sbin",
    "/lib",  # the dynamic loader and libc
    "/lib32",
    "/lib64",
    "/libx32",
    # user and group names (git, getpass, ssh), the loader's cache, locale and time zone
    # settings, CA certificates (/etc/ssl), name resolution (resolv.conf, hosts,
    # nsswitch.conf), git's system configuration
    "/etc",
    "/opt",  # software the administrator installed for every user (a browser, a toolchain)
    # systemd-resolved's resolv.conf, which /etc/resolv.conf links to on such systems: the
    # only part of /run shown (the rest holds sockets of the user's session and daemons)
    "/run/systemd/resolve",
    # the kernel's view of CPUs and cgroups, which toolchains read to size their work
    # (read-only; it holds no file of the user's)
    "/sys",
)


def _bwrap_world(shown: Iterable[str], opened: Iterable[str]) -> list[str]:
    """bubblewrap's arguments for a root built from nothing: :data:`SYSTEM_FOLDERS`
    read-only, a /dev and /proc of its own, a fresh empty /tmp, `shown` read-only and
    `opened` read-write (both after /tmp: the gate's folders live there), and what of
    `shown` lies inside `opened` read-only again; the root itself read-only. Not /home,
    /root, /srv, /mnt, /media, /var, the rest of /run: a file there that no pin names is
    not in the run's world. HOME's own path holds only what is pinned below it
    (bubblewrap's root is an empty tmpfs of its own): the run's HOME variable names the
    gate's fresh folder (gate_env.py), which holds only the HOME files the pins show."""
    world = ["--unshare-pid", "--die-with-parent"]
    system: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
            world += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            world += ["--ro-bind", folder, folder]
            system.append(folder)
    world += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown = list(shown)
    world += _binds(shown, opened, shown_already=system)
    shown_folders = [*_existing(shown), *_existing(opened), *_existing(SYSTEM_FOLDERS)]
    for where, target in _links(shown, shown_folders).items():
        world += ["--symlink", target, where]
    for path in _absent_in_fresh_tmp(shown, _existing(opened)):
        world += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    # Nothing can be created outside the project, the writable folders and the fresh /tmp:
    # a file the run made where a pin says there is none (a user site folder, a conftest.py
    # above the project) would reach a later criterion's process, and go with the run.
    return [*world, "--remount-ro", "/"]


def _absent_in_fresh_tmp(shown: list[str], opened: list[str]) -> list[str]:
    """The pinned paths that do not exist and that the run could create in its fresh /tmp
    (a conftest.py or pytest.ini above a project in /tmp, pinned as absent): each is held
    by an empty read-only folder, which no Python or pytest takes for a file, so none can
    be made there for a later criterion's process, and go unseen with the run's /tmp."""
    found: dict[str, None] = {}
    for path in shown:
        path = os.path.normpath(path)
        if not os.path.isabs(path) or os.path.lexists(path) or not _within(path, "/tmp"):
            continue
        if not any(_within(path, folder) for folder in opened):
            found[path] = None
    return list(found)


def _bwrap_machine(shown: Iterable[str], opened: Iterable[str]) -> list[str]:
    """bubblewrap's arguments for the machine's whole file system with a /proc of its own,
    `shown` read-only, `opened` read-write and what of `shown` lies inside `opened`
    read-only again."""
    world = ["--unshare-pid", "--die-with-parent", "--dev-bind", "/", "/", "--proc", "/proc"]
    return world + _binds(shown, opened)


def _binds(
    shown: Iterable[str], opened: Iterable[str], shown_already: Iterable[str] = ()
) -> list[str]:
    """`shown` read-only and `opened` writable, each bound over itself by its real path.
    A path inside a folder shown read-only before it is not bound again: that folder's
    mount (recursive, read-only) shows it, the same file, already. Each mount costs the
    kernel about a third of a millisecond to make and to take down, and the pins name
    every file of an interpreter's closure inside folders they name too."""
    kept = _existing(shown)
    writable = _existing(opened)
    binds: list[str] = []
    for path in _outermost(kept, [*shown_already, *kept]):
        binds += ["--ro-bind", path, path]
    for path in writable:
        binds += ["--bind", path, path]
    # A later mount covers an earlier one: what the hooks trust inside the project (its own
    # .venv, pinned as a criterion's or the gate's environment) is made read-only again.
    inside = [path for path in kept if any(_within(path, folder) for folder in writable)]
    for path in _outermost(inside, inside):
        binds += ["--ro-bind", path, path]
    return binds


def _outermost(paths: list[str], folders: list[str]) -> list[str]:
    """Each of `paths` that lies inside none of `folders`."""
    return [path for path in paths if not any(_within(path, folder) for folder in folders)]


def _links(paths: Iterable[str], shown: list[str]) -> dict[str, str]:
    """{where: target} of each of `paths` that is a symbolic link in a folder the world
    does not show (a hop of the pinned interpreter's path, /usr/bin/python3 -> python3.11
    in a folder of its own): made again there, so the name the pin holds resolves as it
    did. Its target is shown on its own (:func:`_existing` follows it)."""
    found: dict[str, str] = {}
    for path in paths:
        if not os.path.isabs(path) or not os.path.islink(path):
            continue
        where = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if where in SYSTEM_FOLDERS or any(
            where == folder or _within(where, folder) for folder in shown
        ):
            continue
        found[where] = os.readlink(path)
    return found


def _interpreter_folders() -> list[str]:
    """What the hook's own interpreter needs to start with -I -S (the probe): each link
    met on the way from its path to its file (a virtualenv's ``python -> python3 ->
    /usr/bin/python3.11``: under -S, ``sys.prefix`` is not the virtualenv's, so the
    world does not show that folder and each link is made again there), its file and its
    installation's folders."""
    links = [link for link, _ in symlink_hops(sys.executable)[:-1]]
    return [sys.executable, *links, os.path.realpath(sys.executable), sys.prefix, sys.base_prefix]


def _within(path: str, folder: str) -> bool:
    """Strictly inside: the project itself is never made read-only (nor is `/` inside
    itself, when a pin names it: a PATH entry)."""
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


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
