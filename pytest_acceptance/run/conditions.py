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
``output matches REGEX``                  Python ``re.search(REGEX, stdout, re.MULTILINE)``,
                                          within the criterion's timeout
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

A regular expression search is stopped at the criterion's timeout (``regex_deadline``),
so a pattern that backtracks catastrophically fails the criterion instead of hanging it.
Parsing is linear in the length of the condition, and checking never copies the output.

A condition that only an agent can judge is asked for explicitly, with the prefix
``judge:`` (``judge: multiple commits with criterion references``): an agent judges the
text after it from the command, its exit code and its output; it is never reduced to the
exit code. Anything else outside the vocabulary is an error naming the closest phrase, so
a typo (``exitcode 0``, ``ouput contains 3 words``) never reaches a judge by accident.
There is no ``or``: ``exit code 5 or exit code 0`` is an error that says what to write.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_acceptance.run.regex_deadline import RegexTimeout, search_within

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

JUDGE_PREFIX = "judge:"
"""How a pass condition asks an agent to judge it: ``judge: the log names every id``."""


# Words that mean "the command succeeded": a test runner exits 0 when every test passes.
_SUCCESS_WORDS = frozenset(
    {"pass", "passes", "passed", "succeed", "succeeds", "success", "successful", "green", "ok"}
)
_SYNONYMS = {
    "stdout": "output",
    "prints": "output contains",
    "includes": "contains",
    "status": "code",
    "returns": "exit code",
    "return": "exit code",
    "blank": "empty",
    "the": "",
}
_CLOSE_ENOUGH = 0.75


def closest_phrase(text: str) -> str | None:
    """The vocabulary phrase a natural-language ``pass_condition`` most likely meant (for a
    did-you-mean), or None: ``exit status is 0`` -> ``exit code N``, ``all tests pass`` ->
    ``exit code 0``. Only the first few words are compared: cheap on any text."""
    said = " ".join(_SYNONYMS.get(word, word) for word in text.lower().split()[:8]).split()
    if not said:
        return None
    if said[0] == "file" and said[-1].startswith("exist"):
        return "file PATH does not exist" if "not" in said else "file PATH exists"
    best, score = None, _CLOSE_ENOUGH
    for phrase in VOCABULARY:
        head = [w for w in phrase.split() if not w.isupper()]  # without N, X, REGEX, PATH
        ratio = difflib.SequenceMatcher(None, " ".join(said[: len(head)]), " ".join(head))
        if ratio.ratio() > score:
            best, score = phrase, ratio.ratio()
    if best is None and _SUCCESS_WORDS & set(said):
        return "exit code 0"
    return best


class ConditionError(ValueError):
    """A pass_condition that uses the vocabulary but cannot be understood."""


def _error(clause: str, what: str) -> ConditionError:
    return ConditionError(f"pass_condition {_quote(clause)}: {what}")


@dataclass(frozen=True)
class NaturalLanguage:
    """A pass_condition that asks for a judge (``judge: TEXT``): an agent must judge
    ``text``, the words after the prefix."""

    text: str


@dataclass(frozen=True)
class Check:
    """Whether a command's result satisfies a condition, and what was expected/found."""

    passed: bool
    expected: str
    actual: str


# --- the clauses -------------------------------------------------------------------------


_QUOTED_LIMIT = 300  # characters of an argument repeated in a message
DEFAULT_REGEX_SECONDS = 300.0


def _quote(text: str) -> str:
    if len(text) > _QUOTED_LIMIT:
        text = text[: _QUOTED_LIMIT - 1] + "…"
    return f'"{text}"' if "'" in text else f"'{text}'"


_LINE = re.compile(r"[^\r\n]+")


def _exists(rootdir: Path, path: str) -> bool:
    try:
        return (rootdir / path).exists()  # an absolute path stays absolute
    except (OSError, ValueError):  # a NUL byte, a name too long: not an existing file
        return False


@dataclass(frozen=True)
class ExitCodeIs:
    code: int

    def describe(self) -> str:
        return f"exit code {self.code}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        return None if exit_code == self.code else f"exit code {exit_code}"


