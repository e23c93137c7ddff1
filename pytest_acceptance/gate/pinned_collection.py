"""What /implement's probe collected of the pinned spec (flow.json's ``collection``).

The criteria the gate must verify, the spec's collection error, the ``acceptance_*``
settings of the pinned configuration, and the interpreter (with its environment) that
collected them, which every later run of the flow uses. The gate decides on each, so the
record is read back only in its exact shape: anything else reads as damaged state, which
blocks, never as a record with parts missing.

Standard library only, like every hook module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

# Each field of a criterion as the probe reports it, with the JSON types it may hold.
_CRITERION_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "title": (str,),
    "method": (str,),
    "line": (int,),
    "command": (str, type(None)),
    "pass_condition": (str, type(None)),
    "description": (str,),
    "agent": (str, type(None)),
    "checks": (list,),
    "model": (str, type(None)),
    "timeout": (int, float, type(None)),
    "retries": (int, type(None)),
    "priority": (str,),
    "cwd": (str, type(None)),
}


class DamagedCollection(ValueError):
    """The record is not exactly a collection of this version."""


@dataclass(frozen=True)
class Criterion:
    """One criterion of the pinned spec, as pytest_acceptance.gate_probe reported it."""

    id: str
    title: str
    method: str
    line: int
    command: str | None
    pass_condition: str | None
    description: str
    agent: str | None
    checks: tuple[str, ...]
    model: str | None
    timeout: float | None
    retries: int | None
    priority: str
    cwd: str | None

    @classmethod
    def from_json(cls, value: object) -> Criterion:
        if not isinstance(value, dict) or set(value) != set(_CRITERION_TYPES):
            raise DamagedCollection(f"a criterion is not one: {value!r:.200}")
        for key, types in _CRITERION_TYPES.items():
            if not isinstance(value[key], types) or isinstance(value[key], bool):
                raise DamagedCollection(f"a criterion's {key} is {value[key]!r:.100}")
        checks = value["checks"]
        if not all(isinstance(check, str) for check in checks):
            raise DamagedCollection(f"a criterion's checks are {checks!r:.100}")
        timeout = value["timeout"]
        fields = {**value, "checks": tuple(checks)}
        fields["timeout"] = None if timeout is None else float(timeout)
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "checks": list(self.checks)}

    def changes(self, new: Criterion) -> list[str]:
        """The fields that differ in `new` (the heading's line aside), by name."""
        return [
            field.name
            for field in dataclasses.fields(self)
            if field.name != "line" and getattr(self, field.name) != getattr(new, field.name)
        ]


@dataclass(frozen=True)
class Collection:
    """The pinned spec's criteria and collection error, the pinned settings, and the
    interpreter that collected them."""

    criteria: tuple[Criterion, ...] = ()
    error: str | None = None  # the spec as pinned cannot be collected
    settings: tuple[tuple[str, str], ...] = ()  # acceptance_* keys, sorted
    python: str = ""  # the gate's interpreter, an absolute path
    prefix: str = ""  # its sys.prefix

    @property
    def ids(self) -> list[str]:
        return [criterion.id for criterion in self.criteria]

    def bash_commands(self) -> list[str]:
        """The commands of the bash criteria."""
        return [c.command for c in self.criteria if c.method == "bash" and c.command]

    def to_json(self) -> dict[str, Any]:
        return {
            "criteria": [criterion.to_json() for criterion in self.criteria],
            "error": self.error,
            "settings": dict(self.settings),
            "python": self.python,
            "prefix": self.prefix,
        }

    @classmethod
    def from_json(cls, value: object) -> Collection:
        """The record `value` holds; DamagedCollection when it is not exactly one."""
        if not isinstance(value, dict) or set(value) != _FIELDS:
            raise DamagedCollection(f"not a collection record: {value!r:.200}")
        criteria, settings = value["criteria"], value["settings"]
        if not isinstance(criteria, list) or not _text_map(settings):
            raise DamagedCollection("its criteria or settings are of the wrong type")
        error, python, prefix = value["error"], value["python"], value["prefix"]
        if not (error is None or isinstance(error, str)):
            raise DamagedCollection(f"its error is {error!r:.100}")
        if not isinstance(python, str) or not isinstance(prefix, str):
            raise DamagedCollection("its interpreter is not named by strings")
        return cls(
            tuple(Criterion.from_json(item) for item in criteria),
            error,
            tuple(sorted(settings.items())),
            python,
            prefix,
        )

    @classmethod
    def from_probe(cls, report: Mapping[str, Any], python: str) -> Collection:
        """The probe's report (pytest_acceptance.gate_probe) as a record; DamagedCollection
        when the probe answered anything else."""
        settings = report.get("settings") or {}
        if not _text_map(settings):
            raise DamagedCollection("the probe's settings are not strings")
        return cls.from_json(
            {
                "criteria": report.get("criteria"),
                "error": report.get("error"),
                "settings": settings,
                "python": python,
                "prefix": str(report.get("prefix") or ""),
            }
        )


_FIELDS = frozenset(field.name for field in dataclasses.fields(Collection))


def _text_map(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    )
