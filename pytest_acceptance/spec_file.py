"""Reading a spec file: bounded in size, regular files only.

The spec is input the agent under verification can write: a FIFO would block the run until
a writer comes, ``/dev/zero`` or a multi-gigabyte file would fill its memory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pytest_acceptance.model import SpecError

# Far above any real spec (5,000 criteria take about 1 MiB); parsing time grows with size.
MAX_SPEC_BYTES = 16 << 20


def read_spec_bytes(path: Path) -> bytes:
    """The bytes of the spec at ``path``, or a SpecError at line 1 saying why not."""
    try:
        data = _read_bounded(Path(path))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SpecError(path, 1, f"cannot read the spec: {reason}; check the path") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(
            path,
            1,
            f"the spec is larger than {MAX_SPEC_BYTES >> 20} MiB; split it into several specs "
            "(--acceptance takes a directory or a glob)",
        )
    return data


def _read_bounded(path: Path) -> bytes:
    """At most MAX_SPEC_BYTES + 1 bytes of a regular file; never blocks on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_SPEC_BYTES + 1)
    finally:
        os.close(fd)
