"""Criterion integrity, the routes an adversary would take around the pin: shell strings
(``bash -c``, ``eval``), make variables, data files beside the tests, and code a new test
file runs on import. Each attack is reported; its honest counterpart is not."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.integrity_projects import FAILING_TEST, after_edits, project, write

from pytest_acceptance import integrity
from pytest_acceptance.integrity import inventory_of, snapshot, weakened
from pytest_acceptance.integrity.commands import shell_strings, shell_words
from pytest_acceptance.integrity.import_time import module_changes
from pytest_acceptance.integrity.make import expand, target_name

WEAKER_TEST = FAILING_TEST.replace("compute() == 3", "True")
MORE_TESTS = FAILING_TEST + "\ndef test_more():\n    assert compute() != 4\n"


def findings(root: Path, commands: list[str], edits: dict[str, str | None]) -> set[tuple]:
    """(file, test, how) of every finding after the edits (None deletes the file)."""
    return {(f.file, f.test, f.how) for f in after_edits(root, commands, edits)}


# -- shell strings -------------------------------------------------------------------------

SHELL_STRINGS = [
    "bash -c 'pytest tests/'",
    'sh -ec "pytest tests/test_x.py -q"',
    "bash -o pipefail -c 'cd tests && pytest test_x.py | tee out.log'",
    "cd tests && bash -c 'pytest test_x.py'",
    "timeout 60 bash -xc 'pytest tests/'",
    "eval 'pytest tests/'",
    "eval pytest tests/test_x.py",
    "bash -c \"bash -c 'pytest tests/'\"",
]


@pytest.mark.parametrize("command", SHELL_STRINGS)
def test_a_test_run_inside_a_shell_string_is_pinned(tmp_path: Path, command: str) -> None:
    """The inner command of ``bash -c``/``sh -c``/``eval`` is followed as if the criterion
    ran it: weakening the test it runs is reported, adding a test is not."""
    root = project(tmp_path)
    weakening = ("tests/test_x.py", "test_fails", "assertion replaced by a constant")
    assert findings(root, [command], {"tests/test_x.py": WEAKER_TEST}) == {weakening}
    assert (
        findings(project(tmp_path / "honest"), [command], {"tests/test_x.py": MORE_TESTS}) == set()
    )


def test_a_shell_string_in_a_make_recipe_is_followed(tmp_path: Path) -> None:
    root = project(tmp_path, {"Makefile": "check:\n\t@bash -c 'pytest tests/'\n"})
    found = findings(root, ["make check"], {"tests/conftest.py": "import os\nos._exit(0)\n"})
    assert found == {("tests/conftest.py", None, "changed")}


@pytest.mark.parametrize(
    "command, strings",
    [
        ("bash -c 'pytest tests/'", ["pytest tests/"]),
        ("sh -euxc 'make check' ignored-name", ["make check"]),
        ("bash --norc -o errexit -c 'go test ./...'", ["go test ./..."]),
        ("cd tests && sh -c pytest", ["cd tests && pytest"]),
        ("eval pytest  -q tests/", ["pytest -q tests/"]),
        ("bash scripts/check.sh -c 'not a command string'", []),  # -c after the script: its own
        ("bash -e scripts/check.sh", []),
        ("bash -c", []),
        ("python -c 'print(1)'", []),  # Python code, not a shell string
        ("echo bash -c 'pytest'", []),
    ],
)
def test_the_shell_strings_a_command_runs(tmp_path: Path, command: str, strings: list) -> None:
    (tmp_path / "tests").mkdir()
    assert list(shell_strings(str(tmp_path), shell_words(command))) == strings


# -- make variables --------------------------------------------------------------------------

MAKE_ROUTES = {
    "the runner in a variable": (
        "PYTEST := python -m pytest\nTESTS ?= tests/\n\ncheck:\n\t$(PYTEST) $(TESTS) -q\n",
        "make check",
    ),
    "a continued, appended variable": (
        "RUN = python \\\n  -m pytest\nRUN += -q  # quiet\n\ncheck:\n\t${RUN} tests/\n",
        "make check",
    ),
    "a variable that names a variable": (
        "RUN = $(PY) -m pytest\nPY = python3\n\ncheck:\n\tcd tests && $(RUN) test_x.py\n",
        "make check",
    ),
    "the value given on make's command line": (
        "PYTEST = echo\n\ncheck:\n\t$(PYTEST) tests/\n",
        "make check PYTEST=pytest",
    ),
    "POSIX ::= and a tight :=": (
        "PY ::= python3\nRUN:=$(PY) -m pytest\n\ncheck:\n\t$(RUN) tests/\n",
        "make check",
    ),
    "the default goal": ("RUNNER = pytest\n\nall:\n\t$(RUNNER) tests\n", "make -s"),
}


@pytest.mark.parametrize("makefile, command", MAKE_ROUTES.values(), ids=MAKE_ROUTES)
def test_a_recipe_is_followed_with_its_variables_expanded(
    tmp_path: Path, makefile: str, command: str
) -> None:
    """``$(PYTEST) $(TESTS)`` is followed as the pytest run it is: the test it runs is
    pinned (weakening it reports), adding a test does not report."""
    root = project(tmp_path, {"Makefile": makefile})
    weakening = ("tests/test_x.py", "test_fails", "assertion replaced by a constant")
    assert weakening in findings(root, [command], {"tests/test_x.py": WEAKER_TEST})
    honest = project(tmp_path / "honest", {"Makefile": makefile})
    assert findings(honest, [command], {"tests/test_x.py": MORE_TESTS}) == set()


def test_a_script_named_by_a_make_variable_is_pinned(tmp_path: Path) -> None:
    makefile = "CHECK = scripts/check.sh\n\ncheck:\n\tbash $(CHECK) --strict\n"
    root = project(tmp_path, {"Makefile": makefile, "scripts/check.sh": "pytest tests/\n"})
    assert ("scripts/check.sh", None, "changed") in findings(
        root, ["make check"], {"scripts/check.sh": "exit 0\n"}
    )


def test_the_command_line_value_reaches_the_recipe_unless_the_makefile_overrides_it(
    tmp_path: Path,
) -> None:
    makefile = "override TESTS = tests/test_x.py\nOTHER = x\n\ncheck:\n\tpytest $(TESTS)\n"
    inventory, _ = inventory_of("make", makefile.encode(), [target_name("check", ["TESTS=y"])])
    assert inventory == {"make check TESTS=y": {"script": "pytest tests/test_x.py"}}


UNRESOLVED = {
    "inside a conditional": "ifdef CI\nTESTS = tests/\nendif\n\ncheck:\n\tpytest $(TESTS)\n",
    "from the shell": "TESTS != ls tests\n\ncheck:\n\tpytest $(TESTS)\n",
    "by define": "define TESTS\ntests/\nendef\n\ncheck:\n\tpytest $(TESTS)\n",
    "for one target": "check: TESTS = tests/\ncheck:\n\tpytest $(TESTS)\n",
    "undefined": "check:\n\tpytest $(TESTS)\n",
    "a make function": "TESTS = $(wildcard tests/*.py)\n\ncheck:\n\tpytest $(TESTS)\n",
}


@pytest.mark.parametrize("makefile", UNRESOLVED.values(), ids=UNRESOLVED)
def test_a_variable_make_alone_can_resolve_stays_as_written(makefile: str) -> None:
    """What this reading cannot know is never guessed: the recipe keeps the reference (and
    the Makefile stays pinned by hash)."""
    inventory, _ = inventory_of("make", makefile.encode(), ["check"])
    assert inventory["make check"]["script"] in ("pytest $(TESTS)", "pytest $(wildcard tests/*.py)")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("$(){}@AB =:?+\n\t#\\x"), max_size=120),
    value=st.text(alphabet=st.sampled_from("$(){}AB x"), max_size=20),
)
def test_expansion_of_any_text_ends_and_keeps_what_it_cannot_resolve(text: str, value: str) -> None:
    """Self-referencing, unbalanced or nested references never hang or raise; text without
    ``$`` comes back unchanged."""
    expanded = expand(text, {"A": value, "B": "$(A)$(B)"}, "t")
    assert isinstance(expanded, str)
    if "$" not in text:
        assert expanded == text
    inventory_of("make", (text + "\ncheck:\n\t" + text).encode(), ["check 'A=1'"])


# -- data files beside the tests -------------------------------------------------------------

JS_TEST = "test('adds', () => {\n  expect(add(1, 2)).toMatchSnapshot();\n});\n"
GO_TEST = (
    'func TestParse(t *testing.T) {\n\tif Parse(golden(t)) != "" {\n\t\tt.Fatal("x")\n\t}\n}\n'
)
DATA_ROUTES = {  # (extra files, command, data file)
    "expected output under tests/": ({}, "pytest tests/", "tests/data/expected.json"),
    "a fixture of a named test": (
        {},
        "pytest tests/test_x.py::test_fails",
        "tests/fixtures/in.txt",
    ),
    "a jest snapshot": (
        {
            "src/app.test.js": JS_TEST,
            "src/__snapshots__/app.test.js.snap": "exports[`adds 1`] = `3`;\n",
        },
        "npx jest src/app.test.js",
        "src/__snapshots__/app.test.js.snap",
    ),
    "a Go golden file": (
        {"pkg/parse/parse_test.go": GO_TEST, "pkg/parse/testdata/golden.txt": "ok\n"},
        "go test ./pkg/...",
        "pkg/parse/testdata/golden.txt",
    ),
}


@pytest.mark.parametrize("edit", ["rewritten", "deleted"])
@pytest.mark.parametrize("extra, command, data", DATA_ROUTES.values(), ids=DATA_ROUTES)
def test_a_rewritten_or_deleted_data_file_is_reported(
    tmp_path: Path, extra: dict, command: str, data: str, edit: str
) -> None:
    root = project(tmp_path, {**extra, data: '{"total": 3}\n'})
    found = findings(root, [command], {data: '{"total": 2}\n' if edit == "rewritten" else None})
    assert found == {(data, None, "changed" if edit == "rewritten" else "deleted")}


@pytest.mark.parametrize("edit", ["[flake8]\nmax-line-length = 80\n", None])
def test_a_data_file_named_like_a_configuration_file_counts_whole(
    tmp_path: Path, edit: str | None
) -> None:
    """A fixture project's ``setup.cfg`` under ``tests/fixtures`` is data: a change outside
    any pytest section reports, and so does its deletion."""
    data = "tests/fixtures/project/setup.cfg"
    root = project(tmp_path, {data: "[flake8]\nmax-line-length = 100\n"})
    how = "changed" if edit else "deleted"
    assert findings(root, ["pytest tests/"], {data: edit}) == {(data, None, how)}


def test_the_data_finding_says_why_and_the_way_out(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/data/expected.json": "3\n"})
    pin = snapshot(str(root), ["pytest tests/"])
    write(root, "tests/data/expected.json", "2\n")
    [finding] = weakened(str(root), pin)
    assert finding.why == integrity.TESTS_READ
    assert finding.message().endswith(
        "which may compare against it (an expected output, fixture or snapshot), so this can "
        "weaken the criterion: restore it, or /pytest-acceptance:escalate for a human decision."
    )


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_honest_work_around_data_files_is_not_reported(tmp_path: Path) -> None:
    """New tests with new data files, outputs a test run writes where ``.gitignore`` hides
    them, bytecode and caches: none is reported (a real git repository decides)."""
    root = project(
        tmp_path,
        {
            "tests/data/expected.json": "3\n",
            "tests/out/result.json": "{}\n",
            ".gitignore": "tests/out/\n*.log\n",
            "tests/run.log": "old\n",
            "tests/__pycache__/test_x.cpython-311.pyc": "old",
        },
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    edits = {
        "tests/test_x.py": MORE_TESTS,
        "tests/data/new_case.json": "4\n",
        "tests/test_new.py": "def test_new():\n    assert compute() == 3\n",
        "tests/out/result.json": '{"run": 2}\n',
        "tests/run.log": "new\n",
        "tests/__pycache__/test_x.cpython-311.pyc": "new",
        "tests/.pytest_cache/v/cache/lastfailed": "{}",
    }
    assert findings(root, ["pytest tests/"], edits) == set()


def test_git_inside_the_project_never_decides_what_is_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``git`` the agent puts first on PATH inside the project (an activated venv) is not
    run: the real git outside decides, and a fake one's "everything is ignored" cannot unpin."""
    root = project(tmp_path, {"tests/data/expected.json": "3\n", ".gitignore": "*.log\n"})
    git(root, "init", "-q")
    fake = root / ".venv/bin/git"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\ntouch {root}/ran\nprintf 'tests/data/expected.json\\0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    found = findings(root, ["pytest tests/"], {"tests/data/expected.json": "2\n"})
    assert found == {("tests/data/expected.json", None, "changed")}
    assert not (root / "ran").exists()


