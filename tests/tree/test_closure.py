"""The environment's closure: any file added, removed or changed is named, whatever it is."""

from __future__ import annotations

import importlib.machinery
import os
import time
from pathlib import Path

import pytest

from pytest_acceptance.tree import closure


def deadline() -> float:
    return time.monotonic() + 60


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site-packages"
    (folder / "thirdparty").mkdir(parents=True)
    (folder / "thirdparty" / "__init__.py").write_text("def ok():\n    return False\n")
    (folder / "easy-install.pth").write_text("/somewhere\n")
    (folder / "thirdparty" / "__pycache__").mkdir()
    (folder / "thirdparty" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0" * 16)
    return folder


def changes_after(site: Path, edit: object, files: list[str] | None = None) -> list[str]:
    places = closure.Places([str(site)], files or [], [])
    pinned = closure.pin(places, deadline())
    edit()  # type: ignore[operator]
    return closure.changes(pinned, places, deadline())


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


# Each is a different way to change what runs; none has code of its own in closure.py.
EDITS = {
    "code appended to a third-party module": lambda site: append(
        site / "thirdparty" / "__init__.py", "def ok():\n    return True\n"
    ),
    "a new import hook module": lambda site: (site / "zz_hook.py").write_text("import sys\n"),
    "a new .pth file": lambda site: (site / "zz.pth").write_text("import zz_hook\n"),
    "a sourceless .pyc beside the sources": lambda site: (
        site / "thirdparty" / "x.pyc"
    ).write_bytes(b"\x00"),
    "a module replaced by a symlink": lambda site: _replace_by_link(site),
    "a module removed": lambda site: (site / "thirdparty" / "__init__.py").unlink(),
}


def _replace_by_link(site: Path) -> None:
    target = site / "thirdparty" / "__init__.py"
    target.unlink()
    target.symlink_to("/dev/null")


@pytest.mark.parametrize("how", list(EDITS))
def test_any_change_to_a_pinned_folder_is_named(site: Path, how: str) -> None:
    found = changes_after(site, lambda: EDITS[how](site))
    assert len(found) == 1, found
    assert found[0].startswith(str(site)), found


def test_the_same_environment_has_no_changes_and_bytecode_caches_do_not_count(site: Path) -> None:
    """__pycache__ is never read by the gate's runs (a private pycache prefix), so an honest
    run rewriting it changes nothing here."""
    cache = site / "thirdparty" / "__pycache__" / "__init__.cpython-311.pyc"
    assert changes_after(site, lambda: cache.write_bytes(b"\1" * 16)) == []


def test_a_same_size_rewrite_with_the_old_mtime_is_seen(site: Path) -> None:
    """The stat key holds ctime, which no process can set back: touch -d cannot hide it."""
    module = site / "thirdparty" / "__init__.py"
    before = module.stat()

    def rewrite() -> None:
        module.write_text(module.read_text().replace("False", "Frue"))
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))

    assert changes_after(site, rewrite) == [f"{module}: changed"]


def test_a_config_file_created_above_the_project_is_named(tmp_path: Path) -> None:
    repo = tmp_path / "a" / "b" / "repo"
    repo.mkdir(parents=True)
    files = closure.config_above(str(repo))
    assert str(tmp_path / "a" / "pytest.ini") in files and str(tmp_path / "conftest.py") in files
    found = changes_after(
        tmp_path / "a" / "b" / "repo",
        lambda: (tmp_path / "a" / "pytest.ini").write_text("[pytest]\n"),
        files,
    )
    assert found == [f"{tmp_path / 'a' / 'pytest.ini'}: changed"]


def test_the_project_is_not_part_of_its_environment_but_a_venv_inside_it_is(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    venv_site = repo / ".venv" / "lib" / "python3.11" / "site-packages"
    venv_site.mkdir(parents=True)
    (repo / "src").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    roots = [str(repo), str(repo / "src"), str(venv_site), str(outside)]
    assert closure.outside(roots, str(repo)) == [str(venv_site), str(outside)]


def test_a_left_out_folder_is_not_walked(site: Path) -> None:
    left = site / "thirdparty"
    places = closure.Places([str(site)], [], [str(left)])
    pinned = closure.pin(places, deadline())
    (left / "new.py").write_text("x = 1\n")
    assert closure.changes(pinned, places, deadline()) == []


def test_past_the_file_cap_it_refuses_rather_than_pin_part(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(closure, "MAX_FILES", 1)
    with pytest.raises(closure.ClosureError, match="more than 1 files"):
        closure.pin(closure.Places([str(site)], [], []), deadline())


def test_a_project_module_named_like_an_installed_or_existing_one_is_found(
    site: Path, tmp_path: Path
) -> None:
    places = closure.Places([str(site)], [], [])
    names = closure.module_names(closure.pin(places, deadline()), [str(site)])
    assert "thirdparty" in names and "easy-install" not in names
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "app.py").write_text("")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "thirdparty.py").write_text("")  # inside a package: imported as pkg.x
    before = closure.project_modules(str(repo), deadline())
    assert before == {"app.py": "app", "pkg/__init__.py": "pkg", "tests/": "tests"}
    (repo / "tests" / "thirdparty").mkdir()
    (repo / "tests" / "thirdparty" / "__init__.py").write_text("")
    (repo / "thirdparty.py").write_text("")
    (repo / "tests" / "app.py").write_text("")  # shadows the project's own app.py
    (repo / "tests" / "helper.pyc").write_bytes(b"")  # bytecode with no source
    (repo / "tests" / "test_new.py").write_text("")  # a new test: free
    (repo / ".venv" / "lib").mkdir(parents=True)
    (repo / ".venv" / "lib" / "thirdparty.py").write_text("")  # an environment
    now = closure.project_modules(str(repo), deadline())
    found = closure.new_modules(list(before), now, names | set(before.values()), set())
    assert found == [
        "tests/app.py: new, and named like a module the run could import",
        "tests/helper.pyc: new bytecode without its source",
        "tests/thirdparty/__init__.py: new, and named like a module the run could import",
        "thirdparty.py: new, and named like a module the run could import",
    ]