@dataclass(frozen=True)
class OutputContains:
    text: str
    negated: bool = False

    def describe(self) -> str:
        verb = "does not contain" if self.negated else "contains"
        return f"output {verb} {_quote(self.text)}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        at = stdout.find(self.text)
        if at >= 0 and self.negated:
            line = stdout.count("\n", 0, at) + 1
            return f"output contains {_quote(self.text)} (line {line})"
        found = at >= 0
        if not found and not self.negated:
            return f"output does not contain {_quote(self.text)}"
        return None


@dataclass(frozen=True)
class OutputMatches:
    pattern: re.Pattern[str]

    def describe(self) -> str:
        return f"output matches {_quote(self.pattern.pattern)}"

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        try:
            if search_within(self.pattern, stdout, seconds):
                return None
        except RegexTimeout as timeout:
            return (
                f"the search for {_quote(self.pattern.pattern)} {timeout} (the pattern "
                "backtracks catastrophically on this output: simplify it)"
            )
        return f"output does not match {_quote(self.pattern.pattern)}"


@dataclass(frozen=True)
class OutputEmpty:
    negated: bool = False

    def describe(self) -> str:
        return "output is not empty" if self.negated else "output is empty"

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        empty = not stdout or stdout.isspace()  # never a stripped copy of a huge output
        if empty and self.negated:
            return "output is empty"
        if not empty and not self.negated:
            lines = stdout.count("\n") + (not stdout.endswith("\n"))
            return f"output is not empty ({lines} lines)"
        return None


@dataclass(frozen=True)
class PrintedPathsExist:
    """``file exists``: the command's output names existing paths, and nothing else."""

    def describe(self) -> str:
        return "file exists (the output names at least one existing path)"

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        paths = (line[0].strip() for line in _LINE.finditer(stdout))
        printed = False
        missing: list[str] = []
        for path in paths:
            if path:
                printed = True
                if not _exists(rootdir, path):
                    missing.append(path)
        if not printed:
            return "the command printed no path"
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

    def actual(self, exit_code: int, stdout: str, rootdir: Path, seconds: float) -> str | None:
        exists = _exists(rootdir, self.path)
        if exists == self.negated:
            return f"file {_quote(self.path)} {'exists' if exists else 'does not exist'}"
        return None


Clause = ExitCodeIs | OutputContains | OutputMatches | OutputEmpty | PrintedPathsExist | FileAt


@dataclass(frozen=True)
class Condition:
    """All clauses must hold. Carries an implicit ``exit code 0`` unless one names a code."""

    clauses: tuple[Clause, ...]

    def describe(self) -> str:
        return " and ".join(clause.describe() for clause in self.clauses)

    def check(
        self, exit_code: int, stdout: str, rootdir: Path, seconds: float = DEFAULT_REGEX_SECONDS
    ) -> Check:
        """``seconds`` bounds each regular expression search (the criterion's timeout)."""
        found = [clause.actual(exit_code, stdout, rootdir, seconds) for clause in self.clauses]
        failures = [text for text in found if text is not None]
        if failures:
            return Check(False, self.describe(), "; ".join(failures))
        return Check(True, self.describe(), f"exit code {exit_code}; every condition holds")


# --- parsing -----------------------------------------------------------------------------

_KEYWORD_START = r"(?:exit\s+code|exits\s+with|output|file)\b"
# The lookbehind lets only the start of a white-space run try a separator: without it,
# every position of a long run would rescan the rest of it (quadratic).
_CLAUSE_SEPARATOR = re.compile(rf"(?<!\s)\s+and\s+(?={_KEYWORD_START})", re.IGNORECASE)
# "exit code 5 or exit code 0", "exit code 5 or 0": an alternative the vocabulary lacks.
_ALTERNATIVE = re.compile(rf"(?<!\s)\s+or\s+(?={_KEYWORD_START})", re.IGNORECASE)
_JUDGE = re.compile(r"judge\s*:", re.IGNORECASE)

# A builder turns the clause's argument (or None) into a clause.
_Builder = Callable[[str | None, str], Clause | None]


