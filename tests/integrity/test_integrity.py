"""Criterion integrity: every weakening of a file a criterion's command names is reported with
the file and the test; additions and refactors that keep the checks are never reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.integrity_projects import CONFTEST, FAILING_TEST, after_edits, project, write

from pytest_acceptance import integrity
from pytest_acceptance.integrity import Finding, inventory_of, snapshot, weakened

PYTHON_BEFORE = """
import pytest

def check_positive(value):
    assert value > 0

def test_a():
    assert compute() == 3
    assert compute() != 4

def test_b():
    check_positive(compute())

class TestGroup:
    def test_m(self):
        self.assertEqual(compute(), 3)
        with pytest.raises(ValueError):
            compute(-1)

@pytest.mark.parametrize("value", [1, 2, 3])
def test_p(value):
    assert compute(value) > value
"""


def findings_after(tmp_path: Path, relative: str, before: str, after: str, command: str):
    write(tmp_path, relative, before)
    pin = json.loads(json.dumps(snapshot(str(tmp_path), [command])))  # survives JSON
    write(tmp_path, relative, after)
    return [(f.test, f.how) for f in weakened(str(tmp_path), pin)]


def python_edit(old: str, new: str) -> str:
    assert old in PYTHON_BEFORE
    return PYTHON_BEFORE.replace(old, new)


# -- Python: every weakening kind --------------------------------------------------------

PYTHON_WEAKENINGS = {
    "test deleted": (
        python_edit("def test_a():\n    assert compute() == 3\n    assert compute() != 4\n", ""),
        ("test_a", "deleted"),
    ),
    "test renamed out of collection": (
        python_edit("def test_a():", "def check_a():"),
        ("test_a", "deleted"),
    ),
    "method deleted": (
        python_edit("    def test_m(self):", "    def helper_m(self):"),
        ("TestGroup::test_m", "deleted"),
    ),
    "assertion removed": (
        python_edit("    assert compute() != 4\n", ""),
        ("test_a", "assertions removed (2 -> 1)"),
    ),
    "assert True": (
        python_edit("assert compute() != 4", "assert True"),
        ("test_a", "assertion replaced by a constant"),
    ),
    "assert of a tuple (always true)": (
        python_edit("assert compute() != 4", 'assert (compute() != 4, "always true")'),
        ("test_a", "assertion replaced by a constant"),
    ),
    "assert not False": (
        python_edit("assert compute() != 4", "assert not False"),
        ("test_a", "assertion replaced by a constant"),
    ),
    "assert of pure builtins": (
        python_edit("assert compute() != 4", "assert len([1, 2]) == 2"),
        ("test_a", "assertion replaced by a constant"),
    ),
    "assertEqual to constants": (
        python_edit("self.assertEqual(compute(), 3)", "self.assertEqual(3, 3)"),
        ("TestGroup::test_m", "assertion replaced by a constant"),
    ),
    "pytest.raises removed": (
        python_edit("        with pytest.raises(ValueError):\n            compute(-1)\n", ""),
        ("TestGroup::test_m", "assertions removed (2 -> 1)"),
    ),
    "helper emptied": (
        python_edit("    assert value > 0\n", "    pass\n"),
        ("test_b", "assertions removed (1 -> 0)"),
    ),
    "skip decorator": (
        python_edit("def test_a():", "@pytest.mark.skip(reason='later')\ndef test_a():"),
        ("test_a", "skip marker added"),
    ),
    "skipif decorator": (
        python_edit("def test_a():", "@pytest.mark.skipif(True, reason='x')\ndef test_a():"),
        ("test_a", "skip marker added"),
    ),
    "xfail decorator": (
        python_edit("def test_a():", "@pytest.mark.xfail\ndef test_a():"),
        ("test_a", "xfail marker added"),
    ),
    "pytest.skip() call": (
        python_edit("def test_a():\n", "def test_a():\n    pytest.skip('flaky')\n"),
        ("test_a", "skip marker added"),
    ),
    "self.skipTest()": (
        python_edit(
            "    def test_m(self):\n", "    def test_m(self):\n        self.skipTest('x')\n"
        ),
        ("TestGroup::test_m", "skip marker added"),
    ),
    "skip on the class": (
        python_edit("class TestGroup:", "@pytest.mark.skip\nclass TestGroup:"),
        ("TestGroup::test_m", "skip marker added"),
    ),
    "xfail param": (
        python_edit("[1, 2, 3]", "[1, 2, pytest.param(3, marks=pytest.mark.xfail)]"),
        ("test_p", "xfail marker added"),
    ),
    "parametrize cases removed": (
        python_edit("[1, 2, 3]", "[1]"),
        ("test_p", "parametrized cases removed (3 -> 1)"),
    ),
    "module pytestmark": (
        python_edit("import pytest\n", "import pytest\npytestmark = pytest.mark.skip\n"),
        (None, "skip marker added"),
    ),
    "module-level skip": (
        python_edit(
            "import pytest\n", "import pytest\npytest.skip('no', allow_module_level=True)\n"
        ),
        (None, "skip marker added"),
    ),
    "__test__ = False": (
        python_edit("    def test_m(self):", "    __test__ = False\n\n    def test_m(self):"),
        ("TestGroup::test_m", "collection disabled (__test__ = False)"),
    ),
    "autouse fixture that skips": (
        python_edit(
            "import pytest\n",
            "import pytest\n\n@pytest.fixture(autouse=True)\ndef _later():\n    pytest.skip('x')\n",
        ),
        (None, "skip marker added"),
    ),
    "result hook": (
        PYTHON_BEFORE + "\ndef pytest_collection_modifyitems(items):\n    items.clear()\n",
        (None, "a pytest hook added"),
    ),
    "syntax error": (python_edit("def test_a():", "def test_a(:"), (None, "no longer parses")),
    "pytest_plugins in a test module": (
        python_edit("import pytest\n", "import pytest\npytest_plugins = ['support.evil']\n"),
        (None, "pytest_plugins added"),
    ),
}


PYTHON_HONEST = {
    "unchanged": PYTHON_BEFORE,
    "whitespace only": PYTHON_BEFORE.replace("\n\n", "\n\n\n"),
    "a new test": PYTHON_BEFORE + "\ndef test_new():\n    assert True\n",
    "tests reordered, comments added": python_edit(
        "def test_a():\n    assert compute() == 3\n    assert compute() != 4\n\n", "# moved\n"
    )
    + "\ndef test_a():  # moved here\n    assert compute() == 3\n    assert compute() != 4\n",
}


@pytest.mark.parametrize("after", PYTHON_HONEST.values(), ids=PYTHON_HONEST)
def test_python_changes_that_keep_the_checks_are_not_reported(tmp_path: Path, after: str) -> None:
    assert findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, "pytest tests") == []


# A pinned test is pinned by identity: any change to its code is a human's decision, even
# one that looks stronger (the shape detectors cannot tell a stronger test from one that
# only looks stronger, so none of these needs a detector of its own).
PYTHON_CHANGED = {
    "an extra assertion": (
        python_edit(
            "    assert compute() != 4\n", "    assert compute() != 4\n    assert compute() > 0\n"
        ),
        "test_a",
    ),
    "a refactor keeping the assertions": (
        python_edit(
            "def test_a():\n    assert compute() == 3\n    assert compute() != 4\n",
            "def test_a():\n    result = compute()  # once\n    assert result == 3, result\n"
            "    assert result != 4\n",
        ),
        "test_a",
    ),
    "more parametrized cases": (python_edit("[1, 2, 3]", "[1, 2, 3, 4]"), "test_p"),
    "unittest assertion style": (
        python_edit("self.assertEqual(compute(), 3)", "self.assertEqual(compute(), 3, 'three')"),
        "TestGroup::test_m",
    ),
    "an early return": (
        python_edit("def test_a():\n", "def test_a():\n    return\n"),
        "test_a",
    ),
    "assertions inside try/except": (
        python_edit(
            "def test_a():\n    assert compute() == 3\n    assert compute() != 4\n",
            "def test_a():\n    try:\n        assert compute() == 3\n"
            "        assert compute() != 4\n    except AssertionError:\n        pass\n",
        ),
        "test_a",
    ),
}


@pytest.mark.parametrize(("after", "test"), PYTHON_CHANGED.values(), ids=PYTHON_CHANGED)
def test_any_change_to_a_pinned_python_test_is_reported(
    tmp_path: Path, after: str, test: str
) -> None:
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, "pytest tests")
    assert [name for name, _ in found] == [test], found


def test_a_pinned_test_bound_again_later_in_its_module_is_reported(tmp_path: Path) -> None:
    """The name rebound to a function that cannot fail: the pinned one never runs."""
    after = PYTHON_BEFORE + "\n\ndef _always():\n    pass\n\n\ntest_a = _always\n"
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, "pytest tests")
    assert ("test_a", "its name is bound again (a later definition replaces the pinned one)") in (
        found
    ), found


def test_removing_a_skip_marker_is_a_change_a_human_decides(tmp_path: Path) -> None:
    """Pinned by identity, a test whose skip marker goes is a changed test too."""
    skipped = python_edit("def test_a():", "@pytest.mark.skip\ndef test_a():")
    found = findings_after(tmp_path, "tests/test_x.py", skipped, PYTHON_BEFORE, "pytest")
    assert found == [("test_a", "its code changed since /implement")]


def test_a_node_id_pins_only_the_tests_it_selects(tmp_path: Path) -> None:
    after = python_edit("    assert compute() != 4\n", "").replace(
        "        self.assertEqual(compute(), 3)\n", ""
    )
    command = "pytest tests/test_x.py::TestGroup tests/test_x.py::test_p[1]"
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, command)
    assert ("TestGroup::test_m", "assertions removed (2 -> 1)") in found
    assert all(test.startswith(("TestGroup", "test_p")) for test, _ in found), found
    whole = command + " && pytest tests/test_x.py"
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, whole)
    assert {"TestGroup::test_m", "test_a"} <= {test for test, _ in found}


def test_a_new_test_file_in_a_named_directory_is_not_reported(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_x.py", PYTHON_BEFORE)
    pin = snapshot(str(tmp_path), ["python -m pytest tests/ -q"])
    write(tmp_path, "tests/test_new.py", "def test_new():\n    assert True\n")
    assert weakened(str(tmp_path), pin) == []


# -- files: deleted, replaced, unreadable, too large -------------------------------------


def test_a_deleted_file_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "tests/test_x.py", PYTHON_BEFORE)
    pin = snapshot(str(tmp_path), ["pytest tests/test_x.py::test_a"])
    path.unlink()
    assert weakened(str(tmp_path), pin) == [Finding("tests/test_x.py", None, "deleted")]


def test_a_file_replaced_by_a_fifo_is_reported_without_opening_it(tmp_path: Path) -> None:
    path = write(tmp_path, "tests/test_x.py", PYTHON_BEFORE)
    pin = snapshot(str(tmp_path), ["pytest tests/test_x.py"])
    path.unlink()
    os.mkfifo(path)
    assert weakened(str(tmp_path), pin) == [
        Finding("tests/test_x.py", None, "replaced by a special file")
    ]


def test_a_file_replaced_by_a_symlink_to_a_trivial_one_is_judged_by_content(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "tests/test_x.py", PYTHON_BEFORE)
    pin = snapshot(str(tmp_path), ["pytest tests/test_x.py"])
    trivial = write(tmp_path, "elsewhere/trivial.py", "def test_a():\n    assert True\n")
    path.unlink()
    path.symlink_to(trivial)
    found = {(f.test, f.how) for f in weakened(str(tmp_path), pin)}
    assert ("test_a", "assertion replaced by a constant") in found
    assert ("test_b", "deleted") in found


def test_past_the_file_cap_the_snapshot_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(3):
        write(tmp_path, f"tests/test_{number}.py", "def test_a():\n    assert 1 == x\n")
    monkeypatch.setattr(integrity.limits, "MAX_FILES", 2)
    pin = snapshot(str(tmp_path), ["pytest tests"])
    assert sorted(pin["files"]) == ["tests/test_0.py", "tests/test_1.py"]
    found = weakened(str(tmp_path), pin)
    assert [f.how for f in found] == [
        "not checked: the commands name 3 files; only the first 2 (in path order) are checked"
    ]


def test_a_file_over_the_byte_cap_is_pinned_by_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrity.limits, "MAX_FILE_BYTES", 100)
    path = write(tmp_path, "tests/test_big.py", PYTHON_BEFORE)
    pin = snapshot(str(tmp_path), ["pytest tests/test_big.py"])
    assert weakened(str(tmp_path), pin) == []
    path.write_text(PYTHON_BEFORE + "\n# grown\n")
    [finding] = weakened(str(tmp_path), pin)
    assert finding.how.startswith("changed, and it is too large to check")


def test_python_nested_too_deeply_is_a_parse_error_not_a_crash() -> None:
    inventory, error = inventory_of("python", b"x = " + b"(" * 100_000 + b")" * 100_000)
    assert inventory == {}
    assert error


def test_an_unterminated_javascript_name_stays_fast() -> None:
    """Patterns are bounded, names counted in a dict: 100,000 unterminated test calls
    (quadratic before) are read in linear time."""
    inventory, error = inventory_of("javascript", b"it('" * 100_000)
    assert error is None
    assert len(inventory) == 50_001


def test_a_malformed_pin_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    assert weakened(str(tmp_path), {"files": "nonsense"})[0].how.startswith("the integrity pin")
    pin = {"schema": integrity.SCHEMA, "files": {"a.py": ["not", "a", "dict"]}}
    assert weakened(str(tmp_path), pin) == [Finding("a.py", None, "its pin is unreadable")]


def test_the_message_names_file_test_and_way_out() -> None:
    message = Finding("tests/test_x.py", "TestGroup::test_m", "skip marker added").message()
    assert "tests/test_x.py::TestGroup::test_m" in message
    assert "skip marker added" in message
    assert "restore it, or /pytest-acceptance:escalate for a human decision" in message


# -- which files a command names ---------------------------------------------------------


PYTEST_LOADS = ["tests/conftest.py", "tests/helpers.py"]  # loaded, or importable, by the tests


@pytest.mark.parametrize(
    "command, expected",
    [
        ("pytest tests/test_x.py::test_a -q", [*PYTEST_LOADS, "tests/test_x.py"]),
        ("pytest tests/deep/test_y.py", [*PYTEST_LOADS, "tests/deep/test_y.py"]),
        ("python -m pytest tests/ -x", [*PYTEST_LOADS, "tests/deep/test_y.py", "tests/test_x.py"]),
        ("cd . && pytest", [*PYTEST_LOADS, "tests/deep/test_y.py", "tests/test_x.py"]),
        ("bash scripts/check.sh --strict", ["scripts/check.sh"]),
        ("go test ./pkg/...", ["pkg/inner/b_test.go", "pkg/a_test.go"]),
        ("go test ./pkg", ["pkg/a_test.go"]),
        ("npm test", ["package.json", "web/app.test.ts", "web/__tests__/c.js"]),
        ("pytest ../outside/test_out.py /etc/passwd", []),
        ("ruff check tests", []),
        ("pytest 'unbalanced", [*PYTEST_LOADS, "tests/deep/test_y.py", "tests/test_x.py"]),
    ],
)
def test_the_files_a_command_names(tmp_path: Path, command: str, expected: list[str]) -> None:
    root = tmp_path / "project"
    for relative in (
        "tests/test_x.py",
        "tests/conftest.py",
        "tests/deep/test_y.py",
        "tests/helpers.py",
        "scripts/check.sh",
        "pkg/a_test.go",
        "pkg/a.go",
        "pkg/inner/b_test.go",
        "web/app.test.ts",
        "web/app.ts",
        "web/__tests__/c.js",
        "node_modules/lib/x.test.js",
        "package.json",
    ):
        write(root, relative, '{"scripts": {"test": "jest"}}' if relative == "package.json" else "")
    write(tmp_path, "outside/test_out.py", "def test_o():\n    assert x\n")
    assert sorted(snapshot(str(root), [command])["files"]) == sorted(expected)


# -- JavaScript / TypeScript, Go, shell, package.json ------------------------------------

JS_BEFORE = """
describe('cart', () => {
  it('adds items', () => {
    expect(cart.add(1)).toBe(1);
    expect(cart.size()).toEqual(1); // counted once
  });
  test("removes items", async () => {
    expect(await cart.remove(1)).toBe(0);
  });
});
"""

JS_CASES = {
    "it.skip": (
        JS_BEFORE.replace("it('adds", "it.skip('adds"),
        ("adds items", "skip marker added"),
    ),
    "xit": (JS_BEFORE.replace("it('adds", "xit('adds"), ("adds items", "skip marker added")),
    "test.todo": (
        JS_BEFORE.replace('test("removes', 'test.todo("removes'),
        ("removes items", "skip marker added"),
    ),
    "describe.skip": (
        JS_BEFORE.replace("describe(", "describe.skip("),
        (None, "skip marker added"),
    ),
    ".only": (JS_BEFORE.replace("it('adds", "it.only('adds"), (None, "an .only marker added")),
    "expect removed": (
        JS_BEFORE.replace("    expect(cart.size()).toEqual(1); // counted once\n", ""),
        ("adds items", "assertions removed (2 -> 1)"),
    ),
    "expect(true)": (
        JS_BEFORE.replace("expect(cart.size()).toEqual(1)", "expect(true).toBe(true)"),
        ("adds items", "assertion replaced by a constant"),
    ),
    "test commented out": (
        JS_BEFORE.replace('  test("removes', '  // test("removes'),
        ("removes items", "deleted"),
    ),
}


def test_javascript_additions_are_not_reported(tmp_path: Path) -> None:
    after = (
        JS_BEFORE.replace(
            "    expect(cart.size()).toEqual(1);",
            "    expect(cart.size()).toEqual(1);\n    expect(cart.items()).toContain(1);",
        )
        + "\nit('clears', () => { expect(cart.clear()).toBe(true); });\n"
    )
    assert findings_after(tmp_path, "web/cart.test.ts", JS_BEFORE, after, "vitest run web") == []


GO_BEFORE = """
package pkg

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Errorf("Add(1, 2) = %d", Add(1, 2))
	}
	require.Equal(t, 3, Add(1, 2))
}

