"""Evidence: one fragment (a JSON object) per criterion result, one line each in an
append-only file per spec, written by the controller as each result arrives.

Layout (under the git-ignored ``<rootdir>/.acceptance/``)::

    specs/<spec-stem>-<8 hex of sha256(absolute spec path)>/
        evidence.jsonl               # one fragment a line, in the order results arrived
        report.json, report.md       # assembled by report.py on the controller

Each fragment is one ``write`` of a whole line to a file opened once with ``O_APPEND``: it
is on disk (in the kernel) before the next result is taken, so a run that is killed leaves
the evidence of every criterion that finished; no file is created per criterion (creating
a file costs up to a millisecond on some file systems, as much as a short criterion).
A line without its newline is a write that a kill cut short: ``read_evidence`` ignores it,
so that criterion has no evidence (an error, never a pass). Any other line that fails the
schema below raises ``FragmentError`` naming the file and line; assembly treats that as a
hard error, never as a pass.
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
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pytest_acceptance.model import Criterion, Method, Priority, Result, Status
from pytest_acceptance.store import OUTPUT_DIR, output_dir
from pytest_acceptance.text import display_path
from pytest_acceptance.tree.hostile import NOFOLLOW, open_regular

SCHEMA = "pytest-acceptance/fragment"
SCHEMA_VERSION = 1
OUTPUT_LIMIT = 4000  # characters of output kept: the tail, where failures show
TEXT_LIMIT = 2000  # message, and each issue field
ISSUE_LIMIT = 50
NAME_LIMIT = 100  # bytes of a spec stem in a directory name

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
    """A fragment that cannot be used as evidence (``line``: its line in the evidence file)."""

    def __init__(self, path: Path, problem: str, line: int | None = None) -> None:
        super().__init__(path, problem, line)
        self.path = path
        self.problem = problem
        self.line = line

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return (
            f"evidence fragment {where}: {self.problem}; it was not written by this "
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
    """Create the spec's directory (and the self-ignoring ``.acceptance``); returns it."""
    output_dir(rootdir)  # creates .acceptance with its .gitignore first
    directory = spec_dir(rootdir, spec_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def evidence_path(rootdir: Path, spec_path: Path) -> Path:
    return spec_dir(rootdir, spec_path) / EVIDENCE_FILE


EVIDENCE_FILE = "evidence.jsonl"


def clear_evidence(rootdir: Path, spec_path: Path) -> None:
    """Forget the evidence of the previous run (reports stay, for the deltas).

    The evidence file goes at once. A ``fragments`` directory left by an earlier version
    (a file per criterion) is renamed aside and deleted by a detached ``rm -rf``: unlinking
    thousands of files here would hold up the run. Whatever is not removed in time is swept
    up by the next run."""
    parent = spec_dir(rootdir, spec_path)
    try:
        (parent / EVIDENCE_FILE).unlink()
    except FileNotFoundError:
        pass
    except OSError:  # a folder we may not change: empty the file, if it is one we may write
        with contextlib.suppress(OSError):
            os.truncate(parent / EVIDENCE_FILE, 0)
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
        "results": result.results,  # more than one: combined (verdict/combine.py)
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


class EvidenceLog:
    """The spec's evidence file, opened once for appending; one ``append`` per result.

    One writer (the controller) and whole lines: a failed write (a full disk) is cut back to
    the last whole line, so the fragments after it still start on a line of their own."""

    def __init__(self, path: Path) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | NOFOLLOW
        self.path = path
        self.handle = os.open(path, flags, 0o644)
        self.size = os.fstat(self.handle).st_size

    def append(self, fragment: dict[str, Any]) -> None:
        """Write the fragment as one line; OSError when it cannot (nothing half written
        stays, as far as the file system lets us cut it back)."""
        # Compact: json's C encoder only runs without indent; one line per criterion adds up.
        line = json.dumps(fragment, ensure_ascii=False, separators=(",", ":")) + "\n"
        view = memoryview(line.encode("utf-8"))
        written = 0
        try:
            while written < len(view):
                written += os.write(self.handle, view[written:])
        except OSError:
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(self.handle, self.size)
            raise
        self.size += written

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.handle)


# Above any line we write (its texts are bounded; a title is one line of a spec of at most
# 16 MiB, JSON-escaped): a longer line was not written by us, and is never read whole.
LINE_LIMIT = 128 << 20


def read_evidence(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each fragment of an evidence file with its line number, validated, read in one pass
    (one line in memory at a time). A missing file has none. The last line, when it has no
    newline, is a write cut short by a kill: ignored, so its criterion has no evidence.
    ``FragmentError`` names the file and line of anything else that is not a fragment."""
    try:
        handle = os.fdopen(open_regular(path), "rb")
    except FileNotFoundError:
        return
    except OSError as error:
        raise FragmentError(path, f"cannot be read ({error})") from None
    with handle:
        number = 0
        while raw := _line(handle, path, number + 1):
            number += 1
            if not raw.endswith(b"\n"):
                return  # cut short: no evidence of that criterion, never a pass
            yield number, _fragment(raw, path, number)


def _line(handle: IO[bytes], path: Path, number: int) -> bytes:
    try:
        raw = handle.readline(LINE_LIMIT + 1)
    except OSError as error:
        raise FragmentError(path, f"cannot be read ({error})", number) from None
    if len(raw) > LINE_LIMIT:
        raise FragmentError(path, f"the line is longer than {LINE_LIMIT} bytes", number)
    return raw


def _fragment(raw: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, RecursionError) as error:
        raise FragmentError(path, f"cannot be read ({error})", number) from None
    except json.JSONDecodeError as error:
        raise FragmentError(
            path, f"is not JSON (column {error.colno}: {error.msg})", number
        ) from None
    validate_fragment(data, path, number)
    return data  # type: ignore[no-any-return]


def validate_fragment(data: Any, path: Path, line: int | None = None) -> None:
    try:
        _validate(data, path)
    except FragmentError as error:
        raise FragmentError(path, error.problem, line) from None


def _validate(data: Any, path: Path) -> None:
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
    results = data.get("results", 1)
    if isinstance(results, bool) or not isinstance(results, int) or results < 1:
        raise FragmentError(path, '"results" must be an integer of at least 1')
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
