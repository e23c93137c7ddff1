"""Folder roles (tree/folders.py): every walk of the project passes over the roles it names
there and nothing else, and where walks used to disagree the gate sees the more."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_acceptance.integrity import files as integrity_files
from pytest_acceptance.tree import folders
from pytest_acceptance.tree.fingerprint import tree_fingerprint

WALKS = {
    "FINGERPRINT_SKIPS_OUTSIDE_GIT": folders.FINGERPRINT_SKIPS_OUTSIDE_GIT,
    "NOT_IN_THE_CLOSURE": folders.NOT_IN_THE_CLOSURE,
    "NOT_PROJECT_MODULES": folders.NOT_PROJECT_MODULES,
    "NOT_THE_TESTS": folders.NOT_THE_TESTS,
    "NO_PROJECT_BYTECODE": folders.NO_PROJECT_BYTECODE,
}
ROLES = folders.VERSION_CONTROL | folders.RUN_OUTPUT | folders.ENVIRONMENTS | folders.TOOL_CACHES


@pytest.mark.parametrize("walk", sorted(WALKS))
def test_a_walk_passes_over_named_roles_only_and_never_vendored_code(walk: str) -> None:
    assert WALKS[walk] <= ROLES
    assert not WALKS[walk] & folders.VENDORED


@pytest.mark.parametrize("folder", sorted(folders.TEST_ENVIRONMENTS | {"vendor", "src"}))
def test_outside_git_the_fingerprint_counts_a_tox_nox_or_vendor_folder(
    tmp_path: Path, folder: str
) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "helper.py").write_text("VALUE = 1\n")
    before = tree_fingerprint(tmp_path)
    (tmp_path / folder / "helper.py").write_text("VALUE = 2\n")
    assert tree_fingerprint(tmp_path) != before


@pytest.mark.parametrize("folder", sorted(folders.FINGERPRINT_SKIPS_OUTSIDE_GIT - {".git"}))
def test_honest_outside_git_what_a_run_writes_itself_does_not_change_the_fingerprint(
    tmp_path: Path, folder: str
) -> None:
    (tmp_path / "app.py").write_text("VALUE = 1\n")
    before = tree_fingerprint(tmp_path)
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "written.txt").write_text("by the run\n")
    assert tree_fingerprint(tmp_path) == before


def test_a_vendored_folders_tests_are_the_projects(tmp_path: Path) -> None:
    """pytest collects from ``vendor/`` (its norecursedirs does not name it): integrity
    pins the tests there like any other."""
    for folder in ("vendor/lib", "tests", ".tox/py/lib", "node_modules/x"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "test_x.py").write_text("def test_x():\n    pass\n")
    found = set(integrity_files.test_files(str(tmp_path), "", "pytest", recursive=True))
    assert found == {"vendor/lib/test_x.py", "tests/test_x.py"}
