"""Plain frozen data shared by every stage: what a spec says, and what a run found.

Nothing here knows about pytest. Parsed criteria (``Spec``, ``Criterion``) come out of
``parse``; run results (``Result``) come out of the runners and travel from xdist
workers to the controller as plain dicts (``Result.to_dict`` / ``Result.from_dict``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Method(str, enum.Enum):
    BASH = "bash"
    SUBAGENT = "subagent"
    MANUAL = "manual"


class Priority(str, enum.Enum):
    """MoSCoW priority of a criterion (seed 002)."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    COULD = "COULD"
    WONT = "WONT"


@dataclass(frozen=True)
class Location:
    """A 1-based line in a file."""

    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


SPEC_ERROR_LIMIT = 2_000  # characters: a message may quote the spec, which may be huge


class SpecError(Exception):
    """A spec that cannot be turned into criteria. ``line`` is 1-based."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        if len(message) > SPEC_ERROR_LIMIT:
            message = message[: SPEC_ERROR_LIMIT - 1] + "…"
        super().__init__(path, line, message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    @property
    def errors(self) -> tuple[SpecError, ...]:
        return (self,)


# One collection error lists this many problems of a spec; the rest are counted.
LISTED_ERRORS = 50


class SpecErrors(SpecError):
    """Every problem found in one spec, reported together (the first one's line leads)."""

    def __init__(self, errors: list[SpecError]) -> None:
        first = min(errors, key=lambda error: error.line)
        super().__init__(first.path, first.line, first.message)
        self.all = tuple(sorted(errors, key=lambda error: error.line))

    def __str__(self) -> str:
        return "\n".join(listed_errors(self.all, str))

    def __reduce__(self) -> tuple[type[SpecErrors], tuple[list[SpecError]]]:
        return SpecErrors, (list(self.all),)

    @property
    def errors(self) -> tuple[SpecError, ...]:
        return self.all


def listed_errors(errors: tuple[SpecError, ...], render: Callable[[SpecError], str]) -> list[str]:
    """One line per problem, bounded: past LISTED_ERRORS the rest are counted."""
    lines = [render(error) for error in errors[:LISTED_ERRORS]]
    if len(errors) > LISTED_ERRORS:
        lines.append(f"... and {len(errors) - LISTED_ERRORS} more problems in this spec")
    return lines


def raise_all(errors: list[SpecError]) -> None:
    """Raise nothing, the one error, or all of them as ``SpecErrors``."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SpecErrors(errors)


@dataclass(frozen=True)
class Criterion:
    """One acceptance criterion: in the reference format a ``#### AC-N: Title`` heading and
    its yaml block; other formats (``pytest_acceptance.spec.formats``) build the same data."""

    id: str
    title: str
    method: Method
    location: Location  # the heading
    verification_line: int = 0  # first line of the yaml block (1-based)
    description: str = ""
    category: str = ""
    command: str | None = None
    pass_condition: str | None = None
    timeout: float | None = None  # seconds
    retries: int | None = None
    agent: str | None = None
    checks: tuple[str, ...] = ()
    model: str | None = None
    priority: Priority = Priority.MUST
    votes: int | None = None  # independent judges of an agent check (None: the ini's)

    @property
    def automated(self) -> bool:
        return self.method is not Method.MANUAL

    @property
    def method_detail(self) -> str:
        """``bash (npm test)`` / ``subagent (pattern-checker)`` / ``manual``."""
        if self.method is Method.BASH and self.command:
            return f"bash ({one_line(self.command)})"
        if self.method is Method.SUBAGENT and self.agent:
            return f"subagent ({self.agent})"
        return self.method.value


@dataclass(frozen=True)
class Spec:
    path: Path
    criteria: tuple[Criterion, ...]
    title: str = ""


class Status(str, enum.Enum):
    """The outcome of one criterion, as the verdict sees it."""

    PASSED = "passed"
    FLAKY = "flaky"  # passed after a failed attempt: a pass, but never hidden
    FAILED = "failed"
    ERROR = "error"  # could not be verified: no agent, did not report, ...
    MANUAL = "manual"  # needs a human; never run
    NOT_RUN = "not_run"  # selected, but the run stopped before it (-x, a crash): unknown

    @property
    def passed(self) -> bool:
        return self in (Status.PASSED, Status.FLAKY)


@dataclass(frozen=True)
class Issue:
    """One actionable finding: where, what was expected, what was found."""

    location: str
    expected: str
    actual: str

    def to_dict(self) -> dict[str, str]:
        return {"location": self.location, "expected": self.expected, "actual": self.actual}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Issue:
        return cls(str(data["location"]), str(data["expected"]), str(data["actual"]))


@dataclass(frozen=True)
class Result:
    """What running one criterion found. ``message`` says why and what to do next."""

    status: Status
    attempts: int = 1
    duration: float = 0.0
    issues: tuple[Issue, ...] = ()
    output: str = ""  # bounded excerpt of what the check printed
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # JSON-safe, runner-specific

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "attempts": self.attempts,
            "duration": round(self.duration, 3),
            "issues": [issue.to_dict() for issue in self.issues],
            "output": self.output,
            "message": self.message,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(
            status=Status(data["status"]),
            attempts=int(data.get("attempts", 1)),
            duration=float(data.get("duration", 0.0)),
            issues=tuple(Issue.from_dict(i) for i in data.get("issues", ())),
            output=str(data.get("output", "")),
            message=str(data.get("message", "")),
            extra=dict(data.get("extra", {})),
        )


def one_line(text: str, limit: int = 80) -> str:
    """``text`` on one line (white space folded), cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class RunContext:
    """What a runner needs besides the criterion. Built once per process from the config."""

    rootdir: Path
    default_timeout: float = 300.0
    default_retries: int = 1
    log_path: Path | None = None  # the /implement log (--acceptance-log)
    hook: Any = None  # pytest's hook relay, for runners that consult other plugins
