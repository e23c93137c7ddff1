"""Criterion integrity: the files a bash criterion's commands name, test by test
(:mod:`pytest_acceptance.integrity`). A check a criterion runs that was weakened since
/implement (a test deleted, an assertion removed, a skip added, a conftest planted) refuses
/done, which says what and how; an escalation carries it to the person who decides.

The snapshot's top level is read back in its exact shape; each file's entry is the integrity
package's inventory, read by it. The package is imported only when the pin is taken or
checked: the hooks that never check it do not pay for its import.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Mapping

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import base

NAME = "criterion-integrity"
COVERS = "the files the bash criteria's commands name, test by test"
_FIELDS = frozenset({"schema", "version", "files", "scripts", "watch", "problems"})
_WATCH = frozenset({"dir", "pattern", "recursive", "new", "why"})
_WATCH_OPTIONAL = frozenset({"known", "check"})


@dataclass(frozen=True)
class Watch:
    """A folder where a runner finds configuration, conftest or data files: what is there at
    /implement is pinned with the files, and what appears later is reported."""

    folder: str
    pattern: str
    recursive: bool
    new: bool  # a file that appears here is reported
    why: str  # how a criterion depends on what is there
    known: tuple[str, ...] | None  # the files there at /implement, when watched for new ones
    check: str | None  # how a new file is read before it is reported ("import-time")

    def to_json(self) -> dict[str, object]:
        record: dict[str, object] = {
            "dir": self.folder,
            "pattern": self.pattern,
            "recursive": self.recursive,
            "new": self.new,
            "why": self.why,
        }
        if self.known is not None:
            record["known"] = list(self.known)
        if self.check is not None:
            record["check"] = self.check
        return record

    @classmethod
    def from_json(cls, value: object) -> Watch | None:
        optional = set(value) & _WATCH_OPTIONAL if isinstance(value, dict) else set()
        record = base.fields(value, _WATCH | optional)
        if record is None:
            return None
        folder, pattern, why = record["dir"], record["pattern"], record["why"]
        recursive, new = record["recursive"], record["new"]
        known, check = record.get("known"), record.get("check")
        listed = base.strings(known) if known is not None else None
        if not (isinstance(folder, str) and isinstance(pattern, str) and isinstance(why, str)):
            return None
        if not (isinstance(recursive, bool) and isinstance(new, bool)):
            return None
        if (known is not None and listed is None) or not isinstance(check, (str, type(None))):
            return None
        return cls(folder, pattern, recursive, new, why, listed, check)


@dataclass(frozen=True)
class CriterionIntegrity:
    schema: str  # integrity.SCHEMA
    version: int  # integrity.VERSION of the snapshot
    files: tuple[tuple[str, Mapping[str, Any]], ...]  # (relative path, its entry), sorted
    scripts: tuple[tuple[str, tuple[str, ...]], ...]  # (package.json or Makefile, names run)
    watch: tuple[Watch, ...]
    problems: tuple[str, ...]  # what the snapshot could not pin, reported at each check

    def to_json(self) -> dict[str, object]:
        return {
            "schema": self.schema,
            "version": self.version,
            "files": {path: dict(entry) for path, entry in self.files},
            "scripts": {path: list(names) for path, names in self.scripts},
            "watch": [watch.to_json() for watch in self.watch],
            "problems": list(self.problems),
        }

    @classmethod
    def from_json(cls, value: object) -> CriterionIntegrity | None:
        record = base.fields(value, _FIELDS)
        if record is None or not isinstance(record["schema"], str):
            return None
        version, files, scripts = record["version"], record["files"], record["scripts"]
        if not isinstance(version, int) or isinstance(version, bool):
            return None
        if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
            return None
        scripts = _string_lists(scripts)
        if scripts is None:
            return None
        watches, problems = record["watch"], base.strings(record["problems"])
        found = [Watch.from_json(watch) for watch in watches] if isinstance(watches, list) else []
        if not isinstance(watches, list) or None in found or problems is None:
            return None
        return cls(
            schema=record["schema"],
            version=version,
            files=tuple(sorted(files.items())),
            scripts=scripts,
            watch=tuple(watch for watch in found if watch is not None),
            problems=problems,
        )


def _string_lists(value: object) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """A JSON object of lists of strings, as sorted pairs."""
    if not isinstance(value, dict):
        return None
    pairs = sorted((key, base.strings(listed)) for key, listed in value.items())
    if any(listed is None for _, listed in pairs):
        return None
    return tuple((key, listed) for key, listed in pairs if listed is not None)


def read(flow: Flow) -> CriterionIntegrity:
    return PIN.record(flow)


def integrity_module() -> ModuleType:
    """The integrity package, imported when it is needed (its import is the slow part)."""
    from pytest_acceptance import integrity

    return integrity


def weakened(flow: Flow) -> list[str]:
    """What was weakened of the checks the bash criteria run since /implement; PinError when
    the pin is absent, damaged or failed, or cannot be checked."""
    pinned = read(flow)
    integrity = integrity_module()
    if pinned.schema != integrity.SCHEMA:
        raise base.PinError(f"the pin of {COVERS} is not a snapshot of this version")
    try:
        found = integrity.weakened(flow.repo, pinned.to_json())
    except Exception as error:  # any failure to check is a refusal, never a pass
        raise base.PinError(
            f"cannot check the integrity of the criteria's tests ({error})"
        ) from None
    return [finding.message() for finding in found]


class CriterionIntegrityPin(base.RecordPin[CriterionIntegrity]):
    """Checked by /done only (:func:`weakened`); every run reads its record back, so an
    absent or failed one refuses the run."""

    def take(self, flow: Flow, taking: base.Taking) -> None:
        try:
            snapshot = integrity_module().snapshot(flow.repo, flow.bash_commands())
        except Exception as error:  # any failure to pin is the pin's failure, never a skip
            raise base.PinError(f"{type(error).__name__}: {error}") from None
        record = CriterionIntegrity.from_json(snapshot)
        if record is None:
            raise base.PinError("the integrity snapshot is not of the expected shape")
        base.write(flow, NAME, record.to_json())


PIN = CriterionIntegrityPin(NAME, COVERS, CriterionIntegrity.from_json)
