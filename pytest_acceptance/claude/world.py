"""The world the gate's run sees under bubblewrap: what it was given, and nothing else.

The run executes the project's code as your user. A view of the whole file system with the
trusted paths made read-only (a denylist) leaves every other file of the user's readable:
each input nobody had pinned (a dotfile, a folder on PATH, a module in /srv) needed one more
pin once an attack found it. So the run starts from an empty root and sees only:

- **the system's folders**, read-only: ``/usr`` (with the ``/bin``, ``/sbin`` and ``/lib*``
  links or folders next to it), the programs and libraries the distribution installed;
  ``/etc``, the system's configuration (users, name resolution, certificates, the dynamic
  linker's cache); ``/opt``, software installed for the whole machine; ``/sys``, the
  kernel's description of the hardware (CPU counts, that programs read). None of them
  belongs to a user. ``/home``, ``/root``, ``/srv``, ``/mnt``, ``/media``, ``/var`` (its
  ``/var/tmp`` is writable by every user) and ``/run`` (users' runtime folders) are not
  there.
- **what the hooks trust** (apart.trusted: the plugin, its state, Claude Code's
  configuration, the pinned interpreter and each pinned criteria environment), read-only;
- **what the run needs from HOME**, pinned at /implement and read-only: the installation
  of each tool the criteria name whose file lives outside the system's folders, and the
  toolchain homes of gate_env.py (CARGO_HOME, RUSTUP_HOME, GOPATH) when such a tool lives
  in one (:func:`from_home`; said at /implement, :func:`shown`);
- **the project**, read-write (and the git folder of a worktree, read-only);
- a ``/dev`` of its own (null, zero, random, tty, a fresh ``/dev/shm``), a fresh ``/proc``
  of its PID namespace and a fresh, empty ``/tmp``. HOME and TMPDIR are fresh folders of
  the run's own (gate_env.py, gate_runtime.clean_env); PATH names the pinned folders, and a
  folder of it outside this world does not exist in it.

A file nobody pinned is not hidden by a rule: it is never put into the world.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable

# The system's folders, read-only; a link among them (/bin -> usr/bin) stays a link.
SYSTEM_FOLDERS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/sys",
)
# Files of /etc that are links out of the system's folders, followed (name resolution).
SYSTEM_LINKS = ("/etc/resolv.conf",)
FRESH = ("--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp")


def system() -> list[str]:
    """bubblewrap's words for the system's part of the world: its folders read-only, a /dev,
    /proc and /tmp of the run's own."""
    words: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            words += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            words += ["--ro-bind", folder, folder]
    for link in SYSTEM_LINKS:
        real = os.path.realpath(link)
        if real != link and os.path.isfile(real) and not in_system(real):
            words += ["--ro-bind", real, real]
    return [*words, *FRESH]


def in_system(path: str) -> bool:
    """The path lies in one of the system's folders (already in the world, read-only)."""
    real = os.path.realpath(path)
    return any(
        real == os.path.realpath(folder) or real.startswith(os.path.realpath(folder) + os.sep)
        for folder in SYSTEM_FOLDERS
        if os.path.isdir(folder)
    )


def probe() -> list[str]:
    """What the level's probe needs besides the system: the hook's own interpreter, which
    may live in HOME (pyenv), read-only."""
    prefixes = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}
    words: list[str] = []
    for prefix in sorted(prefixes):
        if os.path.isdir(prefix) and not in_system(prefix):
            words += ["--ro-bind", prefix, prefix]
    return words


def mounts(
    kept: Iterable[str], opened: Iterable[str], links: dict[str, str] | None = None
) -> list[str]:
    """bubblewrap's words for the whole world: the system, `kept` read-only, `opened`
    writable (real, existing paths), and each of `links` (link: target, :func:`hops`) that
    no folder of the world already holds. A later mount covers an earlier one: what is kept
    inside an opened folder (the project's own .venv, pinned as an environment) is made
    read-only again."""
    kept = [path for path in kept if not in_system(path)]
    opened = list(opened)
    words = system()
    for path in kept:
        words += ["--ro-bind", path, path]
    for path in opened:
        words += ["--bind", path, path]
    for path in kept:
        if any(_within(path, folder) for folder in opened):
            words += ["--ro-bind", path, path]
    for link, target in (links or {}).items():
        held = in_system(os.path.dirname(link)) or any(
            link == folder or _within(link, folder) for folder in [*kept, *opened]
        )
        if not held:
            words += ["--symlink", target, link]
    # The folders made to hold the mounts are the world's own, not the run's to write: a
    # conftest.py one criterion wrote above the project would reach the next one's pytest
    # and vanish with the run. /tmp too, when it holds such folders (a project in /tmp).
    words += ["--remount-ro", "/"]
    if any(_within(path, "/tmp") for path in [*kept, *opened, *(links or {})]):
        words += ["--remount-ro", "/tmp"]
    return words