# -- code a new test file runs when imported -------------------------------------------------

IMPORT_TIME_ATTACKS = {
    "monkeypatching the code under test": "import app\napp.compute = lambda *a: 3\n",
    "setattr": "import app\nsetattr(app, 'compute', lambda *a: 3)\n",
    "a fake module in sys.modules": "import sys, types\n"
    "sys.modules['app'] = types.ModuleType('app')\n",
    "sys.modules passed on": "import sys\nSTASH = dict.update(sys.modules, {})\n",
    "an edited builtin": "import builtins\nbuiltins.len = lambda x: 3\n",
    "rewriting the expected output": "from pathlib import Path\n"
    "DONE = Path('tests/data/expected.json').write_text('2')\n",
    "a file opened for writing": "OUT = open('tests/data/expected.json', 'w')\n",
    "a helper called at import": "import app\n\ndef _setup():\n    app.compute = lambda: 3\n\n"
    "READY = _setup()\n",
    "a decorator that patches": "import app\n\ndef keep(f):\n    app.compute = f\n    return f\n\n"
    "@keep\ndef test_x():\n    assert True\n",
    "a patcher started": "from unittest import mock\n"
    "P = mock.patch('app.compute', return_value=3)\nSTARTED = P.start()\n",
    "a loop": "import app\nfor name in ['compute']:\n    pass\n",
    "the environment": "import os\nos.environ['APP_MODE'] = 'fake'\n",
    # A constant to Python, configuration to pytest: it registers the named modules as
    # plugins, whose hooks then see (and can rewrite) every test's report.
    "pytest_plugins": "pytest_plugins = ['localcheck']\n",
    "pytest_plugins, annotated": "pytest_plugins: list = ['localcheck']\n",
}


