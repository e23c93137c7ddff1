"""Markdown spec -> ``Spec``: reading the file and handing its text to its format.

``parse_spec_text`` rejects what is no text at all, then hands the text to the format that
recognises it (``spec.formats``). Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_acceptance.model import Location, Spec, SpecError
from pytest_acceptance.spec.file import read_spec_bytes
from pytest_acceptance.spec.formats import SpecFormat, parse_text
from pytest_acceptance.spec.formats.reference import CRITERION_SHAPE


def parse_spec(
    path: Path, formats: Sequence[SpecFormat] | None = None, forced: str | None = None
) -> Spec:
    """Read ``path`` (any extension) as UTF-8 markdown and parse it."""
    data = read_spec_bytes(Path(path))
    return parse_spec_text(decode(data, path), path, formats, forced)


def parse_spec_as(
    path: Path, origin: Path, formats: Sequence[SpecFormat] | None = None, forced: str | None = None
) -> Spec:
    """The spec in ``path`` read as the spec at ``origin`` it is a copy of: every decision a
    format takes from where the spec lies (an OpenSpec capability is its folder's name, a
    task list belongs to a change by its folders) is the origin's, and so are the locations
    of its criteria and of its errors (``relocated`` moves them back onto the copy)."""
    data = read_spec_bytes(Path(path))
    return parse_spec_text(decode(data, origin), origin, formats, forced)


def relocated(spec: Spec, origin: Path, path: Path) -> Spec:
    """``spec``, read as ``origin``, with what lies there (its criteria, its requirements)
    located in ``path`` instead, on the same lines."""

    def moved(location: Location) -> Location:
        return Location(path, location.line) if location.path == origin else location

    criteria = tuple(dataclasses.replace(c, location=moved(c.location)) for c in spec.criteria)
    requirements = tuple(
        dataclasses.replace(r, location=moved(r.location)) for r in spec.requirements
    )
    return dataclasses.replace(spec, path=path, criteria=criteria, requirements=requirements)


def parse_spec_text(
    text: str, path: Path, formats: Sequence[SpecFormat] | None = None, forced: str | None = None
) -> Spec:
    """Parse spec ``text`` in the format that recognises it (or ``forced``, a format name);
    ``formats`` defaults to the built-in ones. ``path`` is only used in locations and
    messages."""
    text = text.removeprefix("\ufeff")
    _reject_unusable(text, path)
    with _collector_paused():
        return parse_text(text, path, formats, forced)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsing makes many small objects that all live on (tokens, blocks, criteria): the
    cyclic garbage collector's passes over them while a large spec is parsed free nothing
    and cost a sizeable share of the parse. It runs again as usual afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode(data: bytes, path: Path) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(path, 1, "the spec is UTF-16 encoded: save it as UTF-8")
    bad = data.find(b"\x00")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        line = data.count(b"\n", 0, bad) + 1
        raise SpecError(
            path, line, f"not a text file (byte {bad} is not UTF-8 text): a spec is UTF-8 markdown"
        )
    return text


def _reject_unusable(text: str, path: Path) -> None:
    if not text.strip():
        raise SpecError(
            path, 1, f"the spec is empty: add acceptance criteria, each {CRITERION_SHAPE}"
        )
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise SpecError(path, line, "not a text file (NUL character): a spec is UTF-8 markdown")
