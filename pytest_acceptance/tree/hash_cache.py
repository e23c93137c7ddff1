"""The Claude Code gate's file-hash cache for :func:`fingerprint.tree_fingerprint`.

Standard library only and Python 3.8 compatible, like the fingerprint (the hooks import both).

A file's hash is reused only while its ``lstat`` shows the same device, inode, size *and
ctime*. No process can set ctime (short of root setting the system clock): any write,
``touch``, ``chmod`` or rename-over gives the inode a new one. Entries whose ctime is less
than ``RACY_SECONDS`` old when hashed are never stored, so two writes within one timestamp
tick cannot share a key (git's "racily clean" problem). What a cache cannot see is a write
through a shared ``mmap`` to a page that is already writable, which changes content without
a new ctime. That needs a process still running while the gate hashes, and such a process
can as well rewrite the file after the session ends: both are outside what a stop-time gate
can stop (the README's threat model: sandbox the agent's processes).

The cache file is the caller's to protect: the gate keeps it beside its pinned flow, in the
plugin's state, never in the project. A missing, unreadable or garbled cache file is an
empty cache; a cache that cannot be saved is simply not saved: the fingerprint never
depends on either.

Checking the stat keys is most of a warm fingerprint's cost: one ``lstat`` per file, about
2 us each on a small VM, half kernel, half CPython building the ``stat_result``. ``git
status`` spreads the same calls over threads in C; Python threads would take turns on the
GIL at every call (measured: no gain). So on a large cache a forked helper process checks a
share of the keys while this process checks the rest, waits for git and walks the tree
(:class:`_StatHelper`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from array import array
from typing import TYPE_CHECKING, NoReturn

from pytest_acceptance.tree.file_hash import FingerprintError, Limits, hash_one, stat_key
from pytest_acceptance.tree.hostile import NOFOLLOW, read_regular, write_atomic

if TYPE_CHECKING:
    # (absolute path, (stat key, description)) of cached files, in the cache's order.
    Items = list[tuple[bytes, tuple[bytes, bytes]]]

# A file changed less than this long before it is hashed is never cached: a second write in
# the same timestamp tick (coarse clocks, 2 s on some file systems) would keep its ctime.
RACY_SECONDS = 3.0


class HashCache:
    """File hashes by path and stat data (see the module doc), kept in one file."""

    MAGIC = b"pytest-acceptance hash cache 2\n"
    MAX_FILE_BYTES = 512 << 20
    # Below this many entries a helper process costs more than it saves.
    HELPER_AT = 2000
    # The share of the keys this process checks itself: it also waits for git and walks the
    # tree meanwhile (measured on a 10,000-file tree, 2 cores).
    OWN_SHARE = 0.4

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fsencode(path)
        self._entries: dict[bytes, tuple[bytes, bytes]] | None = None
        self.kept: dict[bytes, tuple[bytes, bytes]] = {}  # what this fingerprint saw
        self.unchanged: dict[bytes, tuple[int, tuple[bytes, bytes]]] | None = None
        self.helper: _StatHelper | None = None
        self.hits = 0
        self.helped = 0  # entries whose key a helper process checked

    @property
    def entries(self) -> dict[bytes, tuple[bytes, bytes]]:
        """Absolute path -> (stat key, description), read from the file on first use."""
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def begin(self) -> None:
        """Forget what an earlier, failed fingerprint saw: it is no part of this one."""
        self.release()
        self.kept.clear()
        self.unchanged = None

    def release(self) -> None:
        """Stop and reap a helper still running (the fingerprint failed before it was heard)."""
        if self.helper is not None:
            self.helper.stop()
            self.helper = None

    def check(self, limits: Limits) -> None:
        """Which cached files still show their stat key, one ``lstat`` each. The walker calls
        it while git lists the tree; a helper checks a share of the keys until
        :meth:`hash_files` needs them. A file changed after this check and before the digest
        is a change during the fingerprint, which no fingerprint of a live tree can order
        (the gate compares two of them)."""
        if self.unchanged is not None:
            return
        items = own = list(self.entries.items())
        if len(items) >= self.HELPER_AT and _cores() > 1:
            cut = int(len(items) * self.OWN_SHARE)
            self.helper = _StatHelper.start(items[cut:], limits)
            if self.helper is not None:
                own = items[:cut]
        self.unchanged = _matching(own, _sizes(own, limits))

    def _join(self, limits: Limits) -> None:
        """The helper's answer; a helper that failed leaves its share unchecked (read again)."""
        helper, self.helper = self.helper, None
        if helper is None:
            return
        try:
            sizes = helper.sizes(limits)
        finally:
            helper.stop()
        if sizes is not None and self.unchanged is not None:
            self.unchanged.update(_matching(helper.items, sizes))
            self.helped += len(sizes)

    def _load(self) -> dict[bytes, tuple[bytes, bytes]]:
        try:
            data = read_regular(self.path, self.MAX_FILE_BYTES, follow=False)
        except OSError:
            return {}
        if not data.startswith(self.MAGIC):
            return {}
        fields = data[len(self.MAGIC) :].split(b"\0")
        if len(fields) % 3 != 1 or fields[-1]:
            return {}
        del fields[-1]
        triples = iter(fields)
        return dict(zip(triples, zip(triples, triples)))

    def hash_files(self, files: list[tuple[bytes, bytes]], limits: Limits) -> list[bytes]:
        """``relative NUL description`` per file, reading only files whose stat data changed."""
        self.check(limits)
        self._join(limits)
        records = []
        trusted_before = time.time_ns() - int(RACY_SECONDS * 1e9)
        kept, unchanged = self.kept, self.unchanged or {}
        unread = 0  # bytes of reused files: the same caps apply with or without a cache
        hits = 0
        for number, (relative, path) in enumerate(files):
            if number & 0xFF == 0:
                limits.spend(unread)
                unread = 0
                if limits.deadline is not None:
                    limits.remaining()
            hit = unchanged.get(path)
            if hit is not None:
                unread += hit[0]
                hits += 1
                known = kept[path] = hit[1]
                records.append(relative + b"\0" + known[1])
                continue
            description, info = hash_one(path, limits, NOFOLLOW)
            if info is not None and info.st_ctime_ns < trusted_before:
                kept[path] = (stat_key(info), description)
            records.append(relative + b"\0" + description)
        limits.spend(unread)
        self.hits += hits
        return records

    def save(self) -> None:
        """Keep exactly the entries of this fingerprint (a new file only when they changed)."""
        self.unchanged = None  # the next fingerprint checks the stat keys again
        if self.kept == self.entries:
            self.kept = {}
            return
        body = b"".join(b"%s\0%s\0%s\0" % (p, k, d) for p, (k, d) in self.kept.items())
        folder = os.path.dirname(self.path) or b"."
        try:  # a cache that cannot be written costs time, never correctness
            os.makedirs(folder, exist_ok=True)
            write_atomic(self.path, self.MAGIC + body, mode=0o600)
        except OSError:
            pass
        self._entries, self.kept = self.kept, {}


