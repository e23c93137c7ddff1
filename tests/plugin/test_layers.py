"""The stdlib-only zone stays what the hooks need: standard library only, and Python 3.8.

Claude Code runs the hook scripts as ``python3 -E -S`` from its plugin cache, under whatever
``python3`` the user has: no site-packages, possibly an old interpreter. The layers between
the other packages are import-linter's contract (``lint-imports``, in CI).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pytest_acceptance"
ZONE = ("tree", "integrity", "gate")
OWN_PREFIXES = tuple(f"pytest_acceptance.{folder}" for folder in ZONE)


def zone_files() -> list[Path]:
    files = [path for folder in ZONE for path in sorted((PACKAGE / folder).rglob("*.py"))]
    return [*files, PACKAGE / "__init__.py", *sorted((REPO / "hooks").glob("*.py"))]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "pytest_acceptance":  # from the package: its submodules
                found += [(node.lineno, f"pytest_acceptance.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def outside_the_zone(module: str) -> bool:
    if module == "pytest_acceptance" or module.startswith(OWN_PREFIXES):
        return module == "pytest_acceptance"  # the package root itself holds nothing
    return module.split(".")[0] not in sys.stdlib_module_names


@pytest.mark.parametrize("path", zone_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_the_zone_imports_only_the_standard_library_and_itself(path: Path) -> None:
    wrong = [f"line {line}: {module}" for line, module in imported_modules(path)]
    wrong = [entry for entry in wrong if outside_the_zone(entry.split(": ", 1)[1])]
    assert not wrong, f"{path.relative_to(REPO)} imports outside the stdlib-only zone: {wrong}"


@pytest.mark.parametrize("path", zone_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_the_zone_is_python_3_8_syntax(path: Path) -> None:
    ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 8))


def test_the_checker_catches_a_third_party_import(tmp_path: Path) -> None:
    """The import test above can fail: a module importing yaml, or the pytest side of the
    package, is reported."""
    module = tmp_path / "m.py"
    module.write_text(
        "import os\ndef f():\n    import yaml\nfrom pytest_acceptance.spec import load\n"
    )
    wrong = [module_name for _, module_name in imported_modules(module)]
    assert {name for name in wrong if outside_the_zone(name)} == {"yaml", "pytest_acceptance.spec"}


def python38() -> str:
    """A Python 3.8 that runs: $ACCEPTANCE_TEST_PYTHON38, python3.8 on PATH, or pyenv's."""
    candidates = [os.environ.get("ACCEPTANCE_TEST_PYTHON38", ""), shutil.which("python3.8") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(str(p) for p in Path(pyenv_root).glob("versions/3.8*/bin/python3.8"))
    for candidate in filter(None, candidates):
        version = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if version.returncode == 0 and version.stdout.strip() == "(3, 8)":
            return candidate
    if os.environ.get("CI") == "true":
        pytest.fail("a Python 3.8 is needed in CI to check the hooks' zone on Python 3.8")
    pytest.skip("no Python 3.8 found: the zone's 3.8 imports are checked in CI")


def test_every_zone_module_imports_under_python_3_8_without_site_packages() -> None:
    """A real 3.8 interpreter, as the hooks run: -E -S -I, the plugin root on sys.path."""
    modules = [
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for path in zone_files()
        if path.parent.name != "hooks"
    ]
    code = "import importlib, sys\nsys.path.insert(0, sys.argv[1])\n"
    code += "".join(f"importlib.import_module({name!r})\n" for name in modules)
    done = subprocess.run(
        [python38(), "-E", "-S", "-I", "-c", code, str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", sorted(path.name for path in (REPO / "hooks").glob("*.py")))
def test_every_hook_answers_one_json_value_or_nothing_under_python_3_8(
    script: str, tmp_path: Path
) -> None:
    """An empty payload outside any flow: each entry script runs to its end on 3.8."""
    done = subprocess.run(
        [python38(), "-E", "-S", str(REPO / "hooks" / script)],
        input="{}",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "CLAUDE_PLUGIN_DATA": str(tmp_path / "data")},
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == "" or done.stdout.strip().startswith("{"), done.stdout
