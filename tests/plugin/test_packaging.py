"""The package's metadata: one version (the Python package's) that the Claude Code plugin's
manifest repeats, an SPDX licence with its file, typed (py.typed), classifiers that say
which Pythons and systems it supports, and the project's links."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import pytest_acceptance

REPO = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_has_one_source_that_the_plugin_manifest_repeats() -> None:
    project = pyproject()
    assert "version" not in project["project"], "the version is typed in pyproject.toml again"
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "pytest_acceptance.__version__"}
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert manifest["version"] == pytest_acceptance.__version__, (
        ".claude-plugin/plugin.json and pytest_acceptance.__version__ differ: change both"
    )


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    project = pyproject()["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert "MIT License" in (REPO / "LICENSE").read_text(encoding="utf-8")
    requires = pyproject()["build-system"]["requires"]
    # SPDX license strings and license-files need setuptools 77.
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in requires)


def test_the_package_is_typed() -> None:
    assert (REPO / "pytest_acceptance" / "py.typed").is_file()
    package_data = pyproject()["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["pytest_acceptance"]


def test_the_classifiers_name_status_pythons_and_systems() -> None:
    project = pyproject()["project"]
    classifiers = set(project["classifiers"])
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert {"Operating System :: POSIX :: Linux", "Operating System :: MacOS"} <= classifiers
    versions = {c.rsplit(" :: ", 1)[1] for c in classifiers if re.search(r":: 3\.\d+$", c)}
    assert versions == {"3.10", "3.11", "3.12", "3.13", "3.14"}
    assert project["requires-python"] == f">={min(versions, key=lambda v: int(v[2:]))}"


def test_the_project_links_are_declared() -> None:
    urls = pyproject()["project"]["urls"]
    assert set(urls) >= {"Homepage", "Repository", "Issues", "Changelog"}
    assert all(url.startswith("https://") for url in urls.values())


def requirement_name(requirement: str) -> str:
    """The normalised distribution name of a requirement (``PyYAML>=6`` -> ``pyyaml``)."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert name is not None, requirement
    return re.sub(r"[-_.]+", "-", name.group()).lower()


def test_the_test_dependencies_are_pinned_and_the_test_commands_use_the_pins() -> None:
    """constraints/test.txt pins every dependency of the package and of its test extra (a
    new one added without `constraints/update.sh` fails here), and the README, CONTRIBUTING
    and .ci/run install with it."""
    project = pyproject()["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    lines = (REPO / "constraints" / "test.txt").read_text(encoding="utf-8").splitlines()
    pins = {
        requirement_name(line): line.split("==", 1)[1]
        for line in lines
        if line.strip() and not line.startswith("#")
    }
    assert all("==" in line for line in lines if line.strip() and not line.startswith("#"))
    unpinned = sorted({requirement_name(r) for r in wanted} - set(pins))
    assert unpinned == [], f"not in constraints/test.txt: {unpinned}; run constraints/update.sh"
    assert "pytest-acceptance" not in pins  # the project itself is never pinned
    install = "-c constraints/test.txt -e '.[test]'"
    for name in ("README.md", "CONTRIBUTING.md", ".ci/run"):
        assert install in (REPO / name).read_text(encoding="utf-8"), name


def test_the_readme_installs_the_plugin_from_the_declared_repository() -> None:
    """The marketplace command names the repository of [project.urls], not a placeholder."""
    repository = pyproject()["project"]["urls"]["Repository"]
    owner_and_name = repository.removeprefix("https://github.com/")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"claude plugin marketplace add {owner_and_name} " in readme
    assert "<owner>" not in readme
