"""Evidence fragments: one JSON file per verified criterion, written where it ran.

Layout (under the git-ignored ``<rootdir>/.acceptance/``)::

    specs/<spec-stem>-<8 hex of sha256(absolute spec path)>/
        fragments/<NNNN>-<ID>.json   # NNNN: the criterion's 0-based place in the spec
        fragments/<NNNN>-<ID>.done   # exists once the fragment is complete
        report.json, report.md       # assembled by report.py on the controller

A fragment is written with temp file + rename, so a reader (or an xdist worker writing the
same name) never sees half a file. ``load_fragment`` validates it against the schema below
and raises ``FragmentError`` naming the file and the field; assembly treats that as a hard
error, never as a pass.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Method, Priority, Result, Status
from pytest_acceptance.store import OUTPUT_DIR, output_dir
from pytest_acceptance.text import display_path
from pytest_acceptance.tree.hostile import write_atomic

SCHEMA = "pytest-acceptance/fragment"
SCHEMA_VERSION = 1
OUTPUT_LIMIT = 4000  # characters of output kept: the tail, where failures show
TEXT_LIMIT = 2000  # message, and each issue field
ISSUE_LIMIT = 50
NAME_LIMIT = 100  # bytes of a spec stem or criterion id in a file name

# field -> the JSON type it must have (bool is excluded from int explicitly below)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "schema": str,
    "version": int,
    "spec": str,
    "index": int,
    "id": str,
    "title": str,
    "category": str,
    "method": str,
    "priority": str,
    "line": int,
    "checks": int,
    "status": str,
    "attempts": int,
    "duration": (int, float),
    "message": str,
    "output": str,
    "issues": list,
}
_ENUMS = {
    "method": {m.value for m in Method},
    "priority": {p.value for p in Priority},
    "status": {s.value for s in Status},
}
_ISSUE_FIELDS = ("location", "expected", "actual")
_SIGN_OFF_FIELDS = ("state", "by", "at", "note")


class FragmentError(Exception):
    """A fragment file that cannot be used as evidence."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def __str__(self) -> str:
        return (
            f"evidence fragment {self.path}: {self.problem}; it was not written by this "
            "version of pytest-acceptance or was edited by hand: delete it and run again"
        )


def spec_dir(rootdir: Path, spec_path: Path) -> Path:
    """``.acceptance/specs/<stem>-<hash>``: one directory per spec, stable across runs.
    Pure: ``prepare_dir`` creates it (and the self-ignoring ``.acceptance``)."""
    return rootdir / OUTPUT_DIR / "specs" / _spec_dir_name(spec_path)


@functools.lru_cache(maxsize=64)
def _spec_dir_name(spec_path: Path) -> str:
    """The stem (bounded: the digest of the whole path keeps names apart) and 8 hex."""
    absolute = spec_path.resolve()
    digest = hashlib.sha256(os.fsencode(str(absolute))).hexdigest()[:8]
    return f"{_bounded(absolute.stem, NAME_LIMIT)}-{digest}"


def _bounded(text: str, limit: int) -> str:
    """``text`` when its UTF-8 encoding fits ``limit`` bytes, else a cut that does, ending
    in 8 hex of its sha256: file names stay short and two long texts stay apart."""
    encoded = os.fsencode(text)
    if len(encoded) <= limit:
        return text
    digest = hashlib.sha256(encoded).hexdigest()[:8]
    cut = encoded[: limit - 9].decode("utf-8", errors="ignore")  # never half a character
    return f"{cut}~{digest}"


def prepare_dir(rootdir: Path, spec_path: Path) -> Path:
    """Create the spec's fragments directory; returns it."""
    output_dir(rootdir)  # creates .acceptance with its .gitignore first
    directory = spec_dir(rootdir, spec_path) / "fragments"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def fragment_name(index: int, criterion_id: str) -> str:
    """``0003-AC-4``: zero-padded so names sort in spec order. A long id is cut to
    NAME_LIMIT bytes with a digest of the whole: a file name has at most 255 bytes, and
    the temp file of an atomic write adds ~40 to it."""
    return f"{index:04d}-{_bounded(criterion_id, NAME_LIMIT)}"


