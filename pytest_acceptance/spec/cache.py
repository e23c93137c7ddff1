"""Parsed specs kept across runs, keyed by their bytes — as Python keeps bytecode.

Parsing 5,000 criteria costs ~0.6 s of CPU; loading them back ~0.03 s. The key covers the
file's bytes, its path, the parser's own code (the built-in formats included), the formats
of the run and the forced one, and the installed markdown-it-py and PyYAML, so a stale entry
can never be read. Errors are never stored. A hit does not even import
the parser (and its libraries). Entries are written atomically, so xdist workers may race.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import pickle
import sys
from pathlib import Path

from pytest_acceptance.model import Spec, SpecError
from pytest_acceptance.spec.file import read_spec_bytes
from pytest_acceptance.spec.formats import FormatChoice, active
from pytest_acceptance.tree.hostile import write_atomic

# Relative to the package: everything that shapes a parsed ``Spec``, the model included (a
# stored entry of another model's classes would unpickle into the wrong fields).
_PARSER_SOURCES = ("model.py", "spec/*.py", "spec/formats/*.py")
_LIBRARIES = ("markdown_it", "yaml")


def parse_spec_cached(
    path: Path, cache_dir: Path | None, choice: FormatChoice | None = None
) -> Spec:
    """``parse.parse_spec``, reusing the ``Spec`` stored for the same bytes at the same path
    read with the same formats (``choice``: the run's, by default the active ones). Without a
    cache directory (a read-only project, the gate's run), it only parses."""
    choice = choice if choice is not None else active()
    if cache_dir is None:
        return _parse(path, choice)
    try:
        data = read_spec_bytes(Path(path))
        identity = _parser_identity() + choice.key
    except (OSError, SpecError):  # unreadable or too big (parse says so), or no sources
        return _parse(path, choice)
    path_key = hashlib.sha256(os.fsencode(str(path))).hexdigest()[:16]
    content_key = hashlib.sha256(identity + data).hexdigest()[:32]
    entry = Path(cache_dir) / f"{path_key}-{content_key}.pickle"
    stored = _load(entry)
    if stored is not None and stored.path == path:
        return stored
    spec = _parse(path, choice, data)
    with contextlib.suppress(OSError):
        _store(entry, pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
    return spec


def _parse(path: Path, choice: FormatChoice, data: bytes | None = None) -> Spec:
    from pytest_acceptance.spec import load as parse  # imported on a miss only: markdown-it, PyYAML

    if data is None:
        return parse.parse_spec(path, choice.formats, choice.forced)
    return parse.parse_spec_text(parse.decode(data, path), path, choice.formats, choice.forced)


@functools.cache
def _parser_identity() -> bytes:
    """Changes whenever the code or the libraries that shape a parsed ``Spec`` change."""
    digest = hashlib.sha256(sys.version.encode())
    for source in parser_sources():
        digest.update(source.read_bytes())
    for library in _LIBRARIES:  # where it is installed and when: no import needed
        spec = importlib.util.find_spec(library)
        origin = Path(spec.origin) if spec and spec.origin else None
        stamp = origin.stat().st_mtime_ns if origin else 0
        digest.update(f"|{library}|{origin}|{stamp}".encode())
    return digest.digest()


def parser_sources() -> list[Path]:
    """The source files a stored entry depends on."""
    package = Path(__file__).parents[1]
    return [source for pattern in _PARSER_SOURCES for source in sorted(package.glob(pattern))]


def _load(entry: Path) -> Spec | None:
    try:
        spec = pickle.loads(entry.read_bytes())
    except Exception:  # a missing, torn or foreign entry only means: parse again
        return None
    return spec if isinstance(spec, Spec) else None


def _store(entry: Path, payload: bytes) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    for older in entry.parent.glob(entry.name.split("-")[0] + "-*.pickle"):
        with contextlib.suppress(OSError):
            older.unlink()
    write_atomic(entry, payload)
