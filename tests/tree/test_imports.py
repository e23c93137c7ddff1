"""The modules a source asks to import, read from its text (pytest_acceptance/tree/imports.py).

Every name an import statement of Python's grammar asks for is found, wherever and however
the statement is written: its names decide which new project modules the gate refuses, so
one missed is a stand-in let through. A line of prose that only starts like a statement
asks for nothing: read as one, it would refuse an honest new module of that name.
"""

from __future__ import annotations

import ast
import keyword
import sysconfig
from pathlib import Path

import _pytest
import pluggy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.tree.imports import asked_names, names_in


def asked_by_python(source: str) -> set[str]:
    """The top-level names Python's own parser finds in the import statements of `source`."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
)
dotted = st.lists(names, min_size=1, max_size=3)
# Between two words of a statement: spaces, a tab, a `\` continuation.
gaps = st.sampled_from([" ", "  ", "\t", " \\\n    ", "\\\n "])
dots = st.sampled_from([".", " . ", ".\\\n"])


@st.composite
def statements(draw: st.DrawFn) -> str:
    gap = draw(gaps)
    if draw(st.booleans()):
        parts = []
        for path in draw(st.lists(dotted, min_size=1, max_size=3)):
            part = draw(dots).join(path)
            if draw(st.booleans()):
                part += f"{gap}as{gap}{draw(names)}"
            parts.append(part)
        return f"import{gap}" + f",{draw(gaps)}".join(parts)
    module = draw(dots).join(draw(dotted))
    listed = ", ".join(draw(st.lists(names, min_size=1, max_size=3)))
    if draw(st.booleans()):
        listed = f"({listed},\n    )"
    return f"from{gap}{module}{gap}import{gap}{listed}"


# Where a statement can stand: its own line, indented in a block, after `;`, after a
# compound statement's `:`, in a branch never taken; the line ending in a comment.
PLACES = [
    "{0}\n",
    "def f():\n    x = 1\n    {0}\n",
    "x = 1; {0}\n",
    "x = 1 ;{0} ; y = 2\n",
    "if x: {0}\n",
    "try: {0}\nexcept ImportError: pass\n",
    "class C:\n    if sys.platform == 'win32':\n        {0}  # only there\n",
    "while False: {0}\n",
]


@given(st.lists(statements(), min_size=1, max_size=4), st.sampled_from(PLACES), st.booleans())
def test_every_name_a_statement_asks_for_is_found(
    written: list[str], place: str, crlf: bool
) -> None:
    source = "".join(place.format(statement) for statement in written)
    if crlf:
        source = source.replace("\n", "\r\n")
    assert asked_by_python(source) <= names_in(source), source


def test_every_name_an_installed_modules_statements_ask_for_is_found() -> None:
    """The real thing: pytest's and pluggy's modules, and the standard library's own (whose
    start-up imports run before any witness)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = [
        *Path(_pytest.__file__).parent.rglob("*.py"),
        *Path(pluggy.__file__).parent.rglob("*.py"),
        *stdlib.glob("*.py"),
        *(stdlib / "importlib").rglob("*.py"),
    ]
    missed = {}
    for path in paths:
        text = path.read_bytes()
        try:
            expected = asked_by_python(text.decode("utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        if not expected <= asked_names([str(path)]):
            missed[str(path)] = expected - asked_names([str(path)])
    assert len(paths) > 250
    assert not missed


def test_names_given_to_import_calls_are_found() -> None:
    source = "m = __import__('first')\nn = importlib.import_module(\"second.sub\")\n"
    assert names_in(source) == {"first", "second"}


def test_a_line_of_prose_asks_for_nothing() -> None:
    """Control: docstrings and comments of the standard library and of pytest, as written."""
    prose = '''"""
    import system.
    import (e.g. ``from ..pkg import mod`` would have a 'level' of 2).
    import implementation is desired.
    from the start, the result
    from decoding
    # We import it as a string, from the cache
    """
    '''
    assert names_in(prose) == set()


def test_a_statement_in_a_docstring_counts() -> None:
    """What is read beyond Python: an example in a docstring is a statement of its grammar,
    and counts (a refusal may only ever read too many names)."""
    assert names_in('"""Example:\n\n    import numpy as np\n"""\n') == {"numpy"}


def test_an_unreadable_source_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "module.py"
    folder.mkdir()
    with pytest.raises(OSError):
        asked_names([str(folder)])
