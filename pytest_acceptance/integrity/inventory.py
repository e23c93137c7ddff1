"""Which inventory a file gets (by its name), and the inventories of ``package.json`` scripts
and shell scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pytest_acceptance.tree.shell import MAKEFILE_NAMES

from .files import GO_TEST, JS_SOURCE
from .findings import FILE_LEVEL
from .go import go_inventory
from .javascript import js_inventory
from .make import make_inventory
from .python import python_inventory


def kind_of(relative: str) -> str:
    name = relative.rsplit("/", 1)[-1]
    if name == "package.json":
        return "npm"
    if name in MAKEFILE_NAMES:
        return "make"
    if name.endswith(".py"):
        return "python"
    if GO_TEST.search(name) or name.endswith(".go"):
        return "go"
    if JS_SOURCE.search(name):
        return "javascript"
    if name.endswith((".sh", ".bash")) or "." not in name:
        return "shell"
    return "other"


def inventory_of(
    kind: str, content: bytes, scripts: Sequence[str] = ()
) -> tuple[dict[str, Any], str | None]:
    """(inventory, parse error or None) of one file's content."""
    text = content.decode("utf-8", errors="replace")
    if kind == "python":
        return python_inventory(content)
    if kind == "javascript":
        return js_inventory(text), None
    if kind == "go":
        return go_inventory(text), None
    if kind == "npm":
        return npm_inventory(text, scripts)
    if kind == "make":
        return make_inventory(text, scripts), None
    if kind == "shell":
        return {FILE_LEVEL: shell_inventory(text)}, None
    return {}, None


def npm_inventory(text: str, scripts: Sequence[str]) -> tuple[dict[str, Any], str | None]:
    try:
        data = json.loads(text)
    except ValueError as error:
        return {}, f"invalid JSON ({error})"
    declared = data.get("scripts") if isinstance(data, dict) else None
    declared = declared if isinstance(declared, dict) else {}
    inventory: dict[str, Any] = {f"npm {name}": {"script": declared.get(name)} for name in scripts}
    for key in _PACKAGE_TEST_CONFIG:  # jest and mocha read their settings from package.json too
        value = data.get(key) if isinstance(data, dict) else None
        inventory[f"{key} config"] = {"config": json.dumps(value, sort_keys=True)}
    return inventory, None


_PACKAGE_TEST_CONFIG = ("jest", "mocha")
_SHELL_EARLY_EXIT = re.compile(r"^\s*(exit(\s+0)?|true|:)\s*(;.*)?$")


def shell_inventory(text: str) -> dict[str, Any]:
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    early = bool(lines) and bool(_SHELL_EARLY_EXIT.match(lines[0]))
    return {"assertions": len(lines), "constants": 0, "markers": {}, "early_exit": early}
