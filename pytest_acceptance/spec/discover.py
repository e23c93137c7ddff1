"""Which files ``--acceptance`` and ini ``acceptance_specs`` name: files, directories, globs.

A file named directly is a spec, whatever it contains (a bad one is a collection error),
and so is every file a glob whose last part has no wildcard matches (``specs/**/spec.md``).
A directory, or a glob like ``docs/*.md``, collects the markdown files (``*.md``,
``*.markdown``) and Gherkin feature files (``*.feature``) below it that a spec format
recognises (``formats.RECOGNISED``): a README
or a design note is skipped, a spec-kit ``spec.md`` or a reference spec with a broken
block is collected and reports its errors; the run's header names the files it skipped.
Hidden directories, ``node_modules`` and pytest's ``norecursedirs`` are not walked.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pytest_acceptance.model import SpecError
from pytest_acceptance.spec.file import read_spec_bytes
from pytest_acceptance.spec.formats import RECOGNISED, SpecFormat, detect

MARKDOWN_SUFFIXES = (".md", ".markdown")
# What a directory or glob collects: markdown, and Gherkin feature files.
SPEC_SUFFIXES = (*MARKDOWN_SUFFIXES, ".feature")
_GLOB_CHARS = frozenset("*?[")
_READ_LIMIT = 4 * 1024 * 1024  # a larger markdown file is read only when named directly


class DiscoveryError(Exception):
    """A given path or pattern that names no spec: a usage error."""


def find_specs(
    given: Iterable[str],
    base: Path,
    formats: Sequence[SpecFormat],
    skip: Sequence[str] = (),
    skipped: list[Path] | None = None,
) -> list[Path]:
    """The spec files ``given`` names (resolved from ``base``), in order, without repeats;
    the markdown files a directory or glob held but no format recognised go to ``skipped``."""
    found: dict[Path, None] = {}
    for entry in given:
        for path in _expand(entry, base, formats, skip, skipped if skipped is not None else []):
            found.setdefault(path, None)
    return list(found)


def _expand(
    entry: str,
    base: Path,
    formats: Sequence[SpecFormat],
    skip: Sequence[str],
    skipped: list[Path],
) -> list[Path]:
    shown = entry if entry.isprintable() else repr(entry)  # one line in the error, always
    if "\0" in entry:
        raise DiscoveryError(f"{shown}: a path cannot hold a NUL character")
    if _GLOB_CHARS & set(entry):
        matches = [real_path(m) for m in sorted(glob.glob(str(base / entry), recursive=True))]
        if not _GLOB_CHARS & set(Path(entry).name):  # "specs/**/spec.md": named files
            named = [m for m in matches if m.is_file()]
            if named:
                return named
        specs = _recognised([p for m in matches for p in _walk(m, skip)], formats, skipped)
        if not specs:
            raise DiscoveryError(f"{shown}: matches no spec a format recognises")
        return specs
    path = real_path(base / entry)
    if path.is_file():
        return [path]
    if path.is_dir():
        specs = _recognised(list(_walk(path, skip)), formats, skipped)
        if not specs:
            raise DiscoveryError(f"{shown}: no markdown file below it is a spec")
        return specs
    if path.exists():
        raise DiscoveryError(f"{shown}: not a regular file or a directory")
    if path.is_symlink():
        raise DiscoveryError(f"{shown}: a symbolic link that leads nowhere (or in a loop)")
    raise DiscoveryError(f"{shown}: no such file or directory")


def real_path(path: str | os.PathLike[str]) -> Path:
    """The path with every symbolic link resolved, as far as they lead: a link loop stays
    a path (``Path.resolve`` raises RuntimeError on one before Python 3.13)."""
    return Path(os.path.realpath(path))


def _recognised(
    paths: list[Path], formats: Sequence[SpecFormat], skipped: list[Path]
) -> list[Path]:
    specs = [p for p in paths if is_spec(p, formats)]
    skipped += [p for p in paths if p not in specs]
    return specs


def _walk(path: Path, skip: Sequence[str]) -> Iterator[Path]:
    if path.is_file():
        if path.suffix.lower() in SPEC_SUFFIXES:
            yield path
        return
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _skipped(d, skip))
        for name in sorted(files):
            if name.lower().endswith(SPEC_SUFFIXES):
                yield Path(root, name)


def _skipped(directory: str, skip: Sequence[str]) -> bool:
    if directory.startswith(".") or directory == "node_modules":
        return True
    return any(fnmatch.fnmatch(directory, pattern) for pattern in skip)


def is_spec(path: Path, formats: Sequence[SpecFormat]) -> bool:
    """Does a format recognise ``path``? Unreadable or huge files are not specs here."""
    try:
        if path.stat().st_size > _READ_LIMIT:
            return False
        text = read_spec_bytes(path).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError, SpecError):  # a FIFO is never opened blocking
        return False
    return detect(text, formats)[1] >= RECOGNISED
