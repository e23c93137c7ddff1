"""Reading a spec file: bounded in size, regular files only.

The spec is input the agent under verification can write: a FIFO would block the run until
a writer comes, ``/dev/zero`` or a multi-gigabyte file would fill its memory.
"""

from __future__ import annotations

from pathlib import Path

from pytest_acceptance.model import SpecError
from pytest_acceptance.tree.hostile import TooLarge, read_regular

# Far above any real spec (5,000 criteria take about 1 MiB); parsing time grows with size.
MAX_SPEC_BYTES = 16 << 20


def read_spec_bytes(path: Path) -> bytes:
    """The bytes of the spec at ``path``, or a SpecError at line 1 saying why not."""
    try:
        return read_regular(path, MAX_SPEC_BYTES)
    except TooLarge:
        raise SpecError(
            path,
            1,
            f"the spec is larger than {MAX_SPEC_BYTES >> 20} MiB; split it into several specs "
            "(--acceptance takes a directory or a glob)",
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SpecError(path, 1, f"cannot read the spec: {reason}; check the path") from None