def _sizes(items: Items, limits: Limits) -> array[int]:
    """Per entry, its file's size while the stat key still matches, else -1."""
    sizes = array("q")
    append = sizes.append
    lstat, key_of = os.lstat, stat_key
    for number, (path, (key, _)) in enumerate(items):
        if number & 0xFF == 0 and limits.deadline is not None:
            limits.remaining()
        try:
            info = lstat(path)
        except OSError:
            append(-1)
            continue
        append(info.st_size if key_of(info) == key else -1)
    return sizes


def _matching(items: Items, sizes: array[int]) -> dict[bytes, tuple[int, tuple[bytes, bytes]]]:
    """The entries whose key matched (size >= 0), with their file's size."""
    return {path: (size, entry) for (path, entry), size in zip(items, sizes) if size >= 0}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _StatHelper:
    """A forked child checking a share of the stat keys; it answers with one size per entry
    (-1: changed or gone) through a pipe only the two processes hold.

    Anything amiss leaves its share unchecked, so those files are read again, which costs
    time, never correctness: no ``fork`` on this platform, another thread running (a fork
    would copy its held locks), a child that died, or answered short."""

    def __init__(self, pid: int, reader: int, items: Items):
        self.pid = pid
        self.reader = reader
        self.items = items

    @classmethod
    def start(cls, items: Items, limits: Limits) -> _StatHelper | None:
        if not hasattr(os, "fork") or threading.active_count() > 1:
            return None
        try:
            reader, writer = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return None
        if pid == 0:
            _serve(items, limits, writer)
        os.close(writer)
        return cls(pid, reader, items)

    def sizes(self, limits: Limits) -> array[int] | None:
        """The child's answer, or None when it has none to give; FingerprintError past the
        fingerprint's deadline."""
        poller = select.poll()
        poller.register(self.reader, select.POLLIN)
        chunks = []
        while True:
            if not poller.poll(limits.remaining() * 1000):
                limits.remaining()  # past the deadline: raises
                raise FingerprintError("the stat helper did not answer in time")
            chunk = os.read(self.reader, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        answer = array("q")
        data = b"".join(chunks)
        if status != 0 or len(data) != answer.itemsize * len(self.items):
            return None
        answer.frombytes(data)
        return answer

    def stop(self) -> None:
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self.pid = 0
        if self.reader >= 0:
            os.close(self.reader)
            self.reader = -1


def _serve(items: Items, limits: Limits, writer: int) -> NoReturn:
    """The helper's whole life: it never returns into the caller's code, whatever happens."""
    code = 1
    try:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
            signal.signal(number, signal.SIG_DFL)  # never the parent's handlers
        answer = memoryview(_sizes(items, limits).tobytes())
        while answer:
            answer = answer[os.write(writer, answer) :]
        code = 0
    finally:
        os._exit(code)
