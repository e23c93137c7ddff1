"""What a pin is and what a weakening is: the pin's format, :class:`Finding`,
and the comparison of two inventories of one file (additions never report)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SCHEMA = "pytest-acceptance/integrity"
VERSION = 4  # 4: Python definitions pinned by identity; 3: import-time markers, data files
NEWER_MARKERS = frozenset({"import-code", "module-write"})  # recorded since version 3
FILE_LEVEL = ""  # inventory key for what applies to a whole file (module pytestmark, .only)
WAY_OUT = "restore it, or /pytest-acceptance:escalate for a human decision"
RUNS = "a criterion runs it"
PYTEST_READS = "a criterion's pytest reads it"
PYTEST_LOADS = "a criterion's pytest loads it"
TESTS_IMPORT = "it sits with the tests a criterion's pytest runs, which may import it"
TESTS_READ = (
    "it sits with the tests a criterion runs, which may compare against it (an expected "
    "output, fixture or snapshot)"
)
IMPORTED_WITH = (
    "pytest can import it with the tests a criterion runs, and what it does on import can "
    "change what they see"
)
RUNNER_READS = "a criterion's test runner reads it"
MAKE_READS = "a criterion's make reads it"
HASHED = "hashed"


@dataclass(frozen=True)
class Finding:
    """One weakening of a pinned check."""

    file: str  # relative to the root, with forward slashes
    test: str | None  # the test (``Class::method`` for methods), None for the whole file
    how: str  # "deleted", "assertions removed (3 -> 1)", "skip marker added", "changed", ...
    why: str = RUNS  # how a criterion depends on the file

    def message(self) -> str:
        where = f"{self.file}::{self.test}" if self.test else self.file
        added = self.how.startswith("added")
        way_out = WAY_OUT.replace("restore", "remove") if added else WAY_OUT
        return (
            f"{where}: {self.how} since /pytest-acceptance:implement started; {self.why}, so "
            f"this can weaken the criterion: {way_out}."
        )


def compare_inventories(before: dict[str, Any], after: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(test, how) for every weakening from ``before`` to ``after``; additions never report."""
    for name, old in sorted(before.items()):
        new = after.get(name)
        if new is None:
            if name != FILE_LEVEL:
                yield name, "deleted"
            continue
        yield from ((name, how) for how in _test_weakenings(old, new))


def _test_weakenings(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    """How a pinned test got weaker: the shapes below say how when they recognise it; a
    definition pinned by identity (Python) reports any other change of its code as well."""
    described = list(_described_weakenings(old, new))
    yield from described
    if "identity" not in old:
        return
    if new.get("identity") != old["identity"] and not described:
        yield "its code changed since /implement"
    if int(new.get("bindings") or 1) > int(old.get("bindings") or 1):
        yield "its name is bound again (a later definition replaces the pinned one)"


def _described_weakenings(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    if "config" in old and old["config"] != new.get("config"):
        yield "its test configuration changed"
    if "script" in old and old["script"] != new.get("script"):
        yield f"the script it runs changed ({old['script']!r} -> {new.get('script')!r})"
    lost = old.get("assertions", 0) - new.get("assertions", 0)
    gained_constants = new.get("constants", 0) - old.get("constants", 0)
    counted = "command lines" if "early_exit" in old else "assertions"
    if lost > 0 and gained_constants > 0:
        yield "assertion replaced by a constant"
    elif lost > 0:
        yield f"{counted} removed ({old.get('assertions', 0)} -> {new.get('assertions', 0)})"
    yield from _inherited_markers(old, new)
    old_cases, new_cases = old.get("cases"), new.get("cases")
    if isinstance(old_cases, int) and isinstance(new_cases, int) and new_cases < old_cases:
        yield f"parametrized cases removed ({old_cases} -> {new_cases})"
    if new.get("early_exit") and not old.get("early_exit"):
        yield "it now exits before its checks"


def _inherited_markers(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    """Markers a test gets, its own or from its class or module (pytestmark)."""
    old_markers, new_markers = old.get("markers", {}), new.get("markers", {})
    for marker in sorted(new_markers):
        if new_markers[marker] > old_markers.get(marker, 0):
            yield _MARKER_TEXT.get(marker, f"{marker} marker added")


_MARKER_TEXT = {
    "skip": "skip marker added",
    "xfail": "xfail marker added",
    "only": "an .only marker added (every other test in the file is skipped)",
    "not-collected": "collection disabled (__test__ = False)",
    "hook": "a pytest hook added that can skip, deselect or rewrite results",
    "plugins": "pytest_plugins added (a plugin can skip, deselect or rewrite results)",
    "import-code": "code added that runs when it is imported (monkeypatching, sys.modules, "
    "builtins, files, ...: it can change what every test sees)",
    "module-write": "a function added that writes into a module the file imports (never "
    "undone, unlike monkeypatch: the tests that run after it see the change)",
}
