"""Criterion integrity: every weakening of a file a criterion's command names is reported with
the file and the test; additions and refactors that keep the checks are never reported."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


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
}


PYTHON_HONEST = {
    "unchanged": PYTHON_BEFORE,
    "whitespace only": PYTHON_BEFORE.replace("\n\n", "\n\n\n"),
    "a new test": PYTHON_BEFORE + "\ndef test_new():\n    assert True\n",
    "an extra assertion": python_edit(
        "    assert compute() != 4\n", "    assert compute() != 4\n    assert compute() > 0\n"
    ),
    "a refactor keeping the assertions": python_edit(
        "def test_a():\n    assert compute() == 3\n    assert compute() != 4\n",
        "def test_a():\n    result = compute()  # once\n    assert result == 3, result\n"
        "    assert result != 4\n",
    ),
    "tests reordered, comments added": python_edit(
        "def test_a():\n    assert compute() == 3\n    assert compute() != 4\n\n", "# moved\n"
    )
    + "\ndef test_a():  # moved here\n    assert compute() == 3\n    assert compute() != 4\n",
    "more parametrized cases": python_edit("[1, 2, 3]", "[1, 2, 3, 4]"),
    "unittest assertion style": python_edit(
        "self.assertEqual(compute(), 3)", "self.assertEqual(compute(), 3, 'three')"
    ),
}


@pytest.mark.parametrize("after", PYTHON_HONEST.values(), ids=PYTHON_HONEST)
def test_python_changes_that_keep_the_checks_are_not_reported(tmp_path: Path, after: str) -> None:
    assert findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, "pytest tests") == []


def test_removing_a_skip_marker_is_not_reported(tmp_path: Path) -> None:
    skipped = python_edit("def test_a():", "@pytest.mark.skip\ndef test_a():")
    assert findings_after(tmp_path, "tests/test_x.py", skipped, PYTHON_BEFORE, "pytest") == []


def test_a_node_id_pins_only_the_tests_it_selects(tmp_path: Path) -> None:
    after = python_edit("    assert compute() != 4\n", "").replace(
        "        self.assertEqual(compute(), 3)\n", ""
    )
    command = "pytest tests/test_x.py::TestGroup tests/test_x.py::test_p[1]"
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, command)
    assert found == [("TestGroup::test_m", "assertions removed (2 -> 1)")]
    whole = command + " && pytest tests/test_x.py"
    found = findings_after(tmp_path, "tests/test_x.py", PYTHON_BEFORE, after, whole)
    assert [test for test, _ in found] == ["TestGroup::test_m", "test_a"]


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
    monkeypatch.setattr(integrity, "MAX_FILES", 2)
    pin = snapshot(str(tmp_path), ["pytest tests"])
    assert sorted(pin["files"]) == ["tests/test_0.py", "tests/test_1.py"]
    found = weakened(str(tmp_path), pin)
    assert [f.how for f in found] == [
        "not checked: the commands name 3 files; only the first 2 (in path order) are checked"
    ]


def test_a_file_over_the_byte_cap_is_pinned_by_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrity, "MAX_FILE_BYTES", 100)
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


@pytest.mark.parametrize(
    "command, expected",
    [
        ("pytest tests/test_x.py::test_a -q", ["tests/conftest.py", "tests/test_x.py"]),
        ("pytest tests/deep/test_y.py", ["tests/conftest.py", "tests/deep/test_y.py"]),
        (
            "python -m pytest tests/ -x",
            ["tests/conftest.py", "tests/deep/test_y.py", "tests/test_x.py"],
        ),
        ("cd . && pytest", ["tests/conftest.py", "tests/deep/test_y.py", "tests/test_x.py"]),
        ("bash scripts/check.sh --strict", ["scripts/check.sh"]),
        ("go test ./pkg/...", ["pkg/inner/b_test.go", "pkg/a_test.go"]),
        ("go test ./pkg", ["pkg/a_test.go"]),
        ("npm test", ["package.json", "web/app.test.ts", "web/__tests__/c.js"]),
        ("pytest ../outside/test_out.py /etc/passwd", []),
        ("ruff check tests", []),
        ("pytest 'unbalanced", ["tests/conftest.py", "tests/deep/test_y.py", "tests/test_x.py"]),
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
    assert (None, "it now exits before its checks") in found


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
    build_only = before.replace("cc -o app", "cc -O2 -o app")
    assert findings_after(tmp_path, "Makefile", before, build_only, command) == []


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
    """Removing a real assertion from any test reports that test; adding one never reports."""
    root = tmp_path_factory.mktemp("generated")
    write(root, "test_gen.py", module_source(tests))
    pin = snapshot(str(root), ["pytest test_gen.py"])
    assert weakened(str(root), pin) == []
    target = data.draw(st.integers(0, len(tests) - 1))
    real, constant, skip = tests[target]
    stronger = [*tests]
    stronger[target] = (real + 1, constant, skip)
    write(root, "test_gen.py", module_source(stronger))
    assert weakened(str(root), pin) == []
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
