"""The top-level modules a Python source asks to import, read from its text without running
it: every ``import`` and ``from`` statement, wherever it stands (a function's, an ``except``
branch's, one never reached on this platform, one after ``;`` or a compound statement's
``:`` on the same line, one continued over lines with ``\\``), and
``__import__``/``import_module`` calls naming a module outright.

The names serve a refusal (a new project module must not take one), so every statement
Python would run counts, and more is read than Python would: a line of a docstring that is
an import statement counts too. A line that only starts like one (``import the file``,
``from the start``) is no statement of Python's grammar, and counts for nothing: read as
one, it would refuse an honest new module named ``the``, ``system`` or ``internal``.

Standard library only: the gate's stdlib zone imports it.
"""

from __future__ import annotations

import re

from pytest_acceptance.tree.hostile import read_regular

# A `\` line end continues a statement. Each pattern starts with a literal, which is fast to
# search for; whether a statement can start there is checked then (_starts_statement).
_GAP = r"(?:[ \t\f]|\\\r?\n)"
_NAME = r"[^\W\d]\w*"
_IMPORT = re.compile(r"import" + _GAP + r"+((?:[^\n#;\\]|\\\r?\n)+)")
_FROM = re.compile(rf"from{_GAP}+({_NAME})(?:{_GAP}*\.{_GAP}*{_NAME})*{_GAP}+import\b")
# ``__import__("x")`` and ``import_module("x")``, found by what both hold.
_CALL = re.compile(r"""import(?:__|_module)\(\s*['"]([^\W\d]\w*)""")
_DOTS = re.compile(r"\s*\.\s*")
_SOURCE_LIMIT = 1 << 26  # a source file past 64 MB is no module's


def asked_names(paths: list[str]) -> set[str]:
    """The top-level names the sources at ``paths`` ask to import (OSError: one of them
    cannot be read, or is no source file)."""
    names: set[str] = set()
    for path in paths:
        names |= names_in(read_regular(path, _SOURCE_LIMIT).decode("utf-8", "surrogateescape"))
    return names


def names_in(text: str) -> set[str]:
    """The top-level names the source ``text`` asks to import."""
    names = {found.group(1) for found in _FROM.finditer(text) if _starts_statement(text, found)}
    for statement in _IMPORT.finditer(text):
        if _starts_statement(text, statement):
            names |= _imported(statement.group(1))
    names.update(call.group(1) for call in _CALL.finditer(text))
    return {name for name in names if name.isidentifier()}


def _starts_statement(text: str, found: re.Match[str]) -> bool:
    """Whether a simple statement can start where ``found`` does: at a line's start (after
    its indentation), after a `;`, or after the `:` of a compound statement on the same
    line, as after ``try:``)."""
    index = found.start()
    while index and text[index - 1] in " \t\f":
        index -= 1
    return not index or text[index - 1] in "\n;:"


def _imported(listed: str) -> set[str]:
    """The top-level names of ``import a.b as c, d``'s list; none when the list is not one
    of Python's grammar (``import the file``: prose, never a statement)."""
    names = set()
    for part in listed.replace("\\\r\n", " ").replace("\\\n", " ").split(","):
        words = _DOTS.sub(".", part.strip()).split()
        if not words or (len(words) != 1 and (len(words) != 3 or words[1] != "as")):
            return set()
        dotted = words[0].split(".")
        if not all(name.isidentifier() for name in (*dotted, *words[2:])):
            return set()
        names.add(dotted[0])
    return names