func TestSub(tt *testing.T) {
	if Sub(2, 1) != 1 {
		tt.Fatal("Sub")
	}
}
"""

GO_CASES = {
    "t.Skip": (
        GO_BEFORE.replace(
            "func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tt.Skip()\n"
        ),
        ("TestAdd", "skip marker added"),
    ),
    "check removed": (
        GO_BEFORE.replace("\trequire.Equal(t, 3, Add(1, 2))\n", ""),
        ("TestAdd", "assertions removed (2 -> 1)"),
    ),
    "constant": (
        GO_BEFORE.replace("require.Equal(t, 3, Add(1, 2))", "require.True(t, true)"),
        ("TestAdd", "assertion replaced by a constant"),
    ),
    "test deleted": (
        GO_BEFORE.replace("func TestSub(tt", "func helperSub(tt"),
        ("TestSub", "deleted"),
    ),
}


LANGUAGES = {  # file, content before, command, weakenings
    "python": ("tests/test_x.py", PYTHON_BEFORE, "pytest tests/", PYTHON_WEAKENINGS),
    "js": ("web/cart.test.ts", JS_BEFORE, "npx jest web/", JS_CASES),
    "go": ("pkg/math_test.go", GO_BEFORE, "go test ./...", GO_CASES),
}


@pytest.mark.parametrize(
    "relative, before, command, after, expected",
    [
        pytest.param(relative, before, command, after, expected, id=f"{language}-{name}")
        for language, (relative, before, command, cases) in LANGUAGES.items()
        for name, (after, expected) in cases.items()
    ],
)
def test_each_weakening_is_reported_with_file_and_test(
    tmp_path: Path, relative: str, before: str, command: str, after: str, expected
) -> None:
    found = findings_after(tmp_path, relative, before, after, command)
    test, how = expected
    assert any(t == test and h.startswith(how) for t, h in found), found


def test_a_new_go_test_is_not_reported(tmp_path: Path) -> None:
    after = GO_BEFORE + '\nfunc TestMul(t *testing.T) {\n\tt.Skip("later")\n}\n'
    assert findings_after(tmp_path, "pkg/math_test.go", GO_BEFORE, after, "go test ./pkg") == []


def test_a_check_script_that_now_exits_early_is_reported(tmp_path: Path) -> None:
    before = "#!/bin/sh\nset -e\ngrep -q ready status.txt\ntest -f out.bin\n"
    after = "#!/bin/sh\nexit 0\nset -e\ngrep -q ready status.txt\ntest -f out.bin\n"
    found = findings_after(tmp_path, "scripts/check.sh", before, after, "bash scripts/check.sh")
    assert found == [(None, "changed")]


def test_a_changed_npm_test_script_is_reported(tmp_path: Path) -> None:
    before = '{"scripts": {"test": "jest", "lint": "eslint ."}}'
    after = '{"scripts": {"test": "jest --passWithNoTests || true", "lint": "eslint ."}}'
    found = findings_after(tmp_path, "package.json", before, after, "npm test")
    assert found == [
        ("npm test", "the script it runs changed ('jest' -> 'jest --passWithNoTests || true')")
    ]
    lint_only = '{"scripts": {"test": "jest", "lint": "true"}}'
    assert findings_after(tmp_path, "package.json", before, lint_only, "npm test") == []


@pytest.mark.parametrize(
    "command, target",
    [("make test", "make test"), ("make -j2 test && echo ok", "make test"), ("make", None)],
)
def test_a_changed_make_recipe_is_reported(tmp_path: Path, command: str, target) -> None:
    before = ".PHONY: test\ntest: build\n\tpytest tests/\n\nbuild:\n\tcc -o app app.c\n"
    after = before.replace("\tpytest tests/", "\ttrue")
    found = findings_after(tmp_path, "Makefile", before, after, command)
    test = target or "make (default goal)"
    assert found == [(test, "the script it runs changed ('pytest tests/' -> 'true')")]
    build_only = before.replace("cc -o app", "cc -O2 -o app")  # make reads it all: reported
    assert findings_after(tmp_path, "Makefile", before, build_only, command) == [(None, "changed")]


def test_a_cd_before_the_runner_resolves_paths_from_there(tmp_path: Path) -> None:
    write(tmp_path, "service/tests/test_s.py", "def test_s():\n    assert run() == 1\n")
    pin = snapshot(str(tmp_path), ["cd service && pytest tests/"])
    assert sorted(pin["files"]) == ["service/tests/test_s.py"]


# -- generated Python test modules -------------------------------------------------------

TESTS = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 2), st.booleans()),  # real, constant, skip
    min_size=1,
    max_size=5,
)


def module_source(tests: list[tuple[int, int, bool]]) -> str:
    lines = ["import pytest", ""]
    for number, (real, constant, skip) in enumerate(tests):
        if skip:
            lines.append("@pytest.mark.skip")
        lines.append(f"def test_{number}():")
        lines += [f"    assert value({index}) == {index}" for index in range(real)]
        lines += ["    assert True"] * constant
        lines += ["    pass", ""]
    return "\n".join(lines)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tests=TESTS, data=st.data())
def test_generated_modules_weakened_and_strengthened(tmp_path_factory, tests, data) -> None:
    """Removing a real assertion from any test reports that test, and says how; adding one is
    a change of a pinned test too (pinned by identity)."""
    root = tmp_path_factory.mktemp("generated")
    write(root, "test_gen.py", module_source(tests))
    pin = snapshot(str(root), ["pytest test_gen.py"])
    assert weakened(str(root), pin) == []
    target = data.draw(st.integers(0, len(tests) - 1))
    real, constant, skip = tests[target]
    stronger = [*tests]
    stronger[target] = (real + 1, constant, skip)
    write(root, "test_gen.py", module_source(stronger))
    assert [(f.test, f.how) for f in weakened(str(root), pin)] == [
        (f"test_{target}", "its code changed since /implement")
    ]
    if real:
        weaker = [*tests]
        weaker[target] = (real - 1, constant, skip)
        write(root, "test_gen.py", module_source(weaker))
        assert [(f.test, f.how) for f in weakened(str(root), pin)] == [
            (f"test_{target}", f"assertions removed ({real} -> {real - 1})")
        ]


@settings(max_examples=120, deadline=None)
@given(
    kind=st.sampled_from(["python", "javascript", "go", "npm", "shell", "other"]),
    content=st.one_of(
        st.binary(max_size=300),
        st.text(
            alphabet=st.sampled_from("deftsxi():@.\n =assertpyTestmark,'\"[]{}`/*\\"), max_size=300
        ),
    ),
)
def test_any_content_gives_an_inventory_or_a_parse_error(kind: str, content) -> None:
    """Garbage never raises: it is an inventory (JSON-serialisable) or a parse error."""
    raw = content if isinstance(content, bytes) else content.encode()
    inventory, error = inventory_of(kind, raw, ["test"])
    json.dumps(inventory)
    assert error is None or isinstance(error, str)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    command=st.one_of(
        st.text(max_size=80),
        st.lists(
            st.sampled_from(
                [
                    "pytest",
                    "go",
                    "test",
                    "npm",
                    "make",
                    "cd",
                    "&&",
                    "|",
                    "tests/",
                    "./...",
                    "tests/test_x.py::T::t[1]",
                    "-k",
                    "x=1",
                    "'",
                    '"',
                    "..",
                    "/",
                    "\0",
                    "~",
                ]
            ),
            max_size=8,
        ).map(" ".join),
    )
)
def test_any_command_gives_a_pin(tmp_path_factory, command: str) -> None:
    """Whatever a criterion's command says, the snapshot is a JSON pin and checking it
    against the unchanged tree reports nothing."""
    root = tmp_path_factory.mktemp("commands")
    write(root, "tests/test_x.py", PYTHON_BEFORE)
    write(root, "Makefile", "test:\n\tpytest\n")
    pin = json.loads(json.dumps(snapshot(str(root), [command])))
    assert weakened(str(root), pin) == []


# -- what a criterion's pytest loads: pinned by content hash -------------------------------


def changes(root: Path, command: str, edits: dict[str, str | None]) -> list[tuple[str, str, str]]:
    """(file, how, why) of every whole-file finding after the edits."""
    return [(f.file, f.how, f.why) for f in after_edits(root, [command], edits) if f.test is None]


LOADS = integrity.PYTEST_LOADS
READS = integrity.PYTEST_READS
EXIT = "import os\nos._exit(0)\n"
DESELECT = "def pytest_collection_modifyitems(items):\n    items[:] = []\n"
CO = "[pytest]\naddopts = --co\n"
PROJECT = '[project]\nname = "app"\n'
SECTION = "a pytest section added"
HELPER = integrity.TESTS_IMPORT
PYTEST_ROUTES = [  # (the file, its new content or None to delete it, how, why)
    ("tests/conftest.py", EXIT + CONFTEST, "changed", LOADS),
    ("tests/conftest.py", CONFTEST + DESELECT, "changed", LOADS),
    ("tests/conftest.py", None, "deleted", LOADS),
    ("conftest.py", EXIT, "added", LOADS),
    ("tests/deep/conftest.py", DESELECT, "added", LOADS),
    ("pytest.ini", CO, "added", READS),
    ("tests/.pytest.ini", CO, "added", READS),
    ("tox.ini", CO, "added", READS),
    ("pyproject.toml", PROJECT + '[tool.pytest.ini_options]\naddopts = "--co"\n', SECTION, READS),
    ("pyproject.toml", PROJECT + '[tool.pytest]\naddopts = ["--co"]\n', SECTION, READS),
    ("pyproject.toml", 'tool.pytest.ini_options.addopts = "--co"\n' + PROJECT, SECTION, READS),
    (
        "pyproject.toml",
        PROJECT + '[tool."\\u0070ytest".ini_options]\naddopts="--co"\n',
        SECTION,
        READS,
    ),
    (
        "setup.cfg",
        "[flake8]\nmax-line-length = 100\n[tool:pytest]\naddopts = --co\n",
        SECTION,
        READS,
    ),
    ("tests/helpers.py", "def make():\n    return 2\n", "changed", HELPER),
    ("tests/__init__.py", EXIT, "changed", HELPER),
]


@pytest.mark.parametrize(
    "relative, text, how, why",
    PYTEST_ROUTES,
    ids=[
        f"{relative}:{how}:{number}" for number, (relative, _, how, _) in enumerate(PYTEST_ROUTES)
    ],
)
def test_what_a_criterions_pytest_loads_is_pinned(
    tmp_path: Path, relative: str, text: str | None, how: str, why: str
) -> None:
    """Conftest exits or deselects, config turns on --co (every form pytest reads), a
    helper or package __init__ changes: each reported with file and reason."""
    assert changes(project(tmp_path), "pytest tests/", {relative: text}) == [(relative, how, why)]


PYTEST_HONEST = {
    "a new test, an extra assertion and a new test file": {
        "tests/test_x.py": FAILING_TEST + "    assert compute() > 0\n\ndef test_new():\n"
        "    assert compute() != 4\n",
        "tests/test_more.py": "def test_more():\n    assert compute() == 3\n",
    },
    "the implementation changed": {"src/app.py": "def compute():\n    return 3\n"},
    "a dependency added to pyproject.toml": {
        "pyproject.toml": '[project]\nname = "app"\ndependencies = ["requests", "rich"]\n'
        "\n[tool.ruff]\nline-length = 100\n"
    },
    "flake8 settings changed": {"setup.cfg": "[flake8]\nmax-line-length = 120\n"},
    "a new helper module nothing imports yet": {"tests/factories.py": "def build():\n    pass\n"},
    "a pyproject.toml without pytest settings in the tests folder": {
        "tests/pyproject.toml": "[tool.black]\nline-length = 100\n"
    },
}


@pytest.mark.parametrize("edits", PYTEST_HONEST.values(), ids=PYTEST_HONEST)
def test_honest_work_around_a_pytest_criterion_is_not_reported(tmp_path: Path, edits) -> None:
    assert changes(project(tmp_path), "pytest tests/", edits) == []


def test_pinned_pytest_sections_ignore_the_rest_of_a_shared_file(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "app"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    root = project(
        tmp_path, {"pyproject.toml": pyproject, "tox.ini": "[pytest]\nxfail_strict = true\n"}
    )
    edits = {
        "pyproject.toml": pyproject.replace('name = "app"', 'name = "app2"'),
        "tox.ini": "[tox]\nenvlist = py312\n\n[pytest]\nxfail_strict = true\n",
    }
    assert changes(root, "pytest tests/", edits) == []
    edits = {"pyproject.toml": pyproject.replace('"-q"', '"-q --co"'), "tox.ini": "[tox]\n"}
    assert changes(root, "pytest tests/", edits) == [
        ("pyproject.toml", "changed", READS),
        ("tox.ini", "its pytest section removed", READS),
    ]


def test_plugins_a_pinned_file_or_the_command_loads_are_pinned(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "conftest.py": 'pytest_plugins = ["support.fixtures"]\n',
            "support/fixtures.py": "import pytest\n",
            "support/cli_plugin.py": "import pytest\n",
            "support/ini_plugin.py": "import pytest\n",
            "pytest.ini": "[pytest]\naddopts = -p support.ini_plugin\n",
        },
    )
    command = "python -m pytest -p support.cli_plugin tests/"
    edits = {
        f"support/{name}.py": "import os\nos._exit(0)\n"
        for name in ("fixtures", "cli_plugin", "ini_plugin")
    }
    assert changes(root, command, edits) == [
        (f"support/{name}.py", "changed", LOADS)
        for name in ("cli_plugin", "fixtures", "ini_plugin")
    ]


def test_a_config_file_named_with_dash_c_is_pinned(tmp_path: Path) -> None:
    root = project(tmp_path, {"ci/pytest-ci.ini": "[pytest]\naddopts = -q\n"})
    edits = {"ci/pytest-ci.ini": "[pytest]\naddopts = --co\n"}
    assert changes(root, "pytest -c ci/pytest-ci.ini tests", edits) == [
        ("ci/pytest-ci.ini", "changed", READS)
    ]


def test_a_cd_before_pytest_watches_the_configuration_where_it_starts(tmp_path: Path) -> None:
    write(tmp_path, "service/tests/test_s.py", "def test_s():\n    assert run() == 1\n")
    edits = {"service/tests/pytest.ini": "[pytest]\naddopts = --co\n"}
    assert changes(tmp_path, "cd service && pytest tests/", edits) == [
        ("service/tests/pytest.ini", "added", READS)
    ]


def test_colocated_tests_never_pin_the_code_beside_them(tmp_path: Path) -> None:
    """Only test folders hold helpers: the module a colocated test checks is the work (its
    package's __init__.py too), but a new __init__.py beside the test runs on import."""
    write(tmp_path, "pkg/calc.py", "def add(a, b):\n    return 0\n")
    write(tmp_path, "pkg/sub/__init__.py", "")
    write(tmp_path, "pkg/sub/test_sub.py", "def test_sub():\n    assert sub() == 0\n")
    edits = {"pkg/sub/__init__.py": "from .impl import sub\n", "pkg/__init__.py": "import os\n"}
    assert changes(tmp_path, "pytest pkg/sub", edits) == [("pkg/__init__.py", "added", LOADS)]
    write(
        tmp_path,
        "pkg/test_calc.py",
        "from pkg.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    )
    edits = {"pkg/calc.py": "def add(a, b):\n    return a + b\n"}
    assert changes(tmp_path, "pytest pkg/test_calc.py", edits) == []


CONFIG_FORMS = {  # file, content: real pytest reads each and collects nothing
    "pytest.ini": ("pytest.ini", "[pytest]\naddopts = --co\n"),
    "pyproject escaped key": (
        "pyproject.toml",
        '[project]\nname = "app"\n[tool."\\u0070ytest".ini_options]\naddopts = "--co"\n',
    ),
    "pyproject dotted key": ("pyproject.toml", 'tool.pytest.ini_options.addopts = "--co"\n'),
    "setup.cfg": ("setup.cfg", "[flake8]\nx = 1\n[tool:pytest]\naddopts = --co\n"),
}


@pytest.mark.parametrize("relative, text", CONFIG_FORMS.values(), ids=CONFIG_FORMS)
def test_each_configuration_form_really_weakens_and_is_reported(
    tmp_path: Path, relative: str, text: str
) -> None:
    """The real pytest (a subprocess) passes a failing test under each configuration form,
    and integrity reports that form."""
    import subprocess
    import sys

    write(tmp_path, "tests/test_x.py", "def test_fails():\n    assert False\n")
    pin = snapshot(str(tmp_path), ["pytest tests/"])
    write(tmp_path, relative, text)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert [(f.file, f.why) for f in weakened(str(tmp_path), pin)] == [(relative, READS)]


# -- the scripts, tools and Makefiles a command runs: pinned by content hash -------------

CHECK_SCRIPT = "#!/bin/sh\nset -e\ngrep -q ready status.txt\ntest -f out.bin\n"
SCRIPT_ROUTES = {
    "exit 0 appended": CHECK_SCRIPT + "exit 0\n",
    "|| true added": CHECK_SCRIPT.replace("status.txt", "status.txt || true"),
    ": prefixed": CHECK_SCRIPT.replace("grep", ": grep"),
}
SCRIPT_COMMANDS = [
    "bash scripts/check.sh",
    "./scripts/check.sh --strict",
    "sh scripts/check.sh",
    "cd scripts && bash ./check.sh",
    "env CI=1 timeout 60 scripts/check.sh",
]


@pytest.mark.parametrize("after", SCRIPT_ROUTES.values(), ids=SCRIPT_ROUTES)
@pytest.mark.parametrize("command", SCRIPT_COMMANDS)
def test_a_weakened_check_script_is_reported(tmp_path: Path, command: str, after: str) -> None:
    write(tmp_path, "scripts/check.sh", CHECK_SCRIPT)
    assert changes(tmp_path, command, {"scripts/check.sh": after}) == [
        ("scripts/check.sh", "changed", integrity.RUNS)
    ]


@pytest.mark.parametrize("command", ["python tools/check.py --all", "python3 -m tools.check"])
def test_a_weakened_python_tool_is_reported(tmp_path: Path, command: str) -> None:
    write(tmp_path, "tools/check.py", "import sys\nsys.exit(run())\n")
    edits = {"tools/check.py": "import sys\nsys.exit(0)\nsys.exit(run())\n"}
    assert changes(tmp_path, command, edits) == [("tools/check.py", "changed", integrity.RUNS)]


EXPANDED = "the script it runs changed ('pytest tests/' -> 'pytest --co tests/')"


@pytest.mark.parametrize(
    "command, makefile, test, how",
    [
        ("make check", "Makefile", "make check", EXPANDED),  # read with its variables
        ("make -C sub check", "sub/Makefile", None, "changed"),
        ("make -f ci.mk check", "ci.mk", None, "changed"),
    ],
)
def test_a_makefile_weakened_outside_the_recipe_is_reported(
    tmp_path: Path, command: str, makefile: str, test: str | None, how: str
) -> None:
    """The recipe stays ``pytest $(ARGS)``: the variable it reads is what changed."""
    before = "ARGS = tests/\n\ncheck:\n\tpytest $(ARGS)\n"
    write(tmp_path, makefile, before)
    pin = snapshot(str(tmp_path), [command])
    write(tmp_path, makefile, before.replace("ARGS = tests/", "ARGS = --co tests/"))
    found = [(f.file, f.test, f.how, f.why) for f in weakened(str(tmp_path), pin)]
    assert found == [(makefile, test, how, integrity.RUNS if test else integrity.MAKE_READS)]


def test_a_built_binary_the_command_runs_is_the_work_not_a_check(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build/app").write_bytes(b"\x7fELF old")
    assert changes(tmp_path, "./build/app --selftest", {"build/app": "\x7fELF new"}) == []


# -- JavaScript runner configuration -----------------------------------------------------


def test_javascript_runner_configuration_is_pinned(tmp_path: Path) -> None:
    package = {
        "scripts": {"test": "jest"},
        "jest": {"testMatch": ["**/*.test.js"]},
        "dependencies": {"left-pad": "1"},
    }
    write(tmp_path, "package.json", json.dumps(package))
    write(tmp_path, "jest.config.js", "module.exports = {};\n")
    write(tmp_path, "web/a.test.js", "it('a', () => { expect(a()).toBe(1); });\n")
    honest = {**package, "dependencies": {"left-pad": "2"}}
    assert changes(tmp_path, "npm test", {"package.json": json.dumps(honest)}) == []
    edits = {
        "jest.config.js": "module.exports = { testPathIgnorePatterns: ['web'] };\n",
        "vitest.config.ts": "export default {};\n",
    }
    assert changes(tmp_path, "npx jest", edits) == [
        ("jest.config.js", "changed", integrity.RUNNER_READS),
        ("vitest.config.ts", "added", integrity.RUNNER_READS),
    ]
    weaker = {**package, "jest": {"testMatch": ["nothing"]}}
    pin = snapshot(str(tmp_path), ["npm test"])
    write(tmp_path, "package.json", json.dumps(weaker))
    assert [(f.file, f.test, f.how) for f in weakened(str(tmp_path), pin)] == [
        ("package.json", "jest config", "its test configuration changed")
    ]


def test_the_message_says_how_the_criterion_depends_on_the_file() -> None:
    message = Finding("tests/conftest.py", None, "changed", integrity.PYTEST_LOADS).message()
    assert message.startswith("tests/conftest.py: changed since /pytest-acceptance:implement")
    assert "a criterion's pytest loads it" in message
    added = Finding("conftest.py", None, "added", integrity.PYTEST_LOADS).message()
    assert "remove it, or /pytest-acceptance:escalate" in added


# -- configuration content never breaks the contract -------------------------------------

CONFIG_TEXT = st.text(
    alphabet=st.sampled_from("[]#;:=.\"'\\ \n\ttoolpyest_inaddopts-u0\ufeff"), max_size=200
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(
        ["pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "conftest.py", "jest.config.js"]
    ),
    before=st.one_of(st.binary(max_size=200), CONFIG_TEXT.map(str.encode)),
    after=st.one_of(st.binary(max_size=200), CONFIG_TEXT.map(str.encode)),
)
def test_any_configuration_bytes_give_a_pin_and_findings(tmp_path_factory, name, before, after):
    """Whatever a configuration file holds, before and after: the pin is JSON, the
    unchanged tree reports nothing, and a changed one gives findings with a file and a
    reason (never an exception)."""
    root = tmp_path_factory.mktemp("config")
    write(root, "tests/test_x.py", FAILING_TEST)
    (root / name).write_bytes(before)
    pin = json.loads(json.dumps(snapshot(str(root), ["pytest tests/", "npx jest"])))
    assert weakened(str(root), pin) == []
    (root / name).write_bytes(after)
    for finding in weakened(str(root), pin):
        assert finding.file == name and finding.how and finding.message()


@settings(max_examples=80, deadline=None)
@given(
    description=st.text(
        alphabet=st.characters(blacklist_characters='"\\\n\r', blacklist_categories=["Cs", "Cc"]),
        max_size=40,
    ),
    addopts=st.text(
        alphabet=st.characters(blacklist_characters='"\\\n\r', blacklist_categories=["Cs", "Cc"]),
        max_size=40,
    ),
)
def test_pyproject_edits_report_exactly_when_pytest_reads_them(description, addopts) -> None:
    """Editing the project's description never changes the pinned part; editing addopts
    always does."""

    def pyproject(description: str, addopts: str) -> bytes:
        return (
            f'[project]\nname = "app"\ndescription = "{description}"\n\n'
            f'[tool.pytest.ini_options]\naddopts = "{addopts}"\n'
        ).encode()

    part = integrity.config.pytest_part
    base = part("pyproject.toml", pyproject("x", "-q"))
    assert part("pyproject.toml", pyproject(description, "-q")) == base
    assert (part("pyproject.toml", pyproject("x", addopts)) == base) == (addopts == "-q")


@pytest.mark.parametrize(
    "runner_file, content, command",
    [
        ("Makefile", "check: lint\n\t@pytest tests/\n\nlint:\n\truff check .\n", "make check"),
        ("package.json", '{"scripts": {"test": "make check"}}', "npm test"),
    ],
)
def test_what_an_npm_script_or_make_recipe_runs_is_pinned_too(
    tmp_path: Path, runner_file: str, content: str, command: str
) -> None:
    """``make check`` runs ``pytest tests/``: the tests and what that pytest loads are pinned
    as if the criterion ran it (through ``npm test`` -> ``make check`` as well)."""
    root = project(tmp_path, {runner_file: content})
    write(root, "Makefile", "check: lint\n\t@pytest tests/\n\nlint:\n\truff check .\n")
    weaker = FAILING_TEST.replace("compute() == 3", "True")
    edits = {"tests/conftest.py": EXIT + CONFTEST, "tests/test_x.py": weaker}
    pin = snapshot(str(root), [command])
    for relative, text in edits.items():
        write(root, relative, text)
    found = {(f.file, f.test, f.how) for f in weakened(str(root), pin)}
    assert found == {
        ("tests/conftest.py", None, "changed"),
        ("tests/test_x.py", "test_fails", "assertion replaced by a constant"),
    }
