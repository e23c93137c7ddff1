"""Makefiles: the recipe each named target runs, and which Makefile a ``make`` reads.

A recipe is read with the Makefile's simple variables expanded (``VAR = value``, ``:=``,
``::=``, ``?=``, ``+=``; ``make VAR=value`` in the command wins, as in make), so that
``pytest $(TESTS)`` is followed as the ``pytest tests/`` it runs. A variable defined inside a
conditional, by the shell (``!=``), by ``define`` or for one target, make functions
(``$(shell ...)``, ``$(wildcard ...)``) and undefined variables stay as written: the Makefile
itself is pinned by hash, so any change to them reports all the same."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from typing import Any

from pytest_acceptance.tree.shell import MAKEFILE_NAMES

from .files import inside
from .findings import MAKE_READS

DEFAULT_GOAL = "(default goal)"
_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)", re.M)


_ASSIGNMENT = re.compile(
    r"^(?P<override>(?:(?:override|export)\s+)*)(?P<name>[A-Za-z_][\w.-]*)\s*"
    r"(?P<op>:::=|::=|:=|\?=|\+=|!=|=)\s*(?P<value>.*)$"
)
_CONDITIONAL = re.compile(r"^\s*(?:ifeq|ifneq|ifdef|ifndef)\b")
_END_CONDITIONAL = re.compile(r"^\s*endif\b")
_DEFINE = re.compile(r"^\s*(?:(?:override|export)\s+)*define\s+([A-Za-z_][\w.-]*)")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
_MAX_EXPANSION = 10  # nested references followed; deeper (or self-referencing) stay as written


def make_inventory(text: str, targets: Sequence[str]) -> dict[str, Any]:
    """The recipe of each named target (its tab-indented lines, variables expanded), as the
    scripts it runs. A name may carry the command's assignments: ``test 'ARGS=-x'``."""
    recipes = _recipes(text)
    variables = _variables(text)
    inventory: dict[str, Any] = {}
    for name in targets:
        target, assignments = _target_and_assignments(name)
        recipe = recipes.get(target)
        if recipe is not None:
            known = {**variables, **_unless_overridden(assignments, text)}
            recipe = expand(recipe, known, "" if target == DEFAULT_GOAL else target)
        inventory[f"make {name}"] = {"script": recipe}
    return inventory


def target_name(target: str, assignments: Sequence[str]) -> str:
    """A target with the command line's ``VAR=value`` assignments, as one name."""
    return shlex.join([target, *assignments]) if assignments else target


def _target_and_assignments(name: str) -> tuple[str, dict[str, str]]:
    try:
        words = shlex.split(name) if "=" in name else [name]
    except ValueError:
        words = [name]
    assignments = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    return (words[0] if words else name), assignments


def _unless_overridden(assignments: dict[str, str], text: str) -> dict[str, str | None]:
    """Command-line values, but for variables the Makefile sets with ``override``."""
    overridden = {
        match.group("name")
        for match in map(_ASSIGNMENT.match, _logical_lines(text))
        if match and match.group("override").strip().startswith("override")
    }
    return {name: value for name, value in assignments.items() if name not in overridden}


def _logical_lines(text: str) -> list[str]:
    """The lines that are not recipe lines, backslash-continued lines joined (as make joins
    them, with one space)."""
    joined = re.sub(r"\\\n[ \t]*", " ", text)
    return [line for line in joined.splitlines() if not line.startswith("\t")]


def _variables(text: str) -> dict[str, str | None]:
    """The Makefile's variables: raw values (expanded when used), None when this reading
    cannot know the value (conditional, shell, define, target-specific)."""
    variables: dict[str, str | None] = {}
    depth = 0
    for line in _logical_lines(text):
        if _CONDITIONAL.match(line):
            depth += 1
            continue
        if _END_CONDITIONAL.match(line):
            depth = max(depth - 1, 0)
            continue
        define = _DEFINE.match(line)
        if define:
            variables[define.group(1)] = None
            continue
        match = _ASSIGNMENT.match(line)  # before rules: "VAR ::= x" also looks like one
        if match:
            _assign(variables, match, depth > 0)
            continue
        rule = _MAKE_RULE.match(line)
        specific = _ASSIGNMENT.match(line[rule.end() :].strip()) if rule else None
        if specific:  # target: VAR = value (that target's own value)
            variables[specific.group("name")] = None
    return variables


def _assign(variables: dict[str, str | None], match: re.Match[str], unsure: bool) -> None:
    name, op, value = match.group("name"), match.group("op"), match.group("value")
    value = re.sub(r"(?<!\\)#.*$", "", value).rstrip()  # a comment ends the value
    known = name in variables
    if unsure or op == "!=" or (known and variables[name] is None):
        variables[name] = None
    elif op == "?=":
        variables.setdefault(name, value)
    elif op == "+=":
        old = variables.get(name)
        variables[name] = f"{old} {value}" if old else value
    elif op == "=":
        variables[name] = value
    else:  # := ::= :::= expand now
        variables[name] = expand(value, variables, "")


def expand(text: str, variables: dict[str, str | None], target: str, depth: int = 0) -> str:
    """``text`` with the known ``$(VAR)``/``${VAR}`` references replaced, ``$@`` with the
    target and ``$$`` with ``$``; everything else as written."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        following = text[index + 1 : index + 2]
        if char != "$" or not following:
            out.append(char)
            index += 1
        elif following in "$@":
            out.append("$" if following == "$" else target or "$@")
            index += 2
        elif following in "({":
            end = _closing(text, index + 1)
            reference = text[index : end + 1]
            value = (
                variables.get(reference[2:-1]) if _VARIABLE_NAME.match(reference[2:-1]) else None
            )
            if value is not None and depth < _MAX_EXPANSION:
                reference = expand(value, variables, target, depth + 1)
            out.append(reference)
            index = end + 1
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at ``start`` (the end when unbalanced)."""
    opening = text[start]
    closing = ")" if opening == "(" else "}"
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    return len(text) - 1


def _recipes(text: str) -> dict[str, str]:
    """Each target's recipe (its tab-indented lines), and the default goal's."""
    recipes: dict[str, str] = {}
    lines = text.splitlines()
    default = None
    for number, line in enumerate(lines):
        match = _MAKE_RULE.match(line)
        if not match or line.startswith("\t") or _ASSIGNMENT.match(line):
            continue
        if _ASSIGNMENT.match(line[match.end() :].strip()):
            continue  # a target-specific variable, not a rule
        recipe = []
        for following in lines[number + 1 :]:
            if not following.startswith("\t"):
                break
            recipe.append(following.strip())
        for name in match.group(1).split():
            recipes.setdefault(name, "\n".join(recipe))
            if default is None and not name.startswith("."):
                default = name
    if default is not None:
        recipes.setdefault(DEFAULT_GOAL, recipes[default])
    return recipes


def makefiles(root: str, cwd: str, rest: list[str]) -> Iterator[tuple[str, str]]:
    given = [rest[i + 1] for i, word in enumerate(rest[:-1]) if word in ("-f", "--file")]
    for index, word in enumerate(rest[:-1]):
        if word in ("-C", "--directory"):
            cwd = inside(root, cwd, rest[index + 1], directory=True) or cwd
    if not given and not cwd:
        return  # the root's Makefile: pinned with the recipes of its targets (scripts_run)
    for name in given or list(MAKEFILE_NAMES):
        found = inside(root, cwd, name)
        if found:
            yield found, MAKE_READS
            if not given:
                return  # make reads the first of the default names it finds
