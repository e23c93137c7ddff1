"""A fingerprint of the working tree that the agent under verification cannot talk git into faking.

Standard library only and Python 3.8 compatible: the Claude Code hooks import this module by
path under ``python3 -S`` to check that the tree has not changed since it was verified.

What counts is the *file system*, never git's opinion of it. Every counted file is read and
hashed (sha256) on every call; git is asked one question only, which untracked paths its
``.gitignore`` files exclude, and is run so that nothing the agent can write changes the
answer:

- a clean environment (no ``GIT_*`` variable from the caller), the ``.git`` found by walking up
  from the root passed explicitly as ``--git-dir``/``--work-tree`` (a ``core.worktree`` or a
  broken ``.git`` cannot send git to another tree), ``core.fsmonitor`` and the untracked cache
  off, and every failure raised as :class:`FingerprintError` (never read as "clean");
- assume-unchanged and skip-worktree bits, the stat data in ``.git/index`` and its blob ids are
  never used: a file git believes unchanged is hashed like any other (``touch -d`` cannot hide
  a same-size rewrite, a forged index entry cannot stand in for content);
- only ``.gitignore`` files exclude. ``.git/info/exclude`` and ``core.excludesFile`` are *not*
  applied, so the files they hide count like any untracked file: they are local, invisible in
  a diff and writable by the agent. ``.gitignore`` files are part of the tree (their content
  is hashed, a new rule changes the fingerprint), and what they hide is what build tools and
  test runs rewrite all the time (virtualenvs, node_modules, caches) — counting it would make
  every honest run change the fingerprint and would be slow;
- the paths git tracks are hashed too, so ``git rm --cached`` of a tracked file that matches an
  ignore rule changes the fingerprint instead of silently hiding that file;
- ``__pycache__``, ``.pytest_cache`` and ``.acceptance`` are never counted, ignored or not: a
  verification run writes them itself, and the gate compares fingerprints taken before and
  after its run. Bytecode in ``__pycache__`` can change what runs (an unchecked hash-based
  ``.pyc`` is used whatever the source says): a run that relies on this fingerprint should
  set ``PYTHONPYCACHEPREFIX`` so that project bytecode is neither read nor written.

The tree is walked with ``os.scandir`` (file types come with the directory listing, so a FIFO,
socket or device is recognised without opening it, and only its type is hashed). Symbolic
links are hashed as their target text plus what they lead to: a file's content, a directory's
files (walked, wherever it is), or ``dangling``/``loop``. A directory holding a ``.git`` of its
own (nested repository, submodule) is fingerprinted with its own ignore rules; one whose ``.git``
git does not accept is walked like any directory, ``.git`` content included (git would skip it).

Speed, measured by ``bench/bench_fingerprint.py`` (10,000 small files, a 2-core machine):
about 5x ``git status`` without a cache. ``git status`` makes one ``lstat`` per file, in C
and on several threads; reading a file takes ``open``, ``fstat``, ``read`` and ``close``.
Git's own shortcut is unsafe here: its index stat data and blob ids are the agent's to
write, and mtime is settable with ``touch -d``. The Claude Code gate passes a
:class:`hash_cache.HashCache` kept in the plugin's own state instead: a file is read again
unless its ctime (which no process can set) and identity are unchanged.

Outside git every file under the root counts (content, not mtime), except the directories in
``FINGERPRINT_SKIPS_OUTSIDE_GIT`` of tree/folders.py.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from typing import TYPE_CHECKING, Callable

from pytest_acceptance.tree import folders, repository
from pytest_acceptance.tree.file_hash import (
    FingerprintError,
    Limits,
    errno_name,
    hash_one,
    special,
)
from pytest_acceptance.tree.hostile import NOFOLLOW

if TYPE_CHECKING:
    from pytest_acceptance.tree.hash_cache import HashCache

# Written by a verification run itself: never part of the state under verification.
_VOLATILE = frozenset(os.fsencode(name) for name in folders.RUN_OUTPUT)
# What everything_fingerprint leaves out: git's object store (content-addressed: what it
# holds that matters is reached through the refs and index, which count) and the run's own
# output folder, at the root only (a folder of that name deeper down is the project's).
_NEVER_COUNTED = frozenset({b".git/objects", b".acceptance"})
# Outside git there are no ignore rules: the roles tree/folders.py names for this walk.
_SKIP_DIRS = frozenset(os.fsencode(name) for name in folders.FINGERPRINT_SKIPS_OUTSIDE_GIT)
# Past these the fingerprint fails rather than cover part of the tree or run for ever (a
# symbolic link to /proc/kcore, a sparse terabyte file).
MAX_ENTRIES = 1_000_000


def recorded_fingerprint(root: str | os.PathLike[str]) -> str:
    """The fingerprint a run records in verdict.json, or ``unavailable: <why>``: a tree that
    cannot be fingerprinted (a corrupt index, over the size caps) must not crash a plain
    ``pytest --acceptance`` run. Such a value proves nothing: the Claude Code gate takes its
    own fingerprint and fails closed, and the agent cache never stores under it."""
    try:
        return tree_fingerprint(root)
    except FingerprintError as error:
        return f"unavailable: {error}"


def tree_fingerprint(
    root: str | os.PathLike[str],
    *,
    timeout: float | None = None,
    cache: HashCache | None = None,
) -> str:
    """``git:<sha256>`` inside a git work tree, else ``files:<sha256>``; see the module doc.

    ``timeout`` (seconds) bounds the whole call: past it, :class:`FingerprintError`.
    ``cache`` reuses the hashes of files whose stat data (ctime included) are unchanged, and
    is saved afterwards; the fingerprint is the same with or without it."""
    return _measured(root, timeout, cache, _fingerprint)


def everything_fingerprint(
    root: str | os.PathLike[str],
    *,
    timeout: float | None = None,
    cache: HashCache | None = None,
) -> str:
    """``all:<sha256>`` of every file under ``root``, ignored or volatile ones too (git's
    ignore rules, ``__pycache__``, ``.pytest_cache``, a virtualenv inside the project, git's
    refs, index and config): what a run could read there. Only git's object store and the
    root's ``.acceptance`` (what a run writes) are left out; a link looping back or a folder
    it cannot read is a FingerprintError. The gate reuses a stored result only while this is
    unchanged."""
    return _measured(root, timeout, cache, _everything)


def _measured(
    root: str | os.PathLike[str],
    timeout: float | None,
    cache: HashCache | None,
    walk: Callable[[bytes, _Walker], str],
) -> str:
    try:
        real = os.fsencode(os.path.realpath(root))
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise FingerprintError(f"cannot fingerprint {root!r}: {error}") from None
    if not os.path.isdir(real):
        raise FingerprintError(f"cannot fingerprint {os.fsdecode(real)}: not a directory")
    walker = _Walker(Limits(timeout), cache)
    if cache is None:
        return walk(real, walker)
    cache.begin()
    try:
        fingerprint = walk(real, walker)
    finally:
        cache.release()
    cache.save()
    return fingerprint


def _everything(real: bytes, walker: _Walker) -> str:
    walker.plain(real, b"", frozenset(), _NEVER_COUNTED)
    if walker.unseen:
        shown = ", ".join(os.fsdecode(path) for path in walker.unseen[:3])
        raise FingerprintError(f"cannot see everything a run could read ({shown})")
    return "all:" + walker.digest()


def _fingerprint(real: bytes, walker: _Walker) -> str:
    top = _repository_top(real)
    if top is None:
        walker.plain(real, b"", _SKIP_DIRS)
        return "files:" + walker.digest()
    walker.repository(top, b"", nested=False)
    return "git:" + walker.digest()


def _repository_top(path: bytes) -> bytes | None:
    found = repository.top(os.fsdecode(path))
    return None if found is None else os.fsencode(found)


def _git_env() -> dict[str, str]:
    """Nothing from the caller's environment that steers git (GIT_DIR, GIT_INDEX_FILE,
    GIT_CONFIG_*, ...): only what finds the binary and the user's own configuration."""
    env = {"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    for name in ("PATH", "HOME", "XDG_CONFIG_HOME", "SYSTEMROOT"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _git_binary(top: bytes) -> bytes:
    """A ``git`` on PATH outside the work tree (tree/repository.py)."""
    found = repository.git_outside(os.fsdecode(top))
    if found is None:
        raise FingerprintError(
            f"cannot run git for {os.fsdecode(top)}: no git on PATH outside the project"
        )
    return os.fsencode(found)


def _git_command(top: bytes, *args: str) -> list[bytes]:
    return [
        _git_binary(top),
        b"--git-dir=" + os.path.join(top, b".git"),
        b"--work-tree=" + top,
        b"-c",
        b"core.fsmonitor=false",
        b"-c",
        b"core.untrackedCache=false",
        *(os.fsencode(arg) for arg in args),
    ]


class _Git:
    """The two listings of one repository, run side by side."""

    def __init__(self, top: bytes, limits: Limits) -> None:
        self.top = top
        self.limits = limits
        self.processes: list[subprocess.Popen[bytes]] = []
        try:
            self.processes.append(self._start("ls-files", "-z"))
            self.processes.append(self._start(
                "ls-files", "-z", "--others", "--ignored", "--directory",
                "--exclude-per-directory=.gitignore",
            ))  # fmt: skip
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> _Git:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill what still runs and close every pipe, however the caller leaves: an error,
        a timeout, a Ctrl-C (a second one too) never leaves an open file or a running git
        behind for the garbage collector to warn about. The pipes are closed before the
        wait, so an interrupted wait leaves no file open."""
        for process in self.processes:
            if process.returncode is None and process.poll() is None:
                process.kill()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        for process in self.processes:
            process.wait()

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                _git_command(self.top, *args),
                cwd=self.top,
                env=_git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            raise FingerprintError(f"cannot run git in {os.fsdecode(self.top)}: {error}") from None

    def results(self) -> tuple[bytes, bytes]:
        """(tracked paths, ignored untracked paths), NUL-separated; FingerprintError on failure."""
        outputs = [self._finish(process) for process in self.processes]
        return outputs[0], outputs[1]

    def _finish(self, process: subprocess.Popen[bytes]) -> bytes:
        arguments: list[bytes] = list(process.args)  # type: ignore[arg-type]  # we built it
        command = " ".join(os.fsdecode(arg) for arg in arguments[7:])
        try:
            out, err = process.communicate(timeout=self.limits.remaining())
        except subprocess.TimeoutExpired:
            raise FingerprintError(
                f"git {command} in {os.fsdecode(self.top)} did not finish in time"
            ) from None
        if process.returncode != 0:
            reason = err.decode(errors="replace").strip().splitlines()
            raise FingerprintError(
                f"git {command} failed in {os.fsdecode(self.top)} (exit {process.returncode}): "
                + ("; ".join(reason[:3]) if reason else "no message")
            )
        return out


class _Walker:
    """Collects one ``path NUL description`` record per counted entry, then one digest.

    Regular files are queued and hashed in one tight loop at the end: per-file Python
    overhead is most of the cost on a tree of small files."""

    def __init__(self, limits: Limits, cache: HashCache | None = None) -> None:
        self.limits = limits
        self.cache = cache
        self.records: list[bytes] = []
        self.regular: list[tuple[bytes, bytes]] = []  # (relative, absolute) of regular files
        self.active: set[bytes] = set()  # real paths of the roots being walked (loops)
        # What the walk could not see into (a link looping back, an unreadable folder): a
        # fingerprint that must cover everything a run reads cannot stand on it.
        self.unseen: list[bytes] = []

    def digest(self) -> str:
        self._count()
        if self.cache is None:
            self.records.extend(_hash_files(self.regular, self.limits))
        else:
            self.records.extend(self.cache.hash_files(self.regular, self.limits))
        self.regular = []
        self.records.sort()
        return hashlib.sha256(b"\0".join(self.records)).hexdigest()

    def _add(self, relative: bytes, description: bytes) -> None:
        self.records.append(relative + b"\0" + description)
        self._count()

    def _count(self) -> None:
        if len(self.records) + len(self.regular) > MAX_ENTRIES:
            raise FingerprintError(
                f"more than {MAX_ENTRIES:,} files to fingerprint; a partial fingerprint would "
                "miss changes. Ignore build outputs in .gitignore, or remove what a symbolic "
                "link pulls in"
            )

    # -- walks -----------------------------------------------------------------------

    def repository(self, top: bytes, prefix: bytes, nested: bool) -> None:
        """A git work tree: everything but what its ``.gitignore`` files exclude."""
        try:
            with _Git(top, self.limits) as git:
                if self.cache is not None:
                    self.cache.check(self.limits)  # while git lists the tree
                tracked, ignored_listing = git.results()
        except FingerprintError:
            if not nested:
                raise
            # A nested .git that git rejects: walk it all, .git included, since the outer
            # repository's git skips every path named .git.
            self._add(prefix, b"dir:no-repository")
            self.plain(top, prefix, _VOLATILE)
            return
        # The tracked paths count as a whole: untracking a file that an ignore rule matches
        # must not hide it.
        self._add(prefix, b"repository:" + hashlib.sha256(tracked).hexdigest().encode())
        self._walk(top, prefix, _VOLATILE, set(ignored_listing.split(b"\0")))

    def plain(
        self,
        directory: bytes,
        prefix: bytes,
        skip: frozenset[bytes],
        pruned: frozenset[bytes] = frozenset(),
    ) -> None:
        """Every entry under ``directory`` except the directory names in ``skip`` (at any
        depth) and the directories at the relative paths in ``pruned``."""
        self._walk(directory, prefix, skip, None, pruned)

    def _walk(
        self,
        root: bytes,
        prefix: bytes,
        skip: frozenset[bytes],
        ignored: set[bytes] | None,
        pruned: frozenset[bytes] = frozenset(),
    ) -> None:
        """Describe every entry under ``root``; ``ignored`` (a repository's git listing of
        ignored paths relative to ``root``, directories with a trailing slash) is pruned and
        nested repositories get their own walk."""
        self.active.add(root)
        pending = [(root, b"")]  # (absolute directory, its path inside root with a slash)
        try:
            while pending:
                directory, inside = pending.pop()
                entries = self._list(directory, prefix + inside)
                if entries is None:
                    continue
                if ignored is not None and inside and any(e.name == b".git" for e in entries):
                    self.repository(directory, prefix + inside, nested=True)
                    continue
                regular = self.regular
                for entry in entries:
                    name = entry.name
                    inner = inside + name
                    if ignored:
                        if name == b".git" and not inside:
                            continue  # the repository's own metadata (a directory or gitfile)
                        if (inner in ignored and name != b".gitignore") or inner + b"/" in ignored:
                            continue
                    elif ignored is not None and name == b".git" and not inside:
                        continue
                    try:  # the type comes with the directory listing (d_type): no system call
                        is_file = entry.is_file(follow_symlinks=False)
                    except OSError:
                        is_file = False  # _entry records why
                    if is_file:  # the common case, inline
                        regular.append((prefix + inner, entry.path))
                    elif _is_dir(entry):
                        if name not in skip and inner not in pruned:
                            pending.append((entry.path, inner + b"/"))
                    else:
                        self._entry(entry, prefix + inner)
                self._count()
        finally:
            self.active.discard(root)

    def _list(self, directory: bytes, relative_dir: bytes) -> list[os.DirEntry[bytes]] | None:
        try:
            with os.scandir(directory) as listing:
                return list(listing)
        except OSError as error:
            self._add(relative_dir, b"dir-unreadable:" + errno_name(error))
            self.unseen.append(relative_dir)
            return None

    # -- one entry --------------------------------------------------------------------

    def _entry(self, entry: os.DirEntry[bytes], relative: bytes) -> None:
        try:
            # The type comes with the directory listing (d_type): no system call.
            if entry.is_file(follow_symlinks=False):
                self.regular.append((relative, entry.path))
                if len(self.regular) & 0xFFF == 0:
                    self._count()
            elif entry.is_symlink():
                self._add(relative, self._link(entry.path, relative))
            else:
                self._add(relative, special(entry.stat(follow_symlinks=False).st_mode))
        except OSError as error:
            self._add(relative, b"unreadable:" + errno_name(error))

    def _link(self, path: bytes, relative: bytes) -> bytes:
        """The link text, plus the content it leads to wherever that is."""
        text = os.readlink(path)
        head = b"link:" + hashlib.sha256(text).hexdigest().encode() + b"->"
        try:
            target = os.stat(path)
        except OSError as error:
            return head + errno_name(error)  # ENOENT: dangling; ELOOP: a loop of links
        if stat.S_ISREG(target.st_mode):
            return head + _hash_files([(b"", path)], self.limits, 0)[0][1:]
        if not stat.S_ISDIR(target.st_mode):
            return head + special(target.st_mode)
        real = os.path.realpath(path)
        above = os.path.join(real, b"")
        if any(root == real or root.startswith(above) for root in self.active):
            self.unseen.append(relative)
            return head + b"loop"  # the directory being walked, or one above it
        self.plain(real, relative + b"/", _VOLATILE | {b".git"})
        return head + b"dir"


def _is_dir(entry: os.DirEntry[bytes]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _hash_files(
    files: list[tuple[bytes, bytes]], limits: Limits, nofollow: int = NOFOLLOW
) -> list[bytes]:
    """``relative NUL file[x]:<sha256>`` per file (``x``: executable); see file_hash.hash_one."""
    records = []
    for number, (relative, path) in enumerate(files):
        if number & 0xFF == 0 and limits.deadline is not None:
            limits.remaining()
        records.append(relative + b"\0" + hash_one(path, limits, nofollow)[0])
    return records
