"""The top-level modules a Python source asks to import, read from its text without running
it: every ``import`` and ``from`` statement, wherever it stands (a function's, an ``except``
branch's, one never reached on this platform), and ``__import__``/``import_module`` calls
naming a module outright. A text line that only looks like a statement (in a docstring)
counts too: the names serve a refusal, so reading too many only refuses more.

Standard library only: the gate's stdlib zone imports it.
"""

from __future__ import annotations

import re

from pytest_acceptance.tree.hostile import read_regular

_STATEMENT = re.compile(rb"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)|import[ \t]+([^\n#;]+))", re.M)
_CALL = re.compile(rb"""\b(?:__import__|import_module)\(\s*['"]([A-Za-z_]\w*)""")
_SOURCE_LIMIT = 1 << 26  # a source file past 64 MB is no module's


def asked_names(paths: list[str]) -> set[str]:
    """The top-level names the sources at ``paths`` ask to import (OSError: one of them
    cannot be read, or is no source file)."""
    names: set[str] = set()
    for path in paths:
        text = read_regular(path, _SOURCE_LIMIT)
        for statement in _STATEMENT.finditer(text):
            if statement.group(1):
                names.add(statement.group(1).decode())
                continue
            for part in statement.group(2).split(b","):
                words = part.strip(b" \t\\()").split()
                if words:
                    names.add(words[0].split(b".")[0].decode("ascii", "replace"))
        names.update(call.group(1).decode() for call in _CALL.finditer(text))
    return {name for name in names if name.isidentifier()}
