"""The inventory of a JavaScript/TypeScript test file, read by patterns (comments stripped)."""

from __future__ import annotations

import re
from typing import Any

from .findings import FILE_LEVEL

_JS_COMMENT = re.compile(r"/\*.*?\*/|(?<![:\\\"'`])//[^\n]*", re.S)
_JS_TEST_CALL = re.compile(
    r"(?<![\w$.])(?P<call>x?it|x?test|fit|(?:it|test)\.(?:skip|only|todo|failing|concurrent))"
    # A bounded name on one line: an unterminated quote cannot make the scan quadratic.
    r"\s*\(\s*(?P<q>['\"`])(?P<name>(?:\\.|(?!(?P=q))[^\n]){0,500})(?P=q)"
)
_JS_SUITE_MARK = re.compile(r"(?<![\w$.])(xdescribe|describe\.skip|describe\.only|fdescribe)\s*\(")
_JS_ASSERT = re.compile(r"(?<![\w$.])(?:expect|assert(?:\.\w+)?)\s*\(")
_JS_LITERAL_ARGUMENT = re.compile(
    r"\s*(?:true|false|null|undefined|-?\d[\d.]*|'[^'\n]*'|\"[^\"\n]*\"|`[^`$]*`)\s*[,)]"
)


def js_inventory(text: str) -> dict[str, Any]:
    text = _JS_COMMENT.sub("", text)
    file_markers: dict[str, int] = {}
    for match in _JS_SUITE_MARK.finditer(text):
        kind = "only" if match.group(1) in ("describe.only", "fdescribe") else "skip"
        file_markers[kind] = file_markers.get(kind, 0) + 1
    inventory: dict[str, Any] = {}
    seen: dict[str, int] = {}
    calls = list(_JS_TEST_CALL.finditer(text))
    for index, match in enumerate(calls):
        end = calls[index + 1].start() if index + 1 < len(calls) else len(text)
        body = text[match.end() : end]
        call = match.group("call")
        markers: dict[str, int] = {}
        if call.startswith("x") or call.endswith((".skip", ".todo")):
            markers["skip"] = 1
        elif call.endswith(".failing"):
            markers["xfail"] = 1
        elif call.endswith(".only") or call == "fit":
            file_markers["only"] = file_markers.get("only", 0) + 1
        real = constant = 0
        for assertion in _JS_ASSERT.finditer(body):
            if _JS_LITERAL_ARGUMENT.match(body, assertion.end()):
                constant += 1
            else:
                real += 1
        name = _unique(match.group("name"), seen)
        inventory[name] = {"assertions": real, "constants": constant, "markers": markers}
    inventory[FILE_LEVEL] = {"markers": file_markers}
    return inventory


def _unique(name: str, seen: dict[str, int]) -> str:
    """Same-named tests (one per describe block) keep apart as ``name #2``, ``name #3``."""
    name = name or "<unnamed>"
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name} #{seen[name]}"
