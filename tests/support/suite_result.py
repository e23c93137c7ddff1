"""The project's own spec asks of most criteria "these test files pass". The README's test
command runs every test once; CI runs the spec right after it, on the same tree. So that
CI does not run the whole suite twice, a criterion takes that run's result as its evidence
when, and only when, it was a whole-suite run that passed on this very tree:

- ``record`` (tests/conftest.py, at the end of a run started with ``--junitxml``): writes
  ``<junit>.tree``, the tree's fingerprint, only when the run selected everything (no
  ``-k``, ``-m``, ``--lf``, paths or node ids), exited 0 and left the tree as it found it;
- ``main`` (the criterion's command): passes when that record matches the tree now and the
  JUnit file lists each named file's tests, none failed; otherwise it runs those files with
  pytest and ends as they do.

Usage: ``python tests/support/suite_result.py FILE... [-- PYTEST_ARGS...]``; the JUnit file
is ``.acceptance/suite-junit.xml`` unless ``SUITE_JUNIT`` names another.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_acceptance.tree.file_hash import FingerprintError
from pytest_acceptance.tree.fingerprint import tree_fingerprint

DEFAULT_JUNIT = ".acceptance/suite-junit.xml"
# Options that do not narrow what a run selects: its result speaks for every test.
WHOLE_RUN_OPTIONS = ("-n", "-q", "-v", "-p", "--junitxml", "-x")
WHOLE_RUN_VALUES = ("no:cacheprovider",)


def whole_suite(args: list[str]) -> bool:
    """True when the arguments select every test (a worker count and output options only)."""
    words = iter(args)
    for word in words:
        name = word.split("=", 1)[0]
        if name not in WHOLE_RUN_OPTIONS:
            return False
        if name in ("-n", "-p") and "=" not in word:
            value = next(words, "")
            if name == "-p" and value not in WHOLE_RUN_VALUES:
                return False
    return True


def record(root: Path, junit: Path, args: list[str], exitstatus: int, before: str) -> None:
    """Write `junit`'s tree record if this run may stand for the whole suite; remove a
    stale one otherwise."""
    stamp = Path(f"{junit}.tree")
    stamp.unlink(missing_ok=True)
    if exitstatus != 0 or not whole_suite(args) or not before:
        return
    if fingerprint(root) == before:
        stamp.write_text(before)


def fingerprint(root: Path) -> str:
    try:
        return tree_fingerprint(root)
    except FingerprintError:
        return ""


def recorded_pass(root: Path, junit: Path, files: list[str]) -> str | None:
    """Why the recorded run cannot be this criterion's evidence, or None when it is."""
    stamp = Path(f"{junit}.tree")
    if not stamp.is_file() or not junit.is_file():
        return "no whole-suite run recorded"
    if stamp.read_text() != fingerprint(root):
        return "the tree changed since the recorded run"
    cases = ET.parse(junit).getroot().iter("testcase")
    outcomes: dict[str, list[bool]] = {_module(f): [] for f in files}
    for case in cases:
        classname = case.get("classname", "")
        for module, found in outcomes.items():
            if classname == module or classname.startswith(module + "."):
                found.append(case.find("failure") is None and case.find("error") is None)
    missing = [module for module, found in outcomes.items() if not found]
    failed = [module for module, found in outcomes.items() if not all(found)]
    if missing or failed:
        return f"not in the recorded run: {missing}; failed there: {failed}"
    return None


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def main(argv: list[str]) -> int:
    cut = argv.index("--") if "--" in argv else len(argv)
    files, pytest_args = argv[:cut], argv[cut + 1 :]
    root = Path.cwd()
    junit = root / os.environ.get("SUITE_JUNIT", DEFAULT_JUNIT)
    why_not = recorded_pass(root, junit, files)
    if why_not is None:
        print(f"{len(files)} test files passed in the recorded whole-suite run of this tree")
        return 0
    print(f"running them now ({why_not})", flush=True)
    command = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider"]
    return subprocess.call([*command, *pytest_args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
