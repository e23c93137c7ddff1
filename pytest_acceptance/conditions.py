"""The pass-condition vocabulary of bash criteria.

A bash criterion passes when its command's result satisfies its ``pass_condition``.
Without a ``pass_condition`` (or with an empty one) the command must exit with code 0.

Vocabulary (phrases are case-insensitive; an argument may be wrapped in single or double
quotes, which it must be when it contains `` and `` followed by one of the phrases):

========================================  ==================================================
``exit code N``                           the command exits with code N
(also ``exit code is N``, ``exits with N``)
``output contains X``                     stdout contains the text X (case-sensitive)
``output does not contain X``             stdout does not contain the text X
``output matches REGEX``                  Python ``re.search(REGEX, stdout, re.MULTILINE)``
``output is empty``                       stdout is empty or only whitespace
``output is not empty``                   stdout holds something besides whitespace
``file exists``                           the command prints at least one path, and every
                                          non-blank line it prints is an existing path
                                          (relative paths are taken from the rootdir)
``file PATH exists``                      PATH (relative to the rootdir) exists
``file PATH does not exist``              PATH (relative to the rootdir) does not exist
========================================  ==================================================

Join several with `` and ``; all of them must hold, e.g.
``exit code 0 and output contains "3 passed" and file build/report.json exists``.
"output" always means stdout. Unless a condition names an exit code itself, it also
requires exit code 0: a command that crashed never satisfies ``output is empty``.
``ls missing | head -1`` prints nothing and exits 0, so ``file exists`` fails on it.

Anything outside this vocabulary (for example "multiple commits with criterion
references") is natural language: an agent must judge it from the command, its exit code
and its output. It is never reduced to the exit code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

VOCABULARY: tuple[str, ...] = (
    "exit code N",
    "output contains X",
    "output does not contain X",
    "output matches REGEX",
    "output is empty",
    "output is not empty",
    "file exists",
    "file PATH exists",
    "file PATH does not exist",
)
"""The phrases, for error messages that tell the user what to write instead."""

VOCABULARY_HINT = "; ".join(f'"{phrase}"' for phrase in VOCABULARY) + ' (join with " and ")'


class ConditionError(ValueError):
    """A pass_condition that uses the vocabulary but cannot be understood."""


def _error(clause: str, what: str) -> ConditionError:
    return ConditionError(f"pass_condition {_quote(clause)}: {what}")


@dataclass(frozen=True)
class NaturalLanguage:
    """A pass_condition outside the vocabulary: an agent must judge it."""

    text: str


@dataclass(frozen=True)
class Check:
    """Whether a command's result satisfies a condition, and what was expected/found."""

    passed: bool
    expected: str
    actual: str


# --- the clauses -------------------------------------------------------------------------


def _quote(text: str) -> str:
    return f'"{text}"' if "'" in text else f"'{text}'"


def _resolve(rootdir: Path, path: str) -> Path:
    return rootdir / path  # an absolute path stays absolute


@dataclass(frozen=True)
class ExitCode:
    code: int

    def describe(self) -> str:
        return f"exit code {self.code}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        return None if exit_code == self.code else f"exit code {exit_code}"


@dataclass(frozen=True)
class OutputContains:
    text: str
    negated: bool = False

    def describe(self) -> str:
        verb = "does not contain" if self.negated else "contains"
        return f"output {verb} {_quote(self.text)}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        found = self.text in stdout
        if found and self.negated:
            line = stdout[: stdout.index(self.text)].count("\n") + 1
            return f"output contains {_quote(self.text)} (line {line})"
        if not found and not self.negated:
            return f"output does not contain {_quote(self.text)}"
        return None


@dataclass(frozen=True)
class OutputMatches:
    pattern: re.Pattern[str]

    def describe(self) -> str:
        return f"output matches {_quote(self.pattern.pattern)}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        if self.pattern.search(stdout):
            return None
        return f"output does not match {_quote(self.pattern.pattern)}"


@dataclass(frozen=True)
class OutputEmpty:
    negated: bool = False

    def describe(self) -> str:
        return "output is not empty" if self.negated else "output is empty"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        empty = not stdout.strip()
        if empty and self.negated:
            return "output is empty"
        if not empty and not self.negated:
            return f"output is not empty ({len(stdout.splitlines())} lines)"
        return None


@dataclass(frozen=True)
class PrintedPathsExist:
    """``file exists``: the command's output names existing paths, and nothing else."""

    def describe(self) -> str:
        return "file exists (the output names at least one existing path)"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        paths = [line.strip() for line in stdout.splitlines() if line.strip()]
        if not paths:
            return "the command printed no path"
        missing = [path for path in paths if not _resolve(rootdir, path).exists()]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            return f"printed path {_quote(missing[0])} does not exist{more}"
        return None


@dataclass(frozen=True)
class FileAt:
    path: str
    negated: bool = False

    def describe(self) -> str:
        return f"file {_quote(self.path)} {'does not exist' if self.negated else 'exists'}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path) -> str | None:
        exists = _resolve(rootdir, self.path).exists()
        if exists == self.negated:
            return f"file {_quote(self.path)} {'exists' if exists else 'does not exist'}"
        return None


Clause = ExitCode | OutputContains | OutputMatches | OutputEmpty | PrintedPathsExist | FileAt


@dataclass(frozen=True)
class Condition:
    """All clauses must hold. Carries an implicit ``exit code 0`` unless one names a code."""

    clauses: tuple[Clause, ...]

    def describe(self) -> str:
        return " and ".join(clause.describe() for clause in self.clauses)

    def check(self, exit_code: int, stdout: str, rootdir: Path) -> Check:
        found = [clause.actual(exit_code, stdout, rootdir) for clause in self.clauses]
        failures = [text for text in found if text is not None]
        if failures:
            return Check(False, self.describe(), "; ".join(failures))
        return Check(True, self.describe(), f"exit code {exit_code}; every condition holds")