def _exit_code(arg: str | None, clause: str) -> Clause | None:
    number = re.match(r"-?\d+", arg or "")
    if number is not None and len(number[0]) > 12:
        raise _error(clause, "the exit code is not a number a process can exit with")
    if arg is not None and number is not None and number.end() == len(arg):
        return ExitCodeIs(int(arg))
    if arg is not None and number is not None and arg[number.end()].isspace():
        if re.match(r"\s+or\b", arg[number.end() :], re.IGNORECASE):
            raise _no_alternative(clause)  # "exit code 5 or 0"
        return None  # "exit code 0 within a second": outside the vocabulary
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
    except (re.error, OverflowError, RecursionError) as error:
        raise _error(
            clause,
            f"{_quote(pattern)} is not a valid Python regular expression ({error}); "
            'fix it, or use "output contains X" for plain text',
        ) from None


@dataclass(frozen=True)
class _Phrase:
    r"""``head ARG`` (``takes`` "rest"), ``head ARG tail`` ("middle") or the head alone.

    Heads are matched at the start and the tail's words at the end, never one regex over
    the whole clause: ``.*?`` between two ``\s+`` backtracks quadratically on long blanks.
    """

    heads: tuple[re.Pattern[str], ...]
    builder: _Builder
    takes: str = "rest"  # rest | middle | nothing
    tail: tuple[str, ...] = ()


def _phrase(heads: str, builder: _Builder, takes: str = "rest", tail: str = "") -> _Phrase:
    patterns = tuple(re.compile(head, re.IGNORECASE) for head in heads.split("|"))
    return _Phrase(patterns, builder, takes, tuple(tail.split()))


_PHRASES: tuple[_Phrase, ...] = (
    _phrase(r"exit\s+code\s+is|exit\s+code", _exit_code),
    _phrase(r"exits\s+with\s+code|exits\s+with", _exit_code),
    _phrase(
        r"output\s+does\s+not\s+contain",
        lambda arg, clause: OutputContains(
            _needs(arg, clause, '"output does not contain Traceback"'), negated=True
        ),
    ),
    _phrase(
        r"output\s+contains",
        lambda arg, clause: OutputContains(_needs(arg, clause, '"output contains ok"')),
    ),
    _phrase(r"output\s+matches", _matches),
    _phrase(r"output\s+is\s+empty", lambda arg, clause: OutputEmpty(), "nothing"),
    _phrase(r"output\s+is\s+not\s+empty", lambda arg, c: OutputEmpty(negated=True), "nothing"),
    _phrase(r"file\s+exists", lambda arg, clause: PrintedPathsExist(), "nothing"),
    _phrase(r"file\s+does\s+not\s+exist", _file_without_path, "nothing"),
    _phrase(r"file", lambda arg, c: FileAt(arg or "", True), "middle", "does not exist"),
    _phrase(r"file", lambda arg, c: FileAt(arg or ""), "middle", "exists"),
)


@functools.lru_cache(maxsize=1024)  # parsed at collection and again at run time
def parse_condition(text: str | None) -> Condition | NaturalLanguage:
    """Parse a ``pass_condition``. Raises ConditionError for malformed vocabulary."""
    text = (text or "").strip()
    if not text:
        return Condition((ExitCodeIs(0),))
    judge = _JUDGE.match(text)
    if judge is not None:
        return _judged(text, text[judge.end() :].strip())
    clauses: list[Clause] = []
    for raw in _split_clauses(text):
        _refuse_alternatives(raw)
        clause = _parse_clause(raw)
        if clause is None:
            raise _outside_vocabulary(text, raw)
        clauses.append(clause)
    codes = {clause.code for clause in clauses if isinstance(clause, ExitCodeIs)}
    if len(codes) > 1:
        raise _error(text, 'names more than one exit code; keep one, e.g. "exit code 0"')
    if not codes:
        clauses.insert(0, ExitCodeIs(0))
    return Condition(tuple(dict.fromkeys(clauses)))


def _judged(text: str, asked: str) -> NaturalLanguage:
    if not asked:
        example = '"judge: the log is clean"'
        raise _error(text, f'says what to judge after "judge:"; write e.g. {example}')
    return NaturalLanguage(asked)