@pytest.mark.parametrize("source", IMPORT_TIME_ATTACKS.values(), ids=IMPORT_TIME_ATTACKS)
@pytest.mark.parametrize("new_file", ["tests/test_zz_new.py", "tests/unit/helpers_new.py"])
def test_a_new_module_that_runs_code_on_import_is_reported(
    tmp_path: Path, source: str, new_file: str
) -> None:
    """A new test file (or helper in the test folder) that runs code when pytest imports it
    can change what the pinned tests see: reported, with the line, and "remove it"."""
    root = project(tmp_path)
    pin = snapshot(str(root), ["pytest tests/test_x.py::test_fails"])
    write(root, new_file, "def test_new():\n    assert 1 + 1 == 2\n\n" + source)
    [finding] = weakened(str(root), pin)
    assert (finding.file, finding.test, finding.why) == (new_file, None, integrity.IMPORTED_WITH)
    assert finding.how.startswith("added with code that runs when it is imported (line ")
    assert "remove it, or /pytest-acceptance:escalate" in finding.message()


LEAKING_TESTS = {
    "an assignment": "import app\n\ndef test_first():\n    app.compute = lambda: 3\n",
    "setattr": "import app\n\ndef test_first():\n    setattr(app, 'compute', lambda: 3)\n",
    "the environment": "import os\n\ndef test_first():\n    os.environ['APP_MODE'] = 'fake'\n",
    "a setup method": "from app import config\n\nclass TestFirst:\n"
    "    def setup_method(self):\n        config.fake = True\n",
}