# --- parsing -----------------------------------------------------------------------------

_KEYWORD_START = r"(?:exit\s+code|exits\s+with|output|file)\b"
_CLAUSE_SEPARATOR = re.compile(rf"\s+and\s+(?={_KEYWORD_START})", re.IGNORECASE)
_ARG = r"(?:\s+(?P<arg>.*?))?"

# (pattern, builder): the builder turns the clause's argument (or None) into a clause.
_Builder = Callable[[str | None, str], Clause | None]


def _exit_code(arg: str | None, clause: str) -> Clause | None:
    if arg is not None and re.fullmatch(r"-?\d+", arg):
        return ExitCode(int(arg))
    if arg is not None and re.match(r"-?\d+\s", arg):
        return None  # "exit code 0 within a second": natural language, for an agent
    raise _error(clause, 'an exit code must be a whole number; write e.g. "exit code 0"')


def _needs(arg: str | None, clause: str, example: str) -> str:
    if not arg:
        raise _error(clause, f"needs an argument; write e.g. {example}")
    return arg


def _file_without_path(arg: str | None, clause: str) -> Clause:
    raise _error(clause, 'needs the path; write e.g. "file build/tmp does not exist"')


def _matches(arg: str | None, clause: str) -> Clause:
    pattern = _needs(arg, clause, '"output matches ^ok$"')
    try:
        return OutputMatches(re.compile(pattern, re.MULTILINE))
    except re.error as error:
        raise _error(
            clause,
            f"{_quote(pattern)} is not a valid Python regular expression ({error}); "
            'fix it, or use "output contains X" for plain text',
        ) from None


_CLAUSES: tuple[tuple[re.Pattern[str], _Builder], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE | re.DOTALL), builder)
    for pattern, builder in (
        (rf"exit\s+code(?:\s+is)?{_ARG}", _exit_code),
        (rf"exits\s+with(?:\s+code)?{_ARG}", _exit_code),
        (
            rf"output\s+does\s+not\s+contain{_ARG}",
            lambda arg, clause: OutputContains(
                _needs(arg, clause, '"output does not contain Traceback"'), negated=True
            ),
        ),
        (
            rf"output\s+contains{_ARG}",
            lambda arg, clause: OutputContains(_needs(arg, clause, '"output contains ok"')),
        ),
        (rf"output\s+matches{_ARG}", _matches),
        (r"output\s+is\s+empty", lambda arg, clause: OutputEmpty()),
        (r"output\s+is\s+not\s+empty", lambda arg, clause: OutputEmpty(negated=True)),
        (r"file\s+exists", lambda arg, clause: PrintedPathsExist()),
        (r"file\s+does\s+not\s+exist", _file_without_path),
        (r"file\s+(?P<arg>.+?)\s+does\s+not\s+exist", lambda arg, c: FileAt(arg or "", True)),
        (r"file\s+(?P<arg>.+?)\s+exists", lambda arg, c: FileAt(arg or "")),
    )
)


@functools.lru_cache(maxsize=1024)  # parsed at collection and again at run time
def parse_condition(text: str | None) -> Condition | NaturalLanguage:
    """Parse a ``pass_condition``. Raises ConditionError for malformed vocabulary."""
    text = (text or "").strip()
    if not text:
        return Condition((ExitCode(0),))
    clauses: list[Clause] = []
    for raw in _split_clauses(text):
        clause = _parse_clause(raw)
        if clause is None:
            return NaturalLanguage(text)
        clauses.append(clause)
    codes = {clause.code for clause in clauses if isinstance(clause, ExitCode)}
    if len(codes) > 1:
        raise _error(text, 'names more than one exit code; keep one, e.g. "exit code 0"')
    if not codes:
        clauses.insert(0, ExitCode(0))
    return Condition(tuple(dict.fromkeys(clauses)))


def _split_clauses(text: str) -> list[str]:
    """Split at `` and <phrase>`` outside quotes."""
    parts: list[str] = []
    start = 0
    for match in _CLAUSE_SEPARATOR.finditer(text):
        if _inside_quotes(text[start : match.start()]):
            continue
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    return [part.strip() for part in parts]


def _inside_quotes(prefix: str) -> bool:
    """True if ``prefix`` (a clause so far) ends inside a quoted argument.

    A quote opens only at the start of a word and closes only at the end of one, so the
    apostrophe of an unquoted ``don't`` opens nothing.
    """
    quote: str | None = None
    for index, char in enumerate(prefix):
        before = prefix[index - 1] if index else " "
        after = prefix[index + 1] if index + 1 < len(prefix) else " "
        if quote is None and char in "'\"" and before.isspace():
            quote = char
        elif char == quote and after.isspace():
            quote = None
    return quote is not None


def _parse_clause(raw: str) -> Clause | None:
    for pattern, builder in _CLAUSES:
        match = pattern.fullmatch(raw)
        if match:
            arg = match.groupdict().get("arg")
            return builder(None if arg is None else _unquote(arg, raw), raw)
    return None


def _unquote(arg: str, clause: str) -> str:
    arg = arg.strip()
    if arg[:1] in ("'", '"'):
        if len(arg) < 2 or arg[-1] != arg[0]:
            raise _error(clause, f"the quote {arg[0]} is not closed; end the argument with it")
        arg = arg[1:-1]
        if not arg:
            raise _error(clause, "the quoted argument is empty; put the text between the quotes")
    return arg
