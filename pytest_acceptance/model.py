"""Plain frozen data shared by every stage: what a spec says, and what a run found.

Nothing here knows about pytest. Parsed criteria (``Spec``, ``Criterion``) come out of
``parse``; run results (``Result``) come out of the runners and travel from xdist
workers to the controller as plain dicts (``Result.to_dict`` / ``Result.from_dict``).
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Method(str, enum.Enum):
    BASH = "bash"
    SUBAGENT = "subagent"
    MANUAL = "manual"
    TASK = "task"  # a task list's claim, checked against evidence (never written in yaml)


class Priority(str, enum.Enum):
    """MoSCoW priority of a criterion: MUST, SHOULD, COULD, WONT."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    COULD = "COULD"
    WONT = "WONT"


# Slots: a spec holds thousands of criteria, each with its location, alive for the whole
# run in every process; an instance dict of some twenty fields costs about 1 KB each.
@dataclass(frozen=True, slots=True)
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
class Task:
    """What one task of a task list claims: done (ticked) or not, and the evidence it names.

    ``files`` must exist and have changed since the base; ``removed`` must be gone and have
    changed since the base; ``cites`` are requirement or criterion ids whose criteria must
    pass in the same run; ``subtasks`` are the ids of its sub-tasks in the same list, which
    must be ticked and pass; ``command`` is the task's own verify command."""

    ticked: bool
    files: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    cites: tuple[str, ...] = ()
    command: str | None = None
    subtasks: tuple[str, ...] = ()

    @property
    def evidence(self) -> bool:
        return bool(self.files or self.removed or self.cites or self.command or self.subtasks)

    @property
    def decided_later(self) -> bool:
        """Whether other criteria of the run decide it too (its cites, its sub-tasks)."""
        return bool(self.cites or self.subtasks)


@dataclass(frozen=True)
class Scenario:
    """A Gherkin scenario a criterion stands for: its name as the feature file says it, the
    line of its ``Scenario:`` keyword and, for an outline, which example row (1-based, over
    all its Examples tables) and that row's line."""

    name: str
    line: int
    example: int = 0
    example_line: int = 0


@dataclass(frozen=True, slots=True)
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
    # Why this method: "bash: `make lint` exits 0, stated in the prose", "agent: Judgment
    # gate". Empty when the author chose it outright (a verification block).
    how: str = ""
    tags: tuple[str, ...] = ()  # the author's tags (Gherkin @tags), markers of the item
    task: Task | None = None  # a task list's task: what it claims
    scenario: Scenario | None = None  # a Gherkin scenario: what a BDD runner selects
    cwd: str | None = None  # where a bash command runs, relative to the spec's folder
    votes: int | None = None  # independent judges of an agent check (None: the ini's)

    @property
    def automated(self) -> bool:
        return self.method is not Method.MANUAL

    @property
    def method_detail(self) -> str:
        """``bash `npm test``` / ``subagent (pattern-checker)`` / ``manual``: the command
        as it runs (``shown_command``), the one text every output shows."""
        if self.method is Method.BASH and self.command:
            return f"bash {shown_command(self.command)}"
        if self.method is Method.SUBAGENT and self.agent:
            return f"subagent ({self.agent})"
        return self.method.value


@dataclass(frozen=True)
class Requirement:
    """A requirement of a spec and the ids of the criteria that verify it: a Kiro
    "Requirement 1" and its 1.1, 1.2; an OpenSpec requirement and its scenarios; a user
    story and its acceptance criteria; an FR-001 that is its own criterion."""

    id: str
    title: str
    location: Location
    criteria: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spec:
    path: Path
    criteria: tuple[Criterion, ...]
    title: str = ""
    requirements: tuple[Requirement, ...] = ()


class Status(str, enum.Enum):
    """The outcome of one criterion, as the verdict sees it."""

    PASSED = "passed"
    FLAKY = "flaky"  # passed after a failed attempt: a pass, but never hidden
    FAILED = "failed"
    ERROR = "error"  # could not be verified: no agent, did not report, ...
    MANUAL = "manual"  # needs a human; never run
    UNTICKED = "unticked"  # a task the task list does not claim done: listed, never run
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
    # How many results it combines (verdict/combine.py): several when the criterion
    # reported more than once (--dist each, a repeating plugin, shards of a merge).
    results: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "attempts": self.attempts,
            "duration": round(self.duration, 3),
            "issues": [issue.to_dict() for issue in self.issues],
            "output": self.output,
            "message": self.message,
            "extra": dict(self.extra),
            "results": self.results,
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
            results=int(data.get("results", 1)),
        )


SHOWN_COMMAND_LIMIT = 300


def shown_command(command: str, limit: int = SHOWN_COMMAND_LIMIT) -> str:
    """A command as it runs, byte for byte between backticks: white space is never folded
    (``'hello   big world'`` is one argument of three spaces), so pasting what is shown
    runs what ran. Only a visible ellipsis cuts it: after ``limit`` characters, or at the
    first line break of a script (``… (+3 lines)``). Other control characters, which a
    terminal would act on, show as escapes (``\\x1b``)."""
    lines = command.removesuffix("\n").split("\n")
    shown = lines[0].removesuffix("\r")
    cut = len(shown) > limit or len(lines) > 1
    shown = _CONTROL.sub(lambda match: repr(match[0])[1:-1], shown[:limit])
    if cut:
        shown += "…"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    more = len(lines) - 1
    rest = f" (+{more} line{'s' * (more != 1)})" if more else ""
    return f"{fence}{pad}{shown}{pad}{fence}{rest}"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text: str, limit: int = 80) -> str:
    """``text`` on one line (white space folded), cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class Budget:
    """A limit on the whole run of one criterion, every attempt included, set by a tool
    around it (pytest-timeout): what is left of it caps each attempt's own timeout."""

    deadline: float  # time.monotonic() when it runs out
    source: str  # who set it, for the failure's words: "pytest-timeout's timeout of 2 s"

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


@dataclass(frozen=True)
class RunContext:
    """What a runner needs besides the criterion. Built once per process from the config
    (a criterion under a ``budget`` gets a copy with it)."""

    rootdir: Path
    default_timeout: float = 300.0
    default_retries: int = 1
    log_path: Path | None = None  # the /implement log (--acceptance-log)
    hook: Any = None  # pytest's hook relay, for runners that consult other plugins
    # (a spec verified from a copy, the project path it stands for): --acceptance-spec-origin
    spec_origins: tuple[tuple[Path, Path], ...] = ()

    def spec_folder(self, spec: Path) -> Path:
        """The folder a spec's ``cwd:`` keys are relative to: its own, or for a copy (the
        Claude Code gate verifies a pinned one) that of the spec it stands for."""
        for copy, origin in self.spec_origins:
            if spec == copy or spec.resolve() == copy:
                return origin.parent
        return spec.parent

    budget: Budget | None = None

    def capped(self, seconds: float) -> tuple[float, str]:
        """A timeout of ``seconds``, cut to what the budget has left: (seconds, who cut
        it, or "" when the budget did not)."""
        if self.budget is None:
            return seconds, ""
        left = self.budget.left()
        return (left, self.budget.source) if left < seconds else (seconds, "")