@pytest.mark.parametrize("source", LEAKING_TESTS.values(), ids=LEAKING_TESTS)
def test_a_new_test_that_patches_for_the_tests_after_it_is_reported(
    tmp_path: Path, source: str
) -> None:
    """``tests/test_000.py`` runs before ``tests/test_x.py`` in the same process: a write
    into an imported module that no monkeypatch undoes is what the pinned test sees."""
    root = project(tmp_path)
    [(file, test, how)] = findings(root, ["pytest tests/"], {"tests/test_000.py": source})
    assert (file, test) == ("tests/test_000.py", None)
    assert how.startswith("added with a function that writes into a module it imports (line ")


def test_a_new_test_file_beside_a_pinned_test_outside_a_test_folder(tmp_path: Path) -> None:
    """``pytest test_app.py`` at the root: a new ``test_*.py`` beside it is checked, a new
    module of the project there is the work itself and never is."""
    root = project(tmp_path, {"test_app.py": FAILING_TEST})
    attack = IMPORT_TIME_ATTACKS["monkeypatching the code under test"]
    edits = {"test_more.py": attack, "app_config.py": attack}
    assert {(f, how[:5]) for f, _, how in findings(root, ["pytest test_app.py"], edits)} == {
        ("test_more.py", "added")
    }


