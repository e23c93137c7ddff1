"""Human sign-off of manual criteria: records a team commits and reviews, bound to the text
of the criterion a person checked.

``acceptance-signoffs.yaml`` at the rootdir (``--acceptance-signoffs PATH`` names another)
holds one record per signed-off criterion::

    signoffs:
    - criterion: AC-3
      spec: specs/feature.md          # relative to the rootdir
      sha256: 9f2c...                 # of the criterion's defining fields (criterion_digest)
      by: Ada Lovelace <ada@example.org>
      at: '2026-05-01T10:00:00Z'
      note: checked the layout on a phone

A manual criterion with a record whose digest is its own counts as passed, "signed off by
... on ..."; once its text changes, the record is void and the criterion needs a person
again. ``pytest --acceptance SPEC --acceptance-sign-off ID --acceptance-by NAME
[--acceptance-note TEXT]`` writes a record (a person's command: it refuses to run inside a
Claude Code session). Inside an /implement flow the file is a protected path, and the gate
counts only the records pinned at /implement.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.model import Criterion, Result, Status
from pytest_acceptance.text import display_path

SIGNOFF_FILE = "acceptance-signoffs.yaml"  # also gate/flow_state.py's; a test keeps them equal
FILE_LIMIT = 4 << 20  # bytes: a file of sign-offs, not a data dump
TEXT_LIMIT = 2_000  # characters of a name or a note
# The fields that define what a person checked. Where a criterion sits (its line, the
# category heading above it) does not change what was checked; a test makes every new
# Criterion field be sorted into one list or the other.
DEFINING_FIELDS = (
    "id",
    "title",
    "method",
    "description",
    "command",
    "pass_condition",
    "checks",
    "agent",
    "model",
    "priority",
    "cwd",
    "task",  # what a ticked task claims
    "scenario",  # a Gherkin scenario's steps
)
# Where it stands, how it runs or is shown: editing these leaves what a person checked.
NOT_DEFINING_FIELDS = (
    "location",
    "verification_line",
    "category",
    "timeout",
    "retries",
    "how",
    "tags",
    "votes",
)
_RECORD_KEYS = ("criterion", "spec", "sha256", "by", "at", "note")
_HEADER = (
    "# Sign-offs of manual acceptance criteria (pytest-acceptance). Each record says that a\n"
    "# person checked the criterion as its text stands (sha256); editing the criterion voids\n"
    "# it. Add one with: pytest --acceptance SPEC --acceptance-sign-off ID --acceptance-by NAME\n"
    "# Review changes to this file as you review code.\n"
)
_RECORDS = pytest.StashKey["SignOffs"]()


class SignOffError(Exception):
    """The sign-off file cannot be used: ``path:line: problem``."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")


@dataclass(frozen=True)
class SignOff:
    """One person's check of one criterion, as its text stood."""

    criterion: str
    spec: str  # the spec's path relative to the rootdir, with /
    sha256: str
    by: str
    at: str  # ISO 8601, UTC
    note: str = ""

    @property
    def day(self) -> str:
        return self.at[:10]

    def to_yaml_dict(self) -> dict[str, str]:
        data = dataclasses.asdict(self)
        return {key: data[key] for key in _RECORD_KEYS if data[key] or key != "note"}


@dataclass(frozen=True)
class SignOffs:
    """The records of one file, by (spec, criterion id)."""

    path: Path
    records: dict[tuple[str, str], SignOff]


def criterion_digest(criterion: Criterion) -> str:
    """sha256 of the criterion's defining fields, as canonical JSON."""
    values = {name: getattr(criterion, name) for name in DEFINING_FIELDS}
    canonical = json.dumps(values, sort_keys=True, ensure_ascii=False, default=_plain)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    return value.value if hasattr(value, "value") else list(value)


# --- reading ---------------------------------------------------------------------------------


def signoffs_path(config: pytest.Config) -> Path:
    given = config.getoption("acceptance_signoffs", None)
    if given:
        return Path(os.path.abspath(config.invocation_params.dir / given))
    return config.rootpath / SIGNOFF_FILE


def signoffs(config: pytest.Config) -> SignOffs:
    """The run's records, read once per process; a usage error names what is wrong."""
    if _RECORDS not in config.stash:
        path = signoffs_path(config)
        try:
            config.stash[_RECORDS] = load(path)
        except SignOffError as error:
            raise pytest.UsageError(f"sign-offs {error}") from None
    return config.stash[_RECORDS]