def fragment_path(rootdir: Path, spec_path: Path, index: int, criterion_id: str) -> Path:
    return spec_dir(rootdir, spec_path) / "fragments" / f"{fragment_name(index, criterion_id)}.json"


def clear_fragments(rootdir: Path, spec_path: Path) -> None:
    """Forget the fragments of the previous run (reports stay, for the deltas).

    The directory is renamed aside at once and deleted by a detached ``rm -rf``: unlinking
    hundreds of files here, even on a thread, would slow the run down (file creation and
    removal are slow on some file systems, and a thread competes for the GIL). Whatever
    is not removed in time is swept up by the next run."""
    parent = spec_dir(rootdir, spec_path)
    directory = parent / "fragments"
    if directory.is_dir():
        with contextlib.suppress(OSError):
            directory.rename(parent / f"{_STALE}{os.getpid()}-{time.monotonic_ns()}")
    stale = [str(entry) for entry in _entries(parent) if entry.name.startswith(_STALE)]
    if stale:
        _remove_detached(stale)


_STALE = "fragments.stale-"


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except OSError:
        return []


def _remove_detached(directories: list[str]) -> None:
    """``rm -rf`` in the background, detached from us: a shell starts it and exits, so it
    is never our child (no process to wait for, no ResourceWarning, not ours to kill)."""
    try:
        subprocess.run(
            ["sh", "-c", 'rm -rf -- "$@" </dev/null >/dev/null 2>&1 &', "sh", *directories],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
        )
    except OSError:  # no sh here: a thread does it
        for directory in directories:
            threading.Thread(target=shutil.rmtree, args=(directory, True), daemon=True).start()


def build_fragment(
    criterion: Criterion, index: int, result: Result, rootdir: Path
) -> dict[str, Any]:
    """The fragment of one criterion's result (bounded: output tail, texts, issue count)."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "spec": _shown(criterion.location.path, rootdir),
        "index": index,
        "id": criterion.id,
        "title": criterion.title,
        "category": criterion.category,
        "method": criterion.method.value,
        "priority": criterion.priority.value,
        "line": criterion.location.line,
        "checks": len(criterion.checks),
        "status": result.status.value,
        "attempts": result.attempts,
        "duration": round(result.duration, 3),
        "message": _head(result.message, TEXT_LIMIT),
        "output": _tail(result.output, OUTPUT_LIMIT),
        "issues": [
            {name: _head(getattr(issue, name), TEXT_LIMIT) for name in _ISSUE_FIELDS}
            for issue in result.issues[:ISSUE_LIMIT]
        ],
        **_sign_off(result),
        # Agent criteria: what judging cost, and whether the judges disagreed.
        "usage": _usage(result),
        "unstable": bool(result.extra.get("unstable")),
    }


def _sign_off(result: Result) -> dict[str, Any]:
    """A person's sign-off of a manual criterion (optional field ``sign_off``)."""
    facts = result.extra.get("sign_off")
    if not isinstance(facts, dict):
        return {}
    return {"sign_off": {k: _head(str(facts.get(k, "")), TEXT_LIMIT) for k in _SIGN_OFF_FIELDS}}


_USAGE_FIELDS = ("calls", "cost_usd", "input_tokens", "output_tokens", "turns", "duration")


def _usage(result: Result) -> dict[str, Any] | None:
    usage = result.extra.get("usage")
    if not isinstance(usage, dict):
        return None
    kept: dict[str, Any] = {name: usage.get(name, 0) for name in _USAGE_FIELDS}
    kept["cached"] = bool(usage.get("cached"))
    return kept