@pytest.mark.parametrize("suffix", importlib.machinery.EXTENSION_SUFFIXES)
def test_a_native_extension_is_a_module_too(tmp_path: Path, suffix: str) -> None:
    """Python's path finder tries extension suffixes before .py: a new tests/app<suffix>
    is imported instead of the project's app.py. Found by the same listing as a .py (every
    suffix Python imports); a new extension named like nothing the run imports is free."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "app.py").write_text("")
    before = closure.project_modules(str(repo), deadline())
    (repo / "tests" / f"app{suffix}").write_bytes(b"\x7fELF")
    (repo / f"speedups{suffix}").write_bytes(b"\x7fELF")  # a build output: free
    (repo / "tests" / "data.tar.gz").write_bytes(b"")  # not a module
    now = closure.project_modules(str(repo), deadline())
    found = closure.new_modules(list(before), now, set(before.values()), set())
    assert found == [f"tests/app{suffix}: new, and named like a module the run could import"]


@pytest.mark.parametrize("suffix", [".pyc", *importlib.machinery.EXTENSION_SUFFIXES])
def test_an_init_that_is_not_source_is_listed_wherever_it_stands(
    tmp_path: Path, suffix: str
) -> None:
    """In a package, a folder without __init__.py gains `__init__.pyc` (or a native
    `__init__`): Python imports the folder as a package of that code. A package's own
    source `__init__.py` inside a package is the parent's business, and free."""
    repo = tmp_path / "repo"
    (repo / "lib" / "plugins").mkdir(parents=True)
    (repo / "lib" / "__init__.py").write_text("")
    (repo / "lib" / "plugins" / "extra.py").write_text("BASE = 1\n")
    before = closure.project_modules(str(repo), deadline())
    (repo / "lib" / "plugins" / f"__init__{suffix}").write_bytes(b"")
    (repo / "lib" / "more" / "deep").mkdir(parents=True)
    (repo / "lib" / "more" / "__init__.py").write_text("")  # honest: a new subpackage
    (repo / "lib" / "more" / "deep" / "__init__.py").write_text("")
    now = closure.project_modules(str(repo), deadline())
    found = closure.new_modules(list(before), now, set(before.values()), set())
    why = "new bytecode without its source" if suffix == ".pyc" else "new native code"
    assert len(found) == 1 and found[0].startswith(f"lib/plugins/__init__{suffix}: {why}")


def test_a_folder_is_a_namespace_package_and_a_link_a_module_by_its_name(tmp_path: Path) -> None:
    """In a folder that is no package, a folder that is none either is imported as a
    namespace package where no module of its name exists anywhere: new, it refuses when the
    environment's code asks for that name and nothing offers it (`missing`), never for a
    name the environment offers (its module is imported first). A new link stands for
    whatever it points to, by its own name; a folder of an honest name is free."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "app.py").write_text("")
    before = closure.project_modules(str(repo), deadline())
    (repo / "org" / "python").mkdir(parents=True)
    (repo / "org" / "python" / "core.py").write_text("")
    (repo / "test").mkdir()  # named like the standard library's regular package: free
    (repo / "data").mkdir()  # named like nothing asked for: free
    (repo / ".hidden" / "msvcrt").mkdir(parents=True)
    (repo / "msvcrt").symlink_to(repo / ".hidden" / "msvcrt")
    now = closure.project_modules(str(repo), deadline())
    assert now["org/"] == "org" and now["msvcrt"] == "msvcrt" and "org/python/" in now
    found = closure.new_modules(list(before), now, {"app", "test", "org", "msvcrt"}, {"org"})
    assert found == [
        "msvcrt: new, and named like a module the run could import",
        "org/: new, and named like a module the run could import",
    ]
