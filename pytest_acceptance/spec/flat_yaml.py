"""YAML 1.2 core typing of plain scalars, and an exact reader for flat verification blocks.

Almost every verification block is a handful of ``key: value`` lines at the margin::

    method: bash
    command: "pytest -q tests/test_export.py"
    timeout: 90

PyYAML (``spec.yaml12``) builds such a block through its scanner, parser, composer and
Python constructors, about 25 µs a block, and importing it costs more than reading a few
hundred of them. ``read_flat`` reads exactly the blocks whose meaning is unmistakable
without a YAML parser, and answers None for everything else, which the full loader then
reads (and reports, when it is wrong): a line it does not know, an indent, a tab, a key
used twice, an escape, a comment after a value, a character YAML treats specially. Where it
answers, the answer is the one the full loader gives (tests/fuzz/test_fast_paths.py checks
this against it).

The core schema's resolution of plain scalars lives here too, so both readers type
``timeout: 90`` and ``pass_condition: no`` by the same rules.
"""

from __future__ import annotations

import math
import re
from typing import Any

# YAML 1.2 core schema, as the full loader registers it (``spec.yaml12``).
NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
INT = re.compile(r"[-+]?[0-9]+\Z|0o[0-7]+\Z|0x[0-9a-fA-F]+\Z")
FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z"
    r"|[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z"
)
MAX_NUMBER_DIGITS = 100


def int_value(text: str) -> int:
    """A core-schema int; ValueError past MAX_NUMBER_DIGITS (int() of a huge decimal is
    quadratic)."""
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text)} digits (at most {MAX_NUMBER_DIGITS})")
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text)


def float_value(text: str) -> float:
    text = text.lower()
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text)} characters (at most {MAX_NUMBER_DIGITS})")
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return float(text)


# --- The flat reader ---------------------------------------------------------------------------

# Only newlines break lines, and nothing PyYAML's reader refuses or treats as a line break or a
# byte order mark: no tab, CR, NEL, U+2028/U+2029, U+FEFF, control character or surrogate.
_UNUSUAL = re.compile(
    "[^\n\x20-\x7e\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# A key YAML reads as a string (not null or a boolean) right at the margin, then ": ".
_ENTRY = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_]{0,63}): +(?P<value>.*)\Z")
_NOT_STRING_KEYS = frozenset(
    ("null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE")
)
_DOUBLE_QUOTED = re.compile(r'"(?P<text>[^"\\]*)" *\Z')
_SINGLE_QUOTED = re.compile(r"'(?P<text>[^']*)' *\Z")
# How a plain scalar may start: with none of YAML's indicators.
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./~$(")
MAX_ENTRIES = 100  # far more than any method's keys; the full loader counts nodes beyond


def read_flat(text: str) -> dict[str, Any] | None:
    """The mapping a flat block of ``key: scalar`` lines means, or None when the block is
    anything else (the full loader then decides what it means, or what is wrong)."""
    if _UNUSUAL.search(text) is not None:
        return None
    found: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line.strip(" ") or line.startswith("#"):
            continue  # a blank or comment line (a comment is all the line: no value before)
        entry = _ENTRY.match(line)
        if entry is None or entry["key"] in found or entry["key"] in _NOT_STRING_KEYS:
            return None
        value = _scalar(entry["value"])
        if value is _UNSURE:
            return None
        found[entry["key"]] = value
        if len(found) > MAX_ENTRIES:
            return None
    return found or None


_UNSURE = object()


def _scalar(text: str) -> Any:
    """A one-line scalar's value, or ``_UNSURE``."""
    first = text[:1]
    if first == '"':
        quoted = _DOUBLE_QUOTED.match(text)
        return quoted["text"] if quoted else _UNSURE
    if first == "'":
        quoted = _SINGLE_QUOTED.match(text)
        return quoted["text"] if quoted else _UNSURE
    text = text.rstrip(" ")
    # No ": " or trailing ":" (a nested mapping) and no " #" (a comment). String methods, not
    # a regular expression: a value may be 100,000 characters of hostile input.
    if first not in _PLAIN_FIRST or ": " in text or text.endswith(":") or " #" in text:
        return _UNSURE
    return plain_value(text)


def plain_value(text: str) -> Any:
    """A plain scalar typed by the core schema, in the full loader's order of resolvers;
    ``_UNSURE`` for a number the full loader refuses."""
    if NULL.match(text):
        return None
    if BOOL.match(text):
        return text.lower() == "true"
    try:
        if INT.match(text):
            return int_value(text)
        if FLOAT.match(text):
            return float_value(text)
    except ValueError:
        return _UNSURE
    return text
