""":func:`snapshot` (the pin when a flow starts) and :func:`weakened` (every weakening since)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import Any

from . import limits
from .commands import shell_words, with_what_they_run
from .files import read_file
from .findings import (
    HASHED,
    MAKE_READS,
    NEWER_MARKERS,
    SCHEMA,
    VERSION,
    Finding,
    compare_inventories,
)
from .inventory import inventory_of, kind_of
from .named import named_files, paths_of
from .pins import (
    data_watches,
    hashed_files,
    hashed_findings,
    module_watches,
    new_files,
    package_watches,
    pin_hashed,
    watches_of,
)


def snapshot(root: str, commands: list[str]) -> dict[str, Any]:
    """The pin: every file the commands name, with its hash and inventory (JSON-serialisable)."""
    real_root = os.path.realpath(root)
    commands = with_what_they_run(real_root, commands)
    named, scripts, problems = named_files(real_root, commands)
    selections = node_id_selections(real_root, commands)
    watches = watches_of(real_root, commands) + package_watches(real_root, named)
    watches += data_watches(real_root, named) + module_watches(real_root, named)
    hashed = hashed_files(real_root, commands, watches)
    named |= set(hashed)
    files: dict[str, Any] = {}
    for relative in sorted(named)[: limits.MAX_FILES]:
        if relative in hashed:
            files[relative] = pin_hashed(real_root, relative, hashed[relative])
            continue
        entry = _pin_file(real_root, relative, scripts.get(relative, []))
        if entry is not None:
            if selections.get(relative):
                entry["selected"] = sorted(selections[relative] or ())
            files[relative] = entry
    if len(named) > limits.MAX_FILES:
        problems.append(
            f"the commands name {len(named):,} files; only the first "
            f"{limits.MAX_FILES:,} (in path order) are checked"
        )
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "files": files,
        "scripts": scripts,
        "watch": watches,
        "problems": problems,
    }


def _pin_file(root: str, relative: str, scripts: list[str]) -> dict[str, Any] | None:
    content = read_file(os.path.join(root, relative))
    if not isinstance(content, bytes):
        return None  # not a regular file at pin time: nothing to weaken
    kind = kind_of(relative)
    entry: dict[str, Any] = {"sha256": hashlib.sha256(content).hexdigest(), "kind": kind}
    if len(content) > limits.MAX_FILE_BYTES:
        entry["error"] = f"over {limits.MAX_FILE_BYTES:,} bytes"
        return entry
    inventory, error = inventory_of(kind, content, scripts)
    entry["tests"] = inventory
    if error:
        entry["error"] = error
    return entry


def weakened(root: str, pinned: dict[str, Any]) -> list[Finding]:
    """Every weakening of the pinned files in the tree under ``root`` now."""
    if not isinstance(pinned, dict) or pinned.get("schema") != SCHEMA:
        return [Finding("", None, "the integrity pin is unreadable (not a snapshot)")]
    findings = [Finding("", None, f"not checked: {p}") for p in pinned.get("problems", [])]
    real_root = os.path.realpath(root)
    scripts = pinned.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    files = pinned.get("files")
    files = files if isinstance(files, dict) else {}
    older = pinned.get("version") != VERSION
    for relative, entry in sorted(files.items()):
        found = _file_findings(real_root, relative, entry, scripts.get(relative, []), older)
        findings.extend(found)
    findings.extend(new_files(real_root, pinned.get("watch"), files))
    return findings


def _file_findings(
    root: str, relative: str, entry: Any, scripts: list[str], older: bool = False
) -> list[Finding]:
    if isinstance(entry, dict) and entry.get("kind") == HASHED:
        return hashed_findings(root, relative, entry)
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
        return [Finding(relative, None, "its pin is unreadable")]
    content = read_file(os.path.join(root, relative))
    if content is None:
        return [Finding(relative, None, "deleted")]
    if isinstance(content, str):
        return [Finding(relative, None, f"replaced by {content}")]
    if hashlib.sha256(content).hexdigest() == entry["sha256"]:
        return []  # unchanged: the fast path
    if "tests" not in entry:  # pinned by hash alone (over the size cap)
        return [
            Finding(relative, None, f"changed, and it is too large to check ({entry['error']})")
        ]
    if len(content) > limits.MAX_FILE_BYTES:
        return [
            Finding(
                relative,
                None,
                f"changed, and it is now too large to check (over {limits.MAX_FILE_BYTES:,} bytes)",
            )
        ]
    inventory, error = inventory_of(entry.get("kind", "other"), content, scripts)
    if older:  # a pin from before a marker existed: its absence there means nothing
        inventory = _without_newer_markers(inventory)
    if error and not entry.get("error"):
        return [Finding(relative, None, f"no longer parses ({error})")]
    selected = entry.get("selected")
    found = [
        Finding(relative, test or None, how)
        for test, how in compare_inventories(entry.get("tests", {}), inventory)
        if not selected or not test or any(_selects(node, test) for node in selected)
    ]
    if not found and entry.get("kind") == "make":  # variables, prerequisites, .IGNORE, ...
        return [Finding(relative, None, "changed", MAKE_READS)]
    return found


def _without_newer_markers(inventory: dict[str, Any]) -> dict[str, Any]:
    """The inventory without the markers pins of an older version do not record."""
    kept: dict[str, Any] = {}
    for test, entry in inventory.items():
        markers = entry.get("markers") if isinstance(entry, dict) else None
        if isinstance(markers, dict):
            markers = {kind: n for kind, n in markers.items() if kind not in NEWER_MARKERS}
            entry = {**entry, "markers": markers}
        kept[test] = entry
    return kept


def _selects(node: str, test: str) -> bool:
    """Whether a pytest node id suffix (``TestX``, ``TestX::test_m``, ``test_a[1]``) runs
    ``test``."""
    node = node.split("[", 1)[0]
    return test == node or test.startswith(node + "::")


def node_id_selections(root: str, commands: Iterable[str]) -> dict[str, set[str] | None]:
    """Per file, the tests that node ids select; None for a file some command names whole."""
    selections: dict[str, set[str] | None] = {}
    for command in commands:
        for word in shell_words(command):
            file_part, _, node = word.partition("::")
            found = paths_of(root, file_part, None) if file_part else None
            for relative in found or []:
                if not node:
                    selections[relative] = None
                elif relative not in selections or selections[relative] is not None:
                    selections.setdefault(relative, set()).add(node)  # type: ignore[union-attr]
    return selections