def hops(paths: Iterable[str]) -> dict[str, str]:
    """Each link on the way from `paths` to the files they name (link: its target as
    written): a pinned interpreter named by a link (a virtualenv's python, pyenv's python3)
    is bound by its real path, and the links that lead to it are put back as links."""
    found: dict[str, str] = {}
    for path in paths:
        current = os.path.abspath(path) if path else ""
        for _ in range(40):  # the kernel's own limit on links followed
            if not current or not os.path.islink(current):
                break
            link = os.path.join(
                os.path.realpath(os.path.dirname(current)), os.path.basename(current)
            )
            target = os.readlink(link)
            found.setdefault(link, target)
            current = os.path.join(os.path.dirname(link), target)
    return found


def from_home(tools: dict[str, str], toolchains: dict[str, str], home: str) -> dict[str, str]:
    """What the run is given outside the system's folders because the criteria need it,
    each with why: the installation of each pinned tool that lives there (the folder above
    its ``bin``, or the file alone; never HOME itself nor a folder holding it) and, when one
    of them lives in a toolchain home, every toolchain home (cargo's proxies need rustup's)."""
    places: dict[str, str] = {}
    for name, target in sorted(tools.items()):
        if os.path.isabs(target) and not in_system(target):
            places.setdefault(_installation(target, home), f"the tool `{name}`")
    homes = {
        os.path.realpath(folder): variable
        for variable, folder in sorted(toolchains.items())
        if os.path.isdir(folder) and not in_system(folder)
    }
    needed = any(place == folder or _within(place, folder) for place in places for folder in homes)
    given = dict(homes) if needed else {}
    for place, why in places.items():
        if not any(place == folder or _within(place, folder) for folder in given):
            given[place] = why
    return given


def _installation(target: str, home: str) -> str:
    """A tool's installation: the folder above the ``bin`` it lives in (a pyenv version, a
    virtualenv, ~/.local, ~/.cargo), else the file itself."""
    folder = os.path.dirname(target)
    prefix = os.path.dirname(folder)
    real_home = os.path.realpath(home) if home else ""
    too_wide = prefix in ("", os.sep) or (
        bool(real_home) and (prefix == real_home or _within(real_home, prefix))
    )
    if os.path.basename(folder) == "bin" and not too_wide:
        return prefix
    return target


def shown(given: dict[str, str], home: str) -> str | None:
    """The sentence that lists what of the user's files the run is given, or None."""
    if not given:
        return None
    real_home = os.path.realpath(home) if home else ""
    named = [f"{_tilde(path, real_home)} ({why})" for path, why in given.items()]
    return (
        "pytest-acceptance: the gate's run sees the system's folders, the pinned "
        "environments and the project, and of your other files only (read-only): "
        + ", ".join(named)
        + "."
    )


def worktree_git(repo: str) -> list[str]:
    """The git folders of a worktree (its ``.git`` is a file naming them), so that the
    criteria's git commands work in it: its own folder and the repository's common one."""
    dot_git = os.path.join(repo, ".git")
    try:
        with open(dot_git, encoding="utf-8") as file:
            line = file.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return []
    if not line.startswith("gitdir:"):
        return []
    gitdir = os.path.normpath(os.path.join(repo, line[len("gitdir:") :].strip()))
    found = [gitdir]
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as file:
            found.append(os.path.normpath(os.path.join(gitdir, file.read(4096).strip())))
    except (OSError, UnicodeDecodeError):
        pass
    return found


def _tilde(path: str, home: str) -> str:
    if home and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def _within(path: str, folder: str) -> bool:
    """Strictly inside: the project itself is never made read-only."""
    return path.startswith(folder.rstrip(os.sep) + os.sep)
