"""The one audited way to touch a file an agent may have planted or may swap under us.

Every file the agent can write is hostile input: a FIFO blocks whoever opens it for reading
until a writer comes, ``/dev/zero`` or a sparse terabyte file fills memory, a symbolic link
sends a reader elsewhere, and the file can be replaced between a check and a use. So:

- ``open_regular`` opens without blocking (``O_NONBLOCK``: a FIFO swapped in after a type
  check cannot block), never makes a terminal ours (``O_NOCTTY``), and checks the type on the
  open descriptor (``fstat``), not on the path; ``follow=False`` refuses a symbolic link;
- ``read_regular`` reads at most ``limit`` bytes and says when there were more;
- ``file_digest`` hashes a regular file of any size in bounded memory;
- ``write_atomic`` writes through a temporary name unique to the process and thread, then
  renames: a reader never sees half a file, concurrent writers never tear one.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import _thread  # threading's own get_ident, without the threading module
import contextlib
import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Union

    PathLike = Union[str, bytes, "os.PathLike[str]"]

OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CHUNK = 1 << 20


class NotRegularFile(OSError):
    """The path is there but is no regular file (a FIFO, a device, a socket, a directory)."""

    def __init__(self, path: PathLike) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fsdecode(path))


class TooLarge(OSError):
    """The file holds more than the reader's bound."""

    def __init__(self, path: PathLike, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", os.fsdecode(path))
        self.limit = limit


def open_regular(path: PathLike, *, follow: bool = True) -> int:
    """A read-only descriptor on a regular file; OSError (``NotRegularFile`` for any other
    kind) otherwise. The caller closes it."""
    descriptor = os.open(path, OPEN_FLAGS | (0 if follow else NOFOLLOW))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotRegularFile(path)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def read_regular(path: PathLike, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; ``TooLarge`` past it, other
    OSErrors as they come (missing, not regular, unreadable)."""
    descriptor = open_regular(path, follow=follow)
    try:
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(CHUNK, remaining))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(descriptor)
    if remaining <= 0:
        raise TooLarge(path, limit)
    return b"".join(chunks)


def read_regular_or_none(path: PathLike, limit: int, *, follow: bool = True) -> bytes | None:
    """``read_regular``, or None for a file that is missing, no regular file, unreadable or
    too large: for callers to which all of those mean "not usable"."""
    try:
        return read_regular(path, limit, follow=follow)
    except OSError:
        return None


def file_digest(path: PathLike, *, follow: bool = True) -> str | None:
    """sha256 of a regular file's content, read in bounded chunks; None when it is missing,
    no regular file or unreadable."""
    import hashlib  # here: the hooks that only read files through this module never load it

    try:
        descriptor = open_regular(path, follow=follow)
    except OSError:
        return None
    try:
        digest = hashlib.sha256()
        while True:
            chunk = os.read(descriptor, CHUNK)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)


def write_atomic(path: PathLike, data: str | bytes, *, mode: int = 0o644) -> None:
    """Write ``path`` through ``.<name>.<pid>-<thread>.tmp`` beside it, then rename over it.
    OSError when it cannot; the temporary file never stays behind."""
    folder, name = os.path.split(os.fsdecode(path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}-{_thread.get_ident()}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | NOFOLLOW
        handle = os.open(temporary, flags, mode)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(handle, view) :]
        finally:
            os.close(handle)
        os.replace(temporary, os.fsdecode(path))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