def write_fragment(path: Path, fragment: dict[str, Any]) -> None:
    """Write the fragment atomically, then its ``.done`` marker. The directory must exist
    (``prepare_dir``)."""
    # Compact: json's C encoder only runs without indent; one fragment per criterion adds up.
    write_atomic(path, json.dumps(fragment, ensure_ascii=False, separators=(",", ":")))
    mark_done(path.with_suffix(".done"), path)


def mark_done(marker: Path, fragment: Path) -> None:
    """The marker is a hard link to the fragment: creating a file costs up to ~1 ms on some
    file systems, a link ~0.03 ms. Only its existence means anything."""
    try:
        os.link(fragment, marker)
    except FileExistsError:  # another writer of the same fragment got there first
        pass
    except OSError:  # no hard links here: an empty file
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))


def load_fragment(path: Path) -> dict[str, Any]:
    """Read and validate one fragment; ``FragmentError`` says what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise FragmentError(path, f"cannot be read ({error})") from None
    except json.JSONDecodeError as error:
        raise FragmentError(
            path, f"is not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    validate_fragment(data, path)
    return dict(data)


def validate_fragment(data: Any, path: Path) -> None:
    if not isinstance(data, dict):
        raise FragmentError(path, f"must be a JSON object, not {type(data).__name__}")
    if data.get("schema") != SCHEMA or data.get("version") != SCHEMA_VERSION:
        raise FragmentError(
            path,
            f'schema must be "{SCHEMA}" version {SCHEMA_VERSION}, found '
            f"{data.get('schema')!r} version {data.get('version')!r}",
        )
    for name, expected in _FIELDS.items():
        _check_field(data, name, expected, path)
    for name, allowed in _ENUMS.items():
        if data[name] not in allowed:
            raise FragmentError(path, f"{name} {data[name]!r} is not one of {sorted(allowed)}")
    if data["index"] < 0 or data["line"] < 1 or data["attempts"] < 0:
        raise FragmentError(path, "index, line and attempts must not be negative (line >= 1)")
    for position, issue in enumerate(data["issues"]):
        _check_issue(issue, position, path)
    sign_off = data.get("sign_off")
    if sign_off is not None and (
        not isinstance(sign_off, dict)
        or set(sign_off) != set(_SIGN_OFF_FIELDS)
        or not all(isinstance(value, str) for value in sign_off.values())
    ):
        raise FragmentError(path, f"sign_off must be an object of strings {_SIGN_OFF_FIELDS}")
    _check_usage(data, path)


def _check_usage(data: dict[str, Any], path: Path) -> None:
    """The optional agent fields: ``usage`` null or numbers of at least 0, ``unstable`` a
    boolean."""
    if not isinstance(data.get("unstable", False), bool):
        raise FragmentError(path, '"unstable" must be true or false')
    usage = data.get("usage")
    if usage is None:
        return
    numbers = [usage.get(name) for name in _USAGE_FIELDS] if isinstance(usage, dict) else [None]
    if any(isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0 for n in numbers):
        raise FragmentError(path, f'"usage" must hold numbers of at least 0: {_USAGE_FIELDS}')


def _check_field(data: dict[str, Any], name: str, expected: Any, path: Path) -> None:
    if name not in data:
        raise FragmentError(path, f'the required field "{name}" is missing')
    value = data[name]
    if isinstance(value, bool) or not isinstance(value, expected):
        kinds = expected if isinstance(expected, tuple) else (expected,)
        wanted = " or ".join(_JSON_NAMES[kind] for kind in kinds)
        raise FragmentError(path, f'"{name}" must be {wanted}, found {json.dumps(value)[:80]}')


def _check_issue(issue: Any, position: int, path: Path) -> None:
    if not isinstance(issue, dict) or any(
        not isinstance(issue.get(name), str) for name in _ISSUE_FIELDS
    ):
        raise FragmentError(
            path, f"issues[{position}] must be an object with string location, expected, actual"
        )


_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list"}


@functools.lru_cache(maxsize=64)
def _shown(spec_path: Path, rootdir: Path) -> str:
    return display_path(spec_path, rootdir)  # resolves paths: once per spec, not per criterion


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]