HONEST_NEW_MODULE = '''"""New tests for the new feature."""
import asyncio
import functools
import os
import re
import unittest
import pytest
from pathlib import Path
from unittest import mock

try:
    import numpy
except ImportError:
    numpy = None

from app import Thing, compute

HERE = Path(__file__).parent
EXPECTED = (HERE / "data" / "expected.json").read_text() if False else "3"
CI = os.environ.get("CI")
SLOW = "SLOW" in os.environ
CASES = [(1, 2), (2, 3)]
CALLS = [mock.call(1)]
pytestmark = pytest.mark.slow
json = pytest.importorskip("json")


def _cases():
    table = {}
    table["a"] = 1
    return table


TABLE = _cases()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setattr("app.compute", lambda *a: 3)
    (tmp_path / "x").write_text("1")
    return tmp_path


@pytest.mark.parametrize("value, expected", CASES)
def test_new(value, expected, workdir):
    thing = Thing()
    thing.size = value
    table = {}
    table["a"] = value
    assert compute(value) == expected


@mock.patch("app.compute", return_value=3)
def test_patched(fake):
    assert fake() == 3


class TestNew:
    limit = 3

    def test_method(self):
        assert compute() <= self.limit


PATTERN = re.compile(r"\\d+")
_scratch = [1]
del _scratch
if not CASES:
    pytest.skip("no cases", allow_module_level=True)
if numpy is None and CI:
    raise unittest.SkipTest("needs numpy on CI")


def in_loop(function):
    @functools.wraps(function)
    def wrapper(*args):
        return asyncio.run(function(*args))

    return wrapper


@in_loop
async def test_async():
    assert compute() == 3


if __name__ == "__main__":
    pytest.main([__file__])
'''


def test_honest_new_test_files_and_helpers_are_not_reported(tmp_path: Path) -> None:
    """Imports, constants, fixtures that patch inside a test, decorators, classes,
    pytestmark, ``try: import``: nothing of it runs beyond definitions at import."""
    root = project(tmp_path)
    edits = {
        "tests/test_feature.py": HONEST_NEW_MODULE,
        "tests/unit/test_more.py": HONEST_NEW_MODULE,
        "tests/factories.py": "from app import compute\n\n\ndef build():\n    return compute()\n",
    }
    assert findings(root, ["pytest tests/test_x.py"], edits) == set()


@pytest.mark.parametrize(
    "added, expected",
    [
        ("import app\napp.compute = lambda: 3\n", "code added that runs when it is imported"),
        (
            "import app\n\ndef test_0():\n    app.compute = lambda: 3\n",
            "a function added that writes into a module the file imports",
        ),
    ],
)
def test_module_changes_added_to_a_pinned_test_file_are_reported(
    tmp_path: Path, added: str, expected: str
) -> None:
    root = project(tmp_path)
    edits = {"tests/test_x.py": added + MORE_TESTS}
    [(file, test, how)] = findings(root, ["pytest tests/"], edits)
    assert (file, test) == ("tests/test_x.py", None) and how.startswith(expected)


def test_a_pin_of_an_older_version_does_not_count_markers_it_never_recorded(
    tmp_path: Path,
) -> None:
    """A flow pinned before import-time markers existed: a test file that had such code all
    along is not reported when the newer version checks it (a plugin update mid-flow)."""
    head = "import sys\nsys.path.insert(0, 'x')\n"
    root = project(tmp_path, {"tests/test_x.py": head + FAILING_TEST})
    pin = json.loads(json.dumps(snapshot(str(root), ["pytest tests/"])))
    pin["version"] = 2
    for entry in pin["files"].values():
        for test in entry.get("tests", {}).values():
            test.get("markers", {}).pop("import-code", None)
    write(root, "tests/test_x.py", head + MORE_TESTS)  # a new test: the file is read again
    assert weakened(str(root), pin) == []
    pin["version"] = integrity.VERSION  # the same stripped pin, read as a current one
    assert [f.how[:10] for f in weakened(str(root), pin)] == ["code added"]


def test_a_new_conftest_beside_a_node_id_is_reported(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/sub/test_y.py": FAILING_TEST})
    command = ["pytest tests/sub/test_y.py::test_fails"]
    found = findings(root, command, {"tests/sub/conftest.py": "import pytest\n"})
    assert found == {("tests/sub/conftest.py", None, "added")}


KEYWORD_ONLY = "def test_k(*, fixture, flag=True, **more) -> None:\n    pass\n"


@settings(max_examples=200, deadline=None)
@given(
    source=st.text(
        alphabet=st.sampled_from("defclass():=.\n []import sysbuiltins@'\"open,w*"), max_size=200
    )
)
def test_any_module_source_gives_an_answer(source: str) -> None:
    """Garbage, deep nesting or odd syntax never raises: a description or None."""
    source = KEYWORD_ONLY + source
    changes = module_changes(source.encode())
    assert changes is None or changes.startswith(("code that runs", "a function that"))
