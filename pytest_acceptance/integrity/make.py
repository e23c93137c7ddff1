"""Makefiles: the recipe each named target runs, and which Makefile a ``make`` reads."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from .files import inside
from .findings import MAKE_READS

DEFAULT_GOAL = "(default goal)"
_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)", re.M)


def make_inventory(text: str, targets: Sequence[str]) -> dict[str, Any]:
    """The recipe of each named target (its tab-indented lines), as the scripts it runs."""
    recipes: dict[str, str] = {}
    lines = text.splitlines()
    default = None
    for number, line in enumerate(lines):
        match = _MAKE_RULE.match(line)
        if not match or line.startswith("\t"):
            continue
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
    return {f"make {name}": {"script": recipes.get(name)} for name in targets}


def makefiles(root: str, cwd: str, rest: list[str]) -> Iterator[tuple[str, str]]:
    given = [rest[i + 1] for i, word in enumerate(rest[:-1]) if word in ("-f", "--file")]
    for index, word in enumerate(rest[:-1]):
        if word in ("-C", "--directory"):
            cwd = inside(root, cwd, rest[index + 1], directory=True) or cwd
    if not given and not cwd:
        return  # the root's Makefile: pinned with the recipes of its targets (scripts_run)
    for name in given or ["GNUmakefile", "makefile", "Makefile"]:
        found = inside(root, cwd, name)
        if found:
            yield found, MAKE_READS
            if not given:
                return  # make reads the first of the default names it finds
