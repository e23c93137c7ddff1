"""Hashing one file as the fingerprint counts it, within the limits of one fingerprint.

Shared by ``fingerprint`` (the walk) and ``hash_cache`` (the cache of these hashes). Files are
opened with ``hostile``'s flags: never blocking on a FIFO, never following a link that the
listing called a regular file. Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time

from pytest_acceptance.tree.hostile import CHUNK, OPEN_FLAGS

MAX_BYTES = 4 << 30
GIT_TIMEOUT = 60.0


class FingerprintError(Exception):
    """The tree cannot be fingerprinted; callers must treat this as "changed", never "clean"."""


class Limits:
    """What one fingerprint may still spend: bytes read and time."""

    def __init__(self, timeout: float | None) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.bytes_left = MAX_BYTES

    def remaining(self) -> float:
        if self.deadline is None:
            return GIT_TIMEOUT
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise FingerprintError("the fingerprint did not finish within its time limit")
        return min(left, GIT_TIMEOUT)

    def spend(self, size: int) -> None:
        self.bytes_left -= size
        if self.bytes_left < 0:
            raise FingerprintError(
                f"more than {MAX_BYTES:,} bytes to read; a partial fingerprint would miss "
                "changes. Ignore large data in .gitignore, or remove what a symbolic link "
                "pulls in"
            )


def hash_one(path: bytes, limits: Limits, nofollow: int) -> tuple[bytes, os.stat_result | None]:
    """(description, the open file's stat data when it was read as a regular file). Opened
    without following a link (the listing said regular file) and without blocking; a file
    that is no longer regular once open is described by its type, never read."""
    try:
        handle = os.open(path, OPEN_FLAGS | nofollow)
    except OSError as error:
        return b"unreadable:" + errno_name(error), None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return special(info.st_mode), None
        limits.spend(info.st_size)  # a sparse terabyte fails here, before any read
        # One read for a small file: asking one byte more than its size shows the end.
        wanted = min(info.st_size + 1, CHUNK)
        chunk = os.read(handle, wanted)
        content = hashlib.sha256(chunk)
        total = len(chunk)
        while len(chunk) == wanted:  # a large file, or one that grew since fstat
            chunk = os.read(handle, CHUNK)
            content.update(chunk)
            wanted = CHUNK
            total += len(chunk)
            if total > info.st_size:
                limits.spend(len(chunk))
            if limits.deadline is not None:
                limits.remaining()
    except OSError as error:
        return b"unreadable:" + errno_name(error), None
    finally:
        os.close(handle)
    kind = b"filex:" if info.st_mode & 0o111 else b"file:"
    return kind + content.hexdigest().encode(), info


def stat_key(info: os.stat_result) -> bytes:
    """Which file, and when it last changed: every write, ``chmod``, ``touch -d`` or rename
    onto it sets a new ctime, so mode and mtime add nothing (and cost a format each)."""
    return b"%d,%d,%d,%d" % (info.st_dev, info.st_ino, info.st_size, info.st_ctime_ns)


def special(mode: int) -> bytes:
    """Never opened: a FIFO could block, a device could do anything."""
    for test, name in (
        (stat.S_ISFIFO, b"fifo"),
        (stat.S_ISSOCK, b"socket"),
        (stat.S_ISCHR, b"char-device"),
        (stat.S_ISBLK, b"block-device"),
        (stat.S_ISDIR, b"dir"),
    ):
        if test(mode):
            return b"special:" + name
    return b"special:" + str(stat.S_IFMT(mode)).encode()


def errno_name(error: OSError) -> bytes:
    return errno.errorcode.get(error.errno or 0, str(error.errno)).encode()