def _outside_vocabulary(text: str, clause: str) -> ConditionError:
    """The error of a clause outside the vocabulary: the closest phrase, and the explicit
    way to have an agent judge the text instead."""
    guess = closest_phrase(clause)
    hint = f'did you mean "{guess}"? ' if guess else ""
    where = "" if clause == text else f" ({_quote(clause)})"
    return _error(
        text,
        f"is not in the vocabulary{where}: {hint}write one of {VOCABULARY_HINT}; or, for an "
        f"agent to judge it, write {_quote(JUDGE_PREFIX + ' ' + text)}",
    )


def _refuse_alternatives(clause: str) -> None:
    """``or`` between phrases is not in the vocabulary: refused, never read as the text of
    an argument (``output contains a or output contains b``) nor sent to a judge."""
    quote: str | None = None
    scanned = 0
    for match in _ALTERNATIVE.finditer(clause):  # the quote state carried along: linear
        quote = _quote_state(clause, 0, scanned, match.start(), quote)
        scanned = match.start()
        if quote is None:
            raise _no_alternative(clause)


def _no_alternative(clause: str) -> ConditionError:
    return _error(
        clause,
        '"or" is not in the vocabulary: every phrase must hold (join them with " and"); to '
        "accept one of several exit codes, let the command decide, e.g. command "
        "'cmd; c=$?; [ $c -eq 0 ] || [ $c -eq 5 ]' with \"exit code 0\"",
    )


def _split_clauses(text: str) -> list[str]:
    """Split at `` and <phrase>`` outside quotes, in one pass over the text.

    A quote opens only at the start of a word and closes only at the end of one, so the
    apostrophe of an unquoted ``don't`` opens nothing.
    """
    parts: list[str] = []
    start = scanned = 0
    quote: str | None = None
    for match in _CLAUSE_SEPARATOR.finditer(text):
        quote = _quote_state(text, start, scanned, match.start(), quote)
        scanned = match.start()
        if quote is not None:
            continue
        parts.append(text[start : match.start()])
        start = scanned = match.end()
    parts.append(text[start:])
    return [part.strip() for part in parts]


def _quote_state(text: str, start: int, begin: int, end: int, quote: str | None) -> str | None:
    """The open quote after ``text[begin:end]``, given the one open at ``begin``; the
    clause starts at ``start`` (its first character follows a virtual blank)."""
    for index in range(begin, end):
        char = text[index]
        if char not in "'\"":
            continue
        before = text[index - 1] if index > start else " "
        after = text[index + 1] if index + 1 < end else " "
        if quote is None and before.isspace():
            quote = char
        elif char == quote and after.isspace():
            quote = None
    return quote


def _parse_clause(raw: str) -> Clause | None:
    for phrase in _PHRASES:
        found = _phrase_argument(phrase, raw)
        if found is not None:
            arg = found or None
            return phrase.builder(None if arg is None else _unquote(arg, raw), raw)
    return None


def _phrase_argument(phrase: _Phrase, raw: str) -> str | None:
    """The argument when ``raw`` is this phrase ("" for none), else None."""
    for head in phrase.heads:
        match = head.match(raw)
        if match is None:
            continue
        rest = raw[match.end() :]
        if rest and not rest[0].isspace():
            continue  # "exit codes", "output containsx": another word
        if phrase.takes == "nothing":
            if rest.strip():
                continue
            return ""
        if phrase.takes == "middle":
            middle = _without_tail(rest, phrase.tail)
            if middle:
                return middle
            continue
        return rest.strip()
    return None


def _without_tail(text: str, words: tuple[str, ...]) -> str | None:
    """``text`` without its last ``words`` (white space between them), stripped; None
    when it does not end so, or nothing is left before them."""
    for word in reversed(words):
        text = text.rstrip()
        if text[-len(word) :].lower() != word or not text[: -len(word)][-1:].isspace():
            return None
        text = text[: -len(word)]
    return text.strip() or None


def _unquote(arg: str, clause: str) -> str:
    arg = arg.strip()
    if arg[:1] in ("'", '"'):
        if len(arg) < 2 or arg[-1] != arg[0]:
            raise _error(clause, f"the quote {arg[0]} is not closed; end the argument with it")
        arg = arg[1:-1]
        if not arg:
            raise _error(clause, "the quoted argument is empty; put the text between the quotes")
    return arg
