"""Checks an author states in prose: "Done when `make lint` exits 0", "`pytest -q` passes",
"`git status --short` prints nothing", "... Deterministic gate.".

Conservative by design: a command counts only when it is in backticks and a pass phrase
follows it directly ("exits 0", "exits with code 2", "passes", "succeeds", "prints
nothing", "prints `ok`"), and never inside a condition ("WHEN `x` succeeds THEN ...": that
is a trigger, not a check; after THEN it is the outcome: "Given ..., Then `x` exits 0").
"Judgment gate." always means an agent. Whatever is chosen, and
why, goes into ``Choice.how``, which the collection line shows: nothing is guessed silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_acceptance.model import Method

_SPAN = r"`(?P<{name}>[^`\n]+)`"
_SPANS = re.compile(r"`([^`\n]+)`")
# One command, or several joined by "and" / commas ("`a` and `b` both pass").
_COMMANDS = (
    _SPAN.format(name="first")
    + r"(?P<more>(?:\s*(?:,\s*(?:and\s+)?|and\s+)`[^`\n]+`)*)"
    + r"\s+(?:(?:both|all|each|also|then|still)\s+)?"
)
_EXIT_ZERO = (
    r"(?:exits?|returns?)\s+(?:with\s+)?(?:(?:an?\s+)?(?:exit\s+)?(?:code|status)\s+(?:of\s+)?)?0"
    r"|exits?\s+(?:successfully|cleanly)|succeeds?|pass(?:es)?|(?:is|are)\s+green"
)
_EXIT_CODE = (
    r"(?:exits?|returns?)\s+(?:with\s+)?(?:(?:an?\s+)?(?:exit\s+)?(?:code|status)\s+(?:of\s+)?)?"
    r"(?P<code>[1-9][0-9]{0,2})"
)
_SILENT = (
    r"(?:prints?|outputs?|produces?|reports?|writes?|shows?)\s+nothing"
    r"|(?:prints?|outputs?|produces?)\s+no\s+output|(?:is|are)\s+silent"
)
_PRINTS = r"(?:prints?|outputs?)\s+(?:`(?P<shown>[^`\n]+)`|\"(?P<quoted>[^\"\n]+)\")"
# What may follow a pass phrase: the end of the clause, or a preposition ("passes on a
# clean checkout"); "passes the input to" is a verb with an object, not a check.
_END = (
    r"(?=\s*(?:$|[.;:,)!]|(?:and|on|in|with|when|for|against|under|from|after|before|"
    r"without|within|at|locally|again|too)\b))"
)
_STATED = re.compile(
    _COMMANDS
    + rf"(?:(?:(?P<zero>{_EXIT_ZERO})|{_EXIT_CODE}|(?P<silent>{_SILENT}))\b|{_PRINTS})"
    + _END,
    re.IGNORECASE,
)
# A trigger, not a check: "WHEN `x` succeeds", "If `lint` passes", "Given `a` exits 0"
# ("Done when `x` passes" is a check: only EARS capitals, or a clause that opens with one).
_CONDITION = re.compile(r"\b(?:WHEN|IF|WHILE|WHERE|GIVEN|AFTER|UNLESS|UNTIL)\b")
_CONDITION_OPENING = re.compile(
    r"[\s*_]*(?:-\s+)?[\s*_]*(?:when|if|while|where|given|after|once|unless|until)\b", re.I
)
_SENTENCE_START = re.compile(r"(?:^|[.!?;]\s|\n)")
# "Given ..., When ..., Then `x` exits 0": what follows THEN is the outcome, a check.
_OUTCOME = re.compile(r"\bthen\b[\s*_,]*", re.IGNORECASE)
_DETERMINISTIC = re.compile(r"\bDeterministic gate\b", re.IGNORECASE)
_JUDGMENT = re.compile(r"\bJudgment gate\b", re.IGNORECASE)
_COMMAND_WORD = re.compile(r"[A-Za-z0-9_./~$-][^\s()]*(?:\s|\Z)")


class StatedCheckError(ValueError):
    """Prose that promises a runnable check but does not name one."""


@dataclass(frozen=True)
class Choice:
    """How a criterion written in prose is verified, and the words that say why."""

    method: Method
    how: str
    command: str | None = None
    pass_condition: str | None = None


@dataclass(frozen=True)
class _Stated:
    commands: tuple[str, ...]
    condition: str | None  # None: exit code 0


def choose(prose: Sequence[str]) -> Choice:
    """The method of a criterion from its own markdown (title, text, steps; not context).
    Raises ``StatedCheckError`` for a "Deterministic gate." that names no command."""
    if any(_JUDGMENT.search(text) for text in prose):
        return Choice(Method.SUBAGENT, "agent: Judgment gate")
    stated = [found for text in prose for found in stated_checks(text)]
    if stated:
        return _from_stated(stated)
    gate = next((text for text in prose if _DETERMINISTIC.search(text)), None)
    if gate is not None:
        commands = _gate_commands(gate)
        if not commands:
            raise StatedCheckError(
                "says Deterministic gate but names no command with a pass phrase: write it "
                'like "Done when `make test` exits 0. Deterministic gate."'
            )
        command = " && ".join(commands)
        how = f"bash: `{command}`, exit code 0, a Deterministic gate"
        return Choice(Method.BASH, how, command)
    return Choice(Method.SUBAGENT, "agent: no runnable check stated")


def stated_checks(text: str) -> list[_Stated]:
    """The checks ``text`` (inline markdown) states, in order."""
    found = []
    for match in _STATED.finditer(text):
        if _in_condition(text, match.start()):
            continue
        commands = (match["first"].strip(), *_SPANS.findall(match["more"] or ""))
        if not all(_COMMAND_WORD.match(command) for command in commands):
            continue
        found.append(_Stated(tuple(c.strip() for c in commands), _condition(match)))
    return found


def _in_condition(text: str, start: int) -> bool:
    """Whether the clause holding ``start`` is a condition ("WHEN `x` succeeds, ...")."""
    sentence = max((m.end() for m in _SENTENCE_START.finditer(text, 0, start)), default=0)
    clause = text[sentence:start]
    outcomes = list(_OUTCOME.finditer(clause))
    if outcomes:
        clause = clause[outcomes[-1].end() :]
    return _CONDITION.search(clause) is not None or _CONDITION_OPENING.match(clause) is not None


def _condition(match: re.Match[str]) -> str | None:
    if match["zero"]:
        return None
    if match["code"]:
        return f"exit code {match['code']}"
    if match["silent"]:
        return "output is empty"
    shown = match["shown"] or match["quoted"] or ""
    return f"output contains {_quoted(shown)}"


def _quoted(text: str) -> str:
    return "'" + text + "'" if "'" not in text else '"' + text + '"'


def _from_stated(stated: list[_Stated]) -> Choice:
    conditions = {s.condition for s in stated}
    commands = tuple(c for s in stated for c in s.commands)
    if conditions == {None}:
        return _bash(" && ".join(commands), None)
    if len(stated) == 1 and len(commands) == 1:
        return _bash(commands[0], stated[0].condition)
    return Choice(
        Method.SUBAGENT,
        "agent: the prose states several commands with different pass conditions",
    )


def _bash(command: str, condition: str | None) -> Choice:
    how = f"bash: `{command}`, {condition or 'exit code 0'}, as the prose states"
    return Choice(Method.BASH, how, command, condition)


def _gate_commands(gate: str) -> list[str]:
    """The command of a "Deterministic gate." with no pass phrase: the spans right after the
    phrase ("Deterministic gate. `grep -q X f`"); a span elsewhere may name a file or a key."""
    after = _SPANS.findall(gate[_DETERMINISTIC.search(gate).end() :])  # type: ignore[union-attr]
    return [c.strip() for c in after]
