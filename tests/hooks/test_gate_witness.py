"""The witnessed run: a criterion whose command runs pytest passes the gate only when that
pytest, through the gate's own reporter, says its session finished, a test passed, and
every test pinned at /implement for the command passed.

Each attack pins a flow with the real prompt hook on a project whose pinned test fails
(app.py says VALUE = 1), shows that /done is refused before the attack, makes the
criterion's pytest exit 0 without the pinned test passing, and asks the real PreToolUse
hook for /done: the gate runs the pinned spec itself and must refuse. Every attack here
gets past the criterion's exit code (`outside_the_gate(...) == 0` proves it), and each class has a
second variant, written after the witness, that it refuses with no code of its own.

Some shapes (a new conftest, a new pytest.ini) are also reported by criterion integrity
before the gate runs anything; `witness_alone` empties the integrity pin of the flow (a
snapshot of no files), so that those tests prove the witness refuses them by itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hook_transcripts import (
    METACLASS_PATCH,
    TEST_APP,
    TEST_OTHER,
    TESTS,
    WITNESS_SPEC,
    ask_gate,
    attack,
    outside_the_gate,
    pinned_flow,
    plugin_data,
    refused_before,
    witnessed_project,
    write,
)

from pytest_acceptance.gate.pins import criterion_integrity
from pytest_acceptance.integrity import SCHEMA, VERSION

NOT_WITNESSED = "not witnessed"


def flow_file() -> Path:
    (found,) = plugin_data().glob("**/flow.json")
    return found


def witness_alone() -> None:
    """Empty the flow's criterion integrity pin (it pins no file): what is left to refuse is
    the witness (standing in for a shape integrity does not know)."""
    path = flow_file().parent / "pins" / f"{criterion_integrity.NAME}.json"
    empty = {"schema": SCHEMA, "version": VERSION, "files": {}, "scripts": {}}
    path.write_text(json.dumps({**empty, "watch": [], "problems": []}))


def pinned_tests() -> dict[str, Any]:
    return dict(json.loads((flow_file().parent / "witness.json").read_text()))


def attacked(
    tmp_path: Path, files: dict[str, str], alone: bool = False, command: str = TESTS
) -> Any:
    """Pin, prove the gate live, plant `files`, and ask for /done; the planted files make the
    criterion (`command`) exit 0 on a tree where the pinned test fails. `alone`: with the
    witness alone to refuse it."""
    after_pin = witness_alone if alone else None
    return attack(
        witnessed_project(tmp_path, command), tmp_path, files, command, after_pin=after_pin
    )


# --- the session cut short ----------------------------------------------------------------


def test_a_new_test_that_calls_os_exit_0_is_refused(tmp_path: Path) -> None:
    """A new test file (free under criterion integrity: its test only runs code when called)
    whose test ends the process with os._exit(0) before the pinned test runs."""
    done = attacked(
        tmp_path, {"tests/test_aa_exit.py": "import os\n\n\ndef test_exit():\n    os._exit(0)\n"}
    )
    assert NOT_WITNESSED in done.deny_reason and "never finished" in done.deny_reason


def test_variant_a_new_test_that_execs_true_is_refused(tmp_path: Path) -> None:
    """Variant written after the witness: the new test replaces the process with `true`
    (os.execv), which exits 0 and never reaches pytest_sessionfinish."""
    code = "import os\n\n\ndef test_exec():\n    os.execv('/bin/true', ['true'])\n"
    done = attacked(tmp_path, {"tests/test_aa_exec.py": code})
    assert NOT_WITNESSED in done.deny_reason and "never finished" in done.deny_reason


def test_a_new_conftest_that_calls_os_exit_0_is_refused_by_the_witness_alone(
    tmp_path: Path,
) -> None:
    """A new conftest.py that ends the run with os._exit(0) once collection is done."""
    conftest = "import os\n\n\ndef pytest_collection_finish(session):\n    os._exit(0)\n"
    done = attacked(tmp_path, {"tests/conftest.py": conftest}, alone=True)
    assert NOT_WITNESSED in done.deny_reason and "never finished" in done.deny_reason


def test_a_pytest_under_a_wrapper_is_witnessed_and_a_new_conftests_exit_refused(
    tmp_path: Path,
) -> None:
    """``timeout 60`` passes the environment on (tree/shell.py's TRANSPARENT): the witness
    watches the pytest under it, and a new conftest.py ending the run with os._exit(0) is
    refused with the witness alone."""
    conftest = "import os\n\n\ndef pytest_collection_finish(session):\n    os._exit(0)\n"
    command = f"timeout 60 {TESTS}"
    done = attacked(tmp_path, {"tests/conftest.py": conftest}, alone=True, command=command)
    assert NOT_WITNESSED in done.deny_reason and "never finished" in done.deny_reason


def test_honest_a_pytest_under_a_wrapper_fixed_is_let_through(tmp_path: Path) -> None:
    command = f"nice -n 5 timeout 60 {TESTS}"
    fixed_and_done(witnessed_project(tmp_path, command), tmp_path, command)


def test_variant_the_code_under_test_exits_at_import_is_refused(tmp_path: Path) -> None:
    """Variant written after the witness: the code under test (no test file, no conftest:
    out of criterion integrity's sight) ends the process with os._exit(0) when pytest
    imports it."""
    code = "import os, sys\nVALUE = 1\nif 'pytest' in sys.modules:\n    os._exit(0)\n"
    done = attacked(tmp_path, {"app.py": code})
    assert NOT_WITNESSED in done.deny_reason and "never finished" in done.deny_reason


# --- planted skips ---------------------------------------------------------------------------


def test_a_skip_planted_in_the_code_under_test_is_refused(tmp_path: Path) -> None:
    """The code under test skips the module that imports it (pytest.skip at module level):
    test_app.py is skipped, test_other.py passes, pytest exits 0."""
    code = (
        "import sys\nVALUE = 1\nif 'pytest' in sys.modules:\n    import pytest\n"
        "    pytest.skip('later', allow_module_level=True)\n"
    )
    done = attacked(tmp_path, {"app.py": code})
    assert NOT_WITNESSED in done.deny_reason
    assert "tests/test_app.py::test_value (not run)" in done.deny_reason


def test_variant_a_unittest_skip_raised_by_the_code_under_test_is_refused(tmp_path: Path) -> None:
    """Variant written after the witness: unittest.SkipTest raised while pytest imports the
    code under test."""
    code = (
        "import sys, unittest\nVALUE = 1\nif 'pytest' in sys.modules:\n"
        "    raise unittest.SkipTest('later')\n"
    )
    done = attacked(tmp_path, {"app.py": code})
    assert "tests/test_app.py::test_value (not run)" in done.deny_reason


def test_a_skip_fixture_in_a_new_conftest_is_refused_by_the_witness_alone(tmp_path: Path) -> None:
    """A new conftest with an autouse fixture that skips every test named test_value."""
    conftest = (
        "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _later(request):\n"
        "    if request.node.name == 'test_value':\n        pytest.skip('later')\n"
    )
    done = attacked(tmp_path, {"tests/conftest.py": conftest}, alone=True)
    assert "tests/test_app.py::test_value (skipped)" in done.deny_reason


# --- pinned tests deselected -----------------------------------------------------------------

DESELECT_HOOK = (
    "def pytest_collection_modifyitems(config, items):\n"
    "    kept = [item for item in items if item.name != 'test_value']\n"
    "    config.hook.pytest_deselected(items=[i for i in items if i not in kept])\n"
    "    items[:] = kept\n"
)


def test_a_conftest_hook_that_deselects_the_pinned_test_is_refused_by_the_witness_alone(
    tmp_path: Path,
) -> None:
    done = attacked(tmp_path, {"tests/conftest.py": DESELECT_HOOK}, alone=True)
    assert "tests/test_app.py::test_value (not run)" in done.deny_reason


def test_a_new_pytest_ini_that_deselects_the_pinned_test_is_refused_by_the_witness_alone(
    tmp_path: Path,
) -> None:
    """In the tests' folder, which the criterion's pytest reads first (its rootdir), and
    which no configuration pin of the outer run covers: the witness sees the test not run."""
    ini = "[pytest]\naddopts = --deselect test_app.py::test_value\n"
    done = attacked(tmp_path, {"tests/pytest.ini": ini}, alone=True)
    assert "tests/test_app.py::test_value (not run)" in done.deny_reason, done.deny_reason


def test_variant_the_code_under_test_sets_a_keyword_filter_is_refused(tmp_path: Path) -> None:
    """Variant written after the witness: the code under test, imported during collection,
    finds pytest's Config and sets `-k "not test_value"` on it before the selection runs."""
    code = (
        "import gc, sys\nVALUE = 1\nif 'pytest' in sys.modules:\n"
        "    for _c in gc.get_objects():\n"
        "        if type(_c).__name__ == 'Config' and hasattr(_c, 'option'):\n"
        "            _c.option.keyword = 'not test_value'\n"
    )
    done = attacked(tmp_path, {"app.py": code})
    assert "tests/test_app.py::test_value (not run)" in done.deny_reason


# --- new test files that change what the pinned tests see ----------------------------------
# New tests are free, and they run in the pinned tests' process. Whatever a new file does there
# (at import, or in a test that runs first), the gate judges the pinned tests again in a run
# that collects only the files holding them.


ALONE_RUN = "run again without the test files added since /implement"


def test_a_new_test_files_metaclass_that_patches_the_code_is_refused(tmp_path: Path) -> None:
    """The metaclass runs at collection, before any test: the pinned test passes in the
    criterion's run. In the run with the pinned files only it fails, as on the tree."""
    done = attacked(tmp_path, {"tests/test_registry.py": METACLASS_PATCH})
    assert ALONE_RUN in done.deny_reason
    assert "tests/test_app.py::test_value (failed)" in done.deny_reason


def test_variant_a_new_test_that_patches_the_code_when_it_runs_is_refused_by_the_witness_alone(
    tmp_path: Path,
) -> None:
    """Variant written after the run with pinned files only: nothing at import; a new test
    that pytest runs before the pinned one sets app.VALUE = 2 and never restores it."""
    patch = "import app\n\n\ndef test_aa_setup():\n    app.VALUE = 2\n"
    in_order = f"{TESTS} -p no:randomly"  # the installed pytest-randomly would shuffle them
    done = attacked(tmp_path, {"tests/test_aa_setup.py": patch}, alone=True, command=in_order)
    assert ALONE_RUN in done.deny_reason


def test_variant_under_xdist_the_workers_collect_only_the_pinned_files(tmp_path: Path) -> None:
    """Variant: the criterion's pytest spreads over two xdist workers, which collect in
    their own processes; the metaclass file stays out of them too."""
    files = {"tests/test_registry.py": METACLASS_PATCH}
    done = attacked(tmp_path, files, command=f"{TESTS} -p xdist -n 2")
    assert ALONE_RUN in done.deny_reason


# --- test code outside the collected files ---------------------------------------------------
# An assertion helper the project declares to pytest as test code (pytest rewrites its asserts)
# is pinned by content, wherever it lives: any change to it fails the criterion.

TEST_CODE = "test code its pytest loaded at /implement"
CHECKS = "def check_value(value):\n    assert value == 2, value\n"
TEST_WITH_CHECKS = (
    "import app\nfrom checks import check_value\n\n\ndef test_value():\n"
    "    check_value(app.VALUE)\n"
)
REGISTERED = "import pytest\n\npytest.register_assert_rewrite('checks')\n"


def helper_project(tmp_path: Path, conftest: str = REGISTERED) -> Path:
    return witnessed_project(
        tmp_path,
        files={
            "checks.py": CHECKS,
            "tests/conftest.py": conftest,
            "tests/test_app.py": TEST_WITH_CHECKS,
        },
    )


def helper_attacked(
    tmp_path: Path,
    files: dict[str, str],
    conftest: str = REGISTERED,
    alone: bool = False,
) -> Any:
    """`attacked` on the project with the helper."""
    repo = helper_project(tmp_path, conftest)
    builder = pinned_flow(repo)
    if alone:
        witness_alone()
    refused_before(builder, repo, tmp_path)
    write(repo, files)
    assert outside_the_gate(repo) == 0, "the attack must get past the exit code"
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied, f"/done let through after the attack: {done.stdout}"
    return done


def test_a_registered_assertion_helper_emptied_is_refused(tmp_path: Path) -> None:
    """checks.py at the root, registered for assertion rewriting by the pinned conftest: the
    agent makes check_value return without asserting."""
    done = helper_attacked(tmp_path, {"checks.py": "def check_value(value):\n    return None\n"})
    assert TEST_CODE in done.deny_reason and "checks.py" in done.deny_reason


def test_variant_a_registered_packages_submodule_rebinds_the_check_is_refused(
    tmp_path: Path,
) -> None:
    """Variant written after the pin of test code: the helper is a registered package's
    submodule (testkit/values.py, rewritten as testkit is), and the agent leaves its body
    alone but binds the name again at the end of the file."""
    repo = witnessed_project(
        tmp_path,
        files={
            "testkit/__init__.py": "",
            "testkit/values.py": CHECKS,
            "tests/conftest.py": "import pytest\n\npytest.register_assert_rewrite('testkit')\n",
            "tests/test_app.py": TEST_WITH_CHECKS.replace("from checks", "from testkit.values"),
        },
    )
    builder = pinned_flow(repo)
    refused_before(builder, repo, tmp_path)
    with (repo / "testkit" / "values.py").open("a") as module:
        module.write("\n\ncheck_value = lambda value: None  # noqa: E731\n")
    assert outside_the_gate(repo) == 0, "the attack must get past the exit code"
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied and TEST_CODE in done.deny_reason, done.stdout
    assert "testkit/values.py" in done.deny_reason


def test_a_plugin_helper_emptied_is_refused_by_the_witness_alone(tmp_path: Path) -> None:
    """The helper is a plugin module the pinned conftest names in `pytest_plugins` (pytest
    rewrites those too; criterion integrity, dropped here, pins them by name): emptied."""
    emptied = {"checks.py": "def check_value(value):\n    pass\n"}
    conftest = "pytest_plugins = ['checks']\n"
    done = helper_attacked(tmp_path, emptied, conftest, alone=True)
    assert TEST_CODE in done.deny_reason and "checks.py" in done.deny_reason


def test_honest_a_project_with_a_registered_helper_is_let_through(tmp_path: Path) -> None:
    """The helper untouched, the code fixed: pinned test code that did not change blocks
    nothing."""
    repo = helper_project(tmp_path)
    fixed_and_done(repo, tmp_path)
    assert any(path.endswith("checks.py") for path in pinned_tests()["AC-1"]["test_code"])


# --- honest flows ----------------------------------------------------------------------------


def fixed_and_done(repo: Path, tmp_path: Path, command: str = TESTS) -> Any:
    """Pin, fix the code, ask for /done; the criterion was witnessed."""
    builder = pinned_flow(repo)
    (repo / "app.py").write_text("VALUE = 2\n")
    builder.verify(repo / WITNESS_SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    assert "AC-1" in pinned_tests()
    return done


def test_honest_the_fixed_tree_is_let_through_and_its_tests_were_pinned(tmp_path: Path) -> None:
    repo = witnessed_project(tmp_path)
    fixed_and_done(repo, tmp_path)
    # No new test file: one run, none with the pinned files alone.
    assert not (flow_file().parent / "gate-run-pinned-only.log").exists()
    assert pinned_tests()["AC-1"]["ids"] == [
        "tests/test_app.py::test_value",
        "tests/test_other.py::test_other",
    ]


def test_honest_a_tdd_flow_that_adds_its_tests_later_is_let_through(tmp_path: Path) -> None:
    """At /implement the test that will check the feature does not exist yet, and one that
    does imports a function not written yet (a collection error): both are written in the
    flow, with the code."""
    repo = witnessed_project(tmp_path, files={"tests/test_feature.py": "from app import double\n"})
    builder = pinned_flow(repo)
    assert pinned_tests()["AC-1"]["ids"] == [
        "tests/test_app.py::test_value",
        "tests/test_other.py::test_other",
    ]
    (repo / "app.py").write_text("VALUE = 2\n\n\ndef double(x):\n    return 2 * x\n")
    (repo / "tests" / "test_feature.py").write_text(
        "from app import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    (repo / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    builder.verify(repo / WITNESS_SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    # New test files joined the pinned ones: the gate ran the pinned files alone as well.
    assert (flow_file().parent / "gate-run-pinned-only.log").exists()


def test_honest_a_test_added_to_a_pinned_file_is_let_through(tmp_path: Path) -> None:
    """TDD in an existing file: the agent adds a test to tests/test_app.py and fixes the
    code. The file changed, so the pinned tests run again apart, the file as it was pinned
    (its new test ran in the criterion's own run)."""
    repo = witnessed_project(tmp_path)
    builder = pinned_flow(repo)
    (repo / "app.py").write_text("VALUE = 2\n")
    with (repo / "tests" / "test_app.py").open("a") as module:
        module.write("\n\ndef test_value_is_even():\n    assert app.VALUE % 2 == 0\n")
    builder.verify(repo / WITNESS_SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    assert (flow_file().parent / "gate-run-pinned-only.log").exists()


def test_a_pinned_file_run_as_pinned_needs_assertion_rewriting(tmp_path: Path) -> None:
    """With pytest's assertion rewriting off (`--assert=plain`), a changed pinned file
    cannot be run as it was pinned: the criterion is refused, naming the file, rather than
    judged on code added to it."""
    command = f"{TESTS} --assert=plain"
    files = {"tests/test_other.py": TEST_OTHER + "\n\n" + METACLASS_PATCH}
    done = attacked(tmp_path, files, command=command)
    assert "tests/test_other.py: changed since /implement" in done.deny_reason


def test_a_kept_pinned_file_changed_in_the_plugins_state_is_not_run(tmp_path: Path) -> None:
    """The content kept at /implement runs only while it hashes as it did. The agent
    appends the patching metaclass to tests/test_app.py (the criterion's run passes) and
    rewrites the kept copy of the file into a test that cannot fail: the copy is not run,
    and the changed pinned file refuses the criterion."""
    kept = hashlib.sha256(TEST_APP.encode()).hexdigest()
    files = {"tests/test_app.py": TEST_APP + "\n\n" + METACLASS_PATCH}
    repo = witnessed_project(tmp_path, f"{TESTS} -p no:randomly")
    builder = pinned_flow(repo)
    refused_before(builder, repo, tmp_path)
    copy = flow_file().parent / "pinned-sources" / kept
    copy.write_text("def test_value():\n    pass\n")
    write(repo, files)
    assert outside_the_gate(repo, f"{TESTS} -p no:randomly") == 0, (
        "the attack must get past the exit code"
    )
    done = ask_gate(builder, repo, tmp_path, "done")
    assert done.denied and "tests/test_app.py: changed since /implement" in done.deny_reason


def test_honest_new_tests_under_xdist_are_let_through(tmp_path: Path) -> None:
    """The fixed tree with a new test file, the criterion's pytest on two xdist workers:
    both runs pass, the one with the pinned files only included."""
    repo = witnessed_project(tmp_path, f"{TESTS} -n 2")
    builder = pinned_flow(repo)
    (repo / "app.py").write_text("VALUE = 2\n")
    (repo / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    builder.verify(repo / WITNESS_SPEC)
    done = ask_gate(builder, repo, tmp_path, "done")
    assert not done.denied, done.deny_reason
    assert (flow_file().parent / "gate-run-pinned-only.log").exists()


def test_honest_a_project_with_its_own_conftest_and_plugin_is_let_through(tmp_path: Path) -> None:
    conftest = (
        "import pytest\n\npytest_plugins = ['tests.helpers_plugin']\n\n\n"
        "@pytest.fixture\ndef two():\n    return 2\n"
    )
    plugin = (
        "def pytest_collection_modifyitems(items):\n    items.sort(key=lambda item: item.name)\n"
    )
    repo = witnessed_project(
        tmp_path,
        files={
            "tests/conftest.py": conftest,
            "tests/__init__.py": "",
            "tests/helpers_plugin.py": plugin,
            "tests/test_two.py": "def test_two(two):\n    assert two == 2\n",
        },
    )
    fixed_and_done(repo, tmp_path)
    assert "tests/test_two.py::test_two" in pinned_tests()["AC-1"]["ids"]


def test_honest_xdist_inside_the_criterion_is_let_through(tmp_path: Path) -> None:
    """The criterion's own pytest spreads its tests over two xdist workers, loaded as the
    user's own run loads them (an installed plugin, no `-p xdist`): the witness hears every
    worker's reports through the controller."""
    repo = witnessed_project(tmp_path, f"{TESTS} -n 2")
    fixed_and_done(repo, tmp_path, f"{TESTS} -n 2")
    assert len(pinned_tests()["AC-1"]["ids"]) == 2


def test_honest_a_k_selection_pins_only_what_it_selects(tmp_path: Path) -> None:
    repo = witnessed_project(tmp_path, f"{TESTS} -k value")
    fixed_and_done(repo, tmp_path)
    assert pinned_tests()["AC-1"]["ids"] == ["tests/test_app.py::test_value"]


def test_honest_a_test_marked_skip_at_implement_may_stay_skipped(tmp_path: Path) -> None:
    skipped = (
        "import pytest\n\n\n@pytest.mark.skipif(True, reason='not on this machine')\n"
        "def test_elsewhere():\n    assert False\n"
    )
    repo = witnessed_project(tmp_path, files={"tests/test_elsewhere.py": skipped})
    fixed_and_done(repo, tmp_path)
    assert pinned_tests()["AC-1"]["marked"] == ["tests/test_elsewhere.py::test_elsewhere"]


def test_a_criterion_that_does_not_run_pytest_is_not_witnessed(tmp_path: Path) -> None:
    repo = witnessed_project(tmp_path, "grep -qx 'VALUE = 2' app.py")
    builder = pinned_flow(repo)
    assert pinned_tests() == {}
    (repo / "app.py").write_text("VALUE = 2\n")
    builder.verify(repo / WITNESS_SPEC)
    assert not ask_gate(builder, repo, tmp_path, "done").denied


# --- outside the gate ------------------------------------------------------------------------


def test_outside_the_gate_a_criterion_still_passes_on_its_exit_code(tmp_path: Path) -> None:
    """Plain `pytest --acceptance` is unchanged: no reporter is loaded, and the criterion is
    judged by its pass condition alone (here the exit code the os._exit(0) test leaves)."""
    repo = witnessed_project(
        tmp_path,
        files={"tests/test_aa_exit.py": "import os\n\n\ndef test_exit():\n    os._exit(0)\n"},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEPTANCE_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--acceptance",
            WITNESS_SPEC,
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