def load(path: Path) -> SignOffs:
    """The records of ``path``; none when it does not exist."""
    from pytest_acceptance.tree.hostile import read_regular

    try:
        raw = read_regular(path, FILE_LIMIT)
    except FileNotFoundError:
        return SignOffs(path, {})
    except OSError as error:
        raise SignOffError(path, 1, f"cannot be read ({error.strerror or error})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SignOffError(path, 1, "is not UTF-8 text") from None
    return SignOffs(path, _records(path, text))


def _records(path: Path, text: str) -> dict[tuple[str, str], SignOff]:
    from pytest_acceptance.spec.yamlload import YamlProblem, load_block

    try:
        data = load_block(text)
    except YamlProblem as problem:
        raise SignOffError(path, problem.line + 1, f"malformed YAML: {problem.problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or set(data) - {"signoffs"}:
        raise SignOffError(path, 1, 'write one key, "signoffs:", holding a list of records')
    entries = data.get("signoffs") or []
    if not isinstance(entries, list):
        raise SignOffError(path, 1, '"signoffs" must be a list of records')
    lines = _entry_lines(text)
    records: dict[tuple[str, str], SignOff] = {}
    for number, entry in enumerate(entries):
        line = lines[number] if number < len(lines) else 1
        record = _record(path, line, entry)
        key = (record.spec, record.criterion)
        if key in records:
            raise SignOffError(
                path, line, f"a second record of {record.criterion} in {record.spec}"
            )
        records[key] = record
    return records


def _record(path: Path, line: int, entry: Any) -> SignOff:
    if not isinstance(entry, dict):
        raise SignOffError(path, line, "a record must be a mapping: criterion, spec, sha256, ...")
    unknown = sorted(str(key) for key in entry if key not in _RECORD_KEYS)
    if unknown:
        raise SignOffError(path, line, f"unknown key {unknown[0]!r}: use {', '.join(_RECORD_KEYS)}")
    values = {}
    for key in _RECORD_KEYS:
        value = entry.get(key, "" if key == "note" else None)
        if not isinstance(value, str) or (key != "note" and not value.strip()):
            raise SignOffError(path, line, f'"{key}" must be a non-empty string (quote it)')
        if len(value) > TEXT_LIMIT:
            raise SignOffError(path, line, f'"{key}" is longer than {TEXT_LIMIT} characters')
        values[key] = value.strip()
    if len(values["sha256"]) != 64 or set(values["sha256"]) - set("0123456789abcdef"):
        raise SignOffError(path, line, '"sha256" must be 64 lower-case hex digits')
    return SignOff(**values)


def _entry_lines(text: str) -> list[int]:
    """The 1-based line of each record (for messages only)."""
    import yaml

    from pytest_acceptance.spec.yaml12 import Yaml12Loader

    node = yaml.compose(text, Loader=Yaml12Loader)
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "signoffs" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


# --- applying --------------------------------------------------------------------------------


def spec_key(config: pytest.Config, spec: Path) -> str:
    """How records name a spec: its path relative to the rootdir (for the gate's copy, the
    path of the spec it stands for)."""
    from pytest_acceptance.options import spec_origins

    for copy, origin in spec_origins(config):
        if spec.resolve() == copy:
            spec = origin
    return display_path(spec, config.rootpath)


def manual_result(criterion: Criterion, config: pytest.Config) -> Result:
    """A manual criterion's result: passed when a person signed off its current text,
    else waiting for one (saying so when a sign-off was voided by an edit)."""
    record = signoffs(config).records.get((spec_key(config, criterion.location.path), criterion.id))
    if record is None:
        return Result(Status.MANUAL, attempts=0, message="needs a human")
    facts = {"by": record.by, "at": record.at, "note": record.note}
    if record.sha256 == criterion_digest(criterion):
        note = f": {record.note}" if record.note else ""
        message = f"signed off by {record.by} on {record.day}{note}"
        extra = {"sign_off": {"state": "signed off", **facts}}
        return Result(Status.PASSED, attempts=0, message=message, extra=extra)
    message = (
        f"needs a human: the sign-off by {record.by} on {record.day} is void, the criterion "
        "changed since; check it again and sign it off again"
    )
    return Result(
        Status.MANUAL, attempts=0, message=message, extra={"sign_off": {"state": "void", **facts}}
    )


# --- writing: the --acceptance-sign-off command -------------------------------------------------


def write(path: Path, records: dict[tuple[str, str], SignOff]) -> None:
    import yaml

    from pytest_acceptance.tree.hostile import write_atomic

    ordered = [records[key].to_yaml_dict() for key in sorted(records)]
    body = yaml.safe_dump(
        {"signoffs": ordered}, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    try:
        write_atomic(path, _HEADER + body)
    except OSError as error:
        raise pytest.UsageError(f"could not write {path}: {error.strerror or error}") from None
