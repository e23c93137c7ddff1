"""The witness's parts on their own: which commands it watches, what it reads back from its
records (whatever the file holds), how it judges a session against the pinned tests, and
the reporter in a real pytest that starts a pytest of its own."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
from importlib.metadata import PathDistribution
from pathlib import Path

import pytest
from hook_transcripts import WITNESS_SPEC, witnessed_project
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_acceptance.gate import witness
from pytest_acceptance.gate.criteria_env import criteria_env
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pinned_tests import PinnedTests
from pytest_acceptance.gate.pins.witnessed_criteria import WitnessedCriteria
from pytest_acceptance.gate.witness_plugin import distribution_key

WATCHED = [
    "pytest",
    "pytest -q tests",
    "py.test tests/test_a.py::test_b -k 'not slow'",
    "python -m pytest -q tests -p xdist -n 2",
    "python3 -m pytest tests",
    "python3.12 -X dev -W error -m pytest tests",
    "/usr/bin/python3 -mpytest",
    "CI=1 FOO=bar pytest tests",
    "PYTHONPATH=src:$PYTHONPATH pytest",
    ".venv/bin/pytest -x tests",
    "timeout 60 pytest -q tests",
    "nice -n 5 timeout -k 5 60 python3 -m pytest tests",
    "env CI=1 pytest",
]
NOT_WATCHED = [
    "grep -qx 2 value.txt",
    "pytest tests && echo ok",
    "cd sub && pytest",
    "pytest | tee log",
    "pytest > out.txt",
    "make test",
    "tox -e py",
    "uv run pytest",
    "python -I -m pytest tests",
    "python -E -m pytest tests",
    "python -c 'import pytest; pytest.main()'",
    "python -m unittest",
    "python tests/run.py",
    "PYTHONPATH=src python -m pytest",
    "PYTEST_ADDOPTS='-x' pytest",
    "pytest $(cat args)",
    "pytest `cat args`",
    "pytest 'unterminated",
    "",
    "sudo pytest",
    "doas python -m pytest",
    "env -i pytest",
    "env PYTEST_ADDOPTS=-x pytest",
    "timeout 60 pytest > out.txt",
    "uv run --with x pytest",
]


@pytest.mark.parametrize("command", WATCHED)
def test_one_pytest_run_is_watched(command: str) -> None:
    assert witness.pytest_command(command)


@pytest.mark.parametrize("command", NOT_WATCHED)
def test_anything_else_is_left_to_its_exit_code(command: str) -> None:
    assert not witness.pytest_command(command)


@given(st.text(max_size=200))
def test_any_command_text_is_answered_without_an_exception(command: str) -> None:
    assert witness.pytest_command(command) in (True, False)


# --- reading the records -------------------------------------------------------------------


def records(folder: Path, name: str, *lines: object) -> None:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    (folder / name).write_text(text)


def test_the_last_session_of_each_criterion_counts(tmp_path: Path) -> None:
    """A retried criterion: its second attempt is the one judged."""
    start = {"event": "start", "criterion": "AC-1"}
    records(tmp_path, "100-1.jsonl", start, {"event": "finish", "tests": {"t": "failed"}})
    records(tmp_path, "200-2.jsonl", start, {"event": "finish", "tests": {"t": "passed"}})
    records(tmp_path, "150-3.jsonl", {"event": "start", "criterion": "AC-2"})
    found = witness.sessions(str(tmp_path))
    assert found["AC-1"].tests == {"t": "passed"} and found["AC-1"].finished
    assert not found["AC-2"].finished


def test_a_fifo_planted_among_the_records_is_passed_over_without_blocking(
    tmp_path: Path,
) -> None:
    """Code under test can write in the records folder: a FIFO there (which an open() would
    wait on forever, holding the gate) is no session; the real one still counts."""
    start = {"event": "start", "criterion": "AC-1"}
    records(tmp_path, "100-1.jsonl", start, {"event": "finish", "tests": {"t": "passed"}})
    os.mkfifo(tmp_path / "200-2.jsonl")
    found = witness.sessions(str(tmp_path))
    assert found["AC-1"].finished and found["AC-1"].tests == {"t": "passed"}


def test_a_torn_or_foreign_line_never_counts_as_a_finish(tmp_path: Path) -> None:
    records(
        tmp_path,
        "1-1.jsonl",
        {"event": "start", "criterion": "AC-1"},
        '{"event": "finish", "tests": {"t": "pass',
        {"event": "finish", "tests": "not a mapping"},
        [1, 2],
    )
    assert not witness.sessions(str(tmp_path))["AC-1"].finished


@settings(max_examples=50)
@given(st.binary(max_size=2000))
def test_any_bytes_in_a_record_file_are_read_without_an_exception(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("records")
    (folder / "1-1.jsonl").write_bytes(data)
    for session in witness.sessions(str(folder)).values():
        assert isinstance(session.tests, dict)


# --- judging a session ----------------------------------------------------------------------


def session(tests: dict[str, str], finished: bool = True) -> witness.Session:
    found = witness.Session("AC-1")
    found.finished = finished
    found.tests = tests
    return found


PINNED = PinnedTests(ids=("t.py::a", "t.py::b"), marked=frozenset({"t.py::b"}))


@pytest.mark.parametrize(
    ("tests", "finished", "why"),
    [
        ({"t.py::a": "passed"}, False, "never finished"),
        ({}, True, "no test passed"),
        ({"t.py::a": "skipped", "t.py::c": "passed"}, True, "t.py::a (skipped)"),
        ({"t.py::a": "xfailed", "t.py::c": "passed"}, True, "t.py::a (xfailed)"),
        ({"t.py::c": "passed"}, True, "t.py::a (not run)"),
        ({"t.py::a": "xpassed", "t.py::c": "passed"}, True, "t.py::a (xpassed)"),
    ],
)
def test_a_session_short_of_the_pin_is_refused_with_the_reason(
    tests: dict[str, str], finished: bool, why: str
) -> None:
    refusal = witness.refusal(PINNED, session(tests, finished))
    assert refusal is not None and why in refusal


def test_no_session_at_all_is_refused() -> None:
    assert "no session" in str(witness.refusal(PINNED, None))


@pytest.mark.parametrize("b", ["passed", "skipped", "xfailed", None])
def test_a_test_marked_at_implement_may_end_skipped_and_new_tests_are_free(b: str | None) -> None:
    tests = {"t.py::a": "passed", "t.py::new": "skipped"}
    if b is not None:
        tests["t.py::b"] = b
    refusal = witness.refusal(PINNED, session(tests))
    assert (refusal is None) == (b is not None), refusal


def test_a_parametrized_case_renamed_is_matched_by_as_many_cases_all_passed() -> None:
    pinned = PinnedTests(ids=("t.py::p[0x1f]", "t.py::p[0x2a]"))
    renamed = {"t.py::p[obj0]": "passed", "t.py::p[obj1]": "passed"}
    assert witness.refusal(pinned, session(renamed)) is None
    fewer = {"t.py::p[obj0]": "passed"}
    assert "not run" in str(witness.refusal(pinned, session(fewer)))
    one_skipped = {"t.py::p[obj0]": "passed", "t.py::p[obj1]": "skipped"}
    assert witness.refusal(pinned, session(one_skipped)) is not None


def test_test_code_changed_or_gone_since_the_pin_is_refused_with_its_path(tmp_path: Path) -> None:
    helper, gone = tmp_path / "checks.py", tmp_path / "gone.py"
    helper.write_text("def check(v):\n    assert v\n")
    gone.write_text("")
    code = tuple(
        (str(path), hashlib.sha256(path.read_bytes()).hexdigest()) for path in (helper, gone)
    )
    pinned = PinnedTests(ids=("t.py::a",), test_code=code)
    passed = session({"t.py::a": "passed"})
    assert witness.refusal(pinned, passed) is None
    helper.write_text("def check(v):\n    pass\n")
    gone.unlink()
    refusal = str(witness.refusal(pinned, passed))
    assert "test code its pytest loaded at /implement" in refusal
    assert str(helper) in refusal and str(gone) in refusal


def test_a_pin_reads_back_as_written() -> None:
    pin = PinnedTests(
        ids=("t.py::a", "t.py::b"),
        marked=frozenset({"t.py::b"}),
        files=(("t.py", "cd" * 32), ("u.py", "")),
        test_code=(("/p/checks.py", "ab" * 32),),
        test_code_folders=(("/p/testkit", ("/p/testkit/__init__.py",)),),
    )
    assert PinnedTests.from_json(json.loads(json.dumps(pin.to_json()))) == pin
    empty = PinnedTests(note="its pytest did not finish collecting")
    assert PinnedTests.from_json(empty.to_json()) == empty


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(
    st.dictionaries(st.sampled_from(["ids", "marked", "files", "test_code", "note"]), json_values)
)
def test_any_json_reads_back_as_a_pin_or_none_and_never_raises(data: dict[str, object]) -> None:
    """A record the gate decides on is read only in its exact shape: lists of strings, a
    mapping of strings, a string note; anything else is no record (the criterion refused)."""
    pin = PinnedTests.from_json(data)
    if pin is not None:
        assert all(isinstance(ident, str) for ident in pin.ids)
        assert all(isinstance(a, str) and isinstance(b, str) for a, b in pin.test_code)
        assert {"ids", "marked"} <= set(data)


# --- the reporter in a real pytest ---------------------------------------------------------

INNER_STARTER = """\
import subprocess, sys


def test_starts_its_own_pytest(tmp_path):
    (tmp_path / "test_inner.py").write_text("def test_inner():\\n    assert False\\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True)
    assert done.returncode == 1


def test_skipped():
    import pytest
    pytest.skip("not here")
"""


def test_the_reporter_records_its_own_session_only(tmp_path: Path) -> None:
    """A test that runs pytest itself (its inner test fails): the inner run loads the
    reporter too, but writes nothing; the outer session's record holds its own two tests."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "test_outer.py").write_text(INNER_STARTER)
    folder = tmp_path / "private"
    folder.mkdir()
    env = dict(os.environ, PYTEST_ADDOPTS="-p no:cacheprovider", PYTEST_ACCEPTANCE_CRITERION="AC-7")
    env.update(witness.prepare(str(folder)))
    env.update(witness.criteria_pytest(env))
    env = criteria_env(env)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "test_outer.py"],
        cwd=tmp_path / "project",
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = os.listdir(env[witness.RECORDS_VARIABLE])
    recorded = witness.sessions(env[witness.RECORDS_VARIABLE])["AC-7"]
    assert found.endswith(".jsonl") and recorded.finished
    assert recorded.tests == {
        "test_outer.py::test_starts_its_own_pytest": "passed",
        "test_outer.py::test_skipped": "skipped",
    }
    assert recorded.collected == list(recorded.tests)


# A plugin declared by a metadata folder at the project's root (pytest finds it through
# sys.path, on which `python -m pytest` puts the root): it turns every failure into a pass.
ROOT_PLUGIN = """\
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    return report
"""


def root_plugin_project(root: Path) -> Path:
    project = root / "project"
    metadata = project / "localcheck-1.0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: localcheck\nVersion: 1.0\n")
    (metadata / "entry_points.txt").write_text("[pytest11]\nlocalcheck = localcheck\n")
    (project / "localcheck.py").write_text(ROOT_PLUGIN)
    (project / "test_app.py").write_text("def test_value():\n    assert 1 == 2\n")
    return project


def witnessed_run(project: Path, folder: Path, *args: str, pinned: list[str] | None) -> int:
    """The criterion's pytest as the gate starts it, the distributions it saw at /implement
    `pinned` (None: as at /implement itself, where nothing is pinned yet)."""
    folder.mkdir()
    env = dict(os.environ, PYTEST_ADDOPTS="-p no:cacheprovider -p no:randomly")
    env.update(witness.prepare(str(folder), pinned))
    env.update(witness.criteria_pytest(env))
    env = criteria_env(env)
    command = [sys.executable, "-m", "pytest", "-q", "test_app.py", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True).returncode


@pytest.mark.parametrize("workers", [(), ("-p", "xdist", "-n", "2")], ids=["alone", "xdist"])
def test_a_plugin_declared_since_the_pin_never_loads(tmp_path: Path, workers: tuple) -> None:
    """Without the pin's list, the root's metadata folder gets the failing test through
    (the attack is real); with the distributions pinned at /implement (here: the
    environment's own, none from the project), it declares nothing and the test fails, in
    xdist's workers too."""
    project = root_plugin_project(tmp_path)
    assert witnessed_run(project, tmp_path / "open", *workers, pinned=None) == 0
    assert witnessed_run(project, tmp_path / "pinned", *workers, pinned=environment()) == 1


def environment() -> list[str]:
    """The keys of this interpreter's distributions (the test's project is not on its path)."""
    return sorted(distribution_key(d) for d in importlib.metadata.distributions())


def test_a_pinned_metadata_folder_that_declares_more_since_declares_nothing(
    tmp_path: Path,
) -> None:
    """Variant: the project's own metadata folder was there at /implement declaring no
    plugin (a project developed in place); the agent adds the pytest11 entry point to it.
    Pinned by what it declared, the folder now declares nothing."""
    project = root_plugin_project(tmp_path)
    declared = project / "localcheck-1.0.dist-info" / "entry_points.txt"
    declared.write_text("[console_scripts]\nlocalcheck = localcheck:main\n")
    pinned = [*environment(), distribution_key(PathDistribution(declared.parent))]
    declared.write_text("[pytest11]\nlocalcheck = localcheck\n")
    assert witnessed_run(project, tmp_path / "open", pinned=None) == 0
    assert witnessed_run(project, tmp_path / "pinned", pinned=pinned) == 1


def test_the_pin_records_every_distribution_it_saw(tmp_path: Path) -> None:
    project = root_plugin_project(tmp_path)
    witnessed_run(project, tmp_path / "private", pinned=None)
    session = witness.sessions(str(tmp_path / "private" / "witness-records"))[""]
    xdist = "xdist-" + xdist_version() + ".dist-info\t"
    assert [key for key in session.distributions if xdist in key]
    assert [key for key in session.distributions if key.startswith(str(project))]


def xdist_version() -> str:
    return importlib.metadata.version("pytest-xdist")


def test_the_pin_names_what_the_environment_looked_for_and_did_not_find(tmp_path: Path) -> None:
    """In the pin's collection, with pytest-randomly loaded: its optional numpy, and the
    standard library's probes, are names a new project module must not take; the modules
    the project's own test asked for, directly or through pytest.importorskip, are not."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_app.py").write_text(
        "import pytest\n\ntry:\n    import feature_not_written\nexcept ImportError:\n"
        "    pass\nextra = pytest.importorskip('extra_not_written')\n"
    )
    folder = tmp_path / "private"
    folder.mkdir()
    env = dict(os.environ, PYTEST_ADDOPTS="-p no:cacheprovider")
    env.update(witness.prepare(str(folder)))
    env.update(witness.criteria_pytest(env, collect_only=True))
    command = [sys.executable, "-m", "pytest", "-q", "test_app.py"]
    subprocess.run(command, cwd=project, env=criteria_env(env), capture_output=True)
    found = witness.sessions(env[witness.RECORDS_VARIABLE])
    asked = {line.split("\t")[0] for line in found[""].missed}
    assert {"numpy", "feature_not_written", "extra_not_written"} <= asked
    names = witness.missed_by_environment(Flow(folder, {"repo": str(project)}), found)
    assert "numpy" in names
    assert not names & {"feature_not_written", "extra_not_written"}


@pytest.mark.parametrize(
    ("importer", "environment_asked"),
    [
        ("{repo}/tests/test_app.py", False),
        ("{repo}/.venv/lib/python3.11/site-packages/plugin/__init__.py", True),
        ("/usr/lib/python3.11/pickle.py", True),
        ("", True),  # no file known: the environment's, to be safe
        ("relative/path.py", True),
    ],
)
def test_a_missed_module_is_the_environments_unless_the_project_asked(
    tmp_path: Path, importer: str, environment_asked: bool
) -> None:
    session = witness.Session("AC-1")
    session.missed = ["absent\t" + importer.format(repo=tmp_path)]
    names = witness.missed_by_environment(Flow(tmp_path, {"repo": str(tmp_path)}), {"": session})
    assert (names == {"absent"}) is environment_asked


def test_a_session_in_an_environment_no_criterion_ran_in_at_implement_is_refused(
    tmp_path: Path,
) -> None:
    """The gate's own environment and those its criteria ran in at /implement are pinned;
    a session in any other (by sys.prefix, links resolved) is not confirmed."""
    gate, criteria, other = (tmp_path / name for name in ("gate", "project-venv", "other"))
    for folder in (gate, criteria, other):
        folder.mkdir()
    (tmp_path / "link").symlink_to(criteria)
    recorded = WitnessedCriteria(("AC-1",), (), ((str(tmp_path / "link"), "python"),))
    pinned = witness.pinned_environments(str(gate), recorded)
    session = witness.Session("AC-1")
    for prefix, confirmed in ((gate, True), (criteria, True), (other, False), ("", False)):
        session.prefix, session.python = str(prefix), f"{prefix}/bin/python"
        problem = witness._unpinned(session, pinned)
        assert (problem is None) is confirmed, (prefix, problem)
    assert "no criterion ran under at /implement" in str(witness._unpinned(session, pinned))
    nothing = witness.pinned_environments("", WitnessedCriteria(("AC-1",), (), ()))
    session.prefix, session.python = str(gate), f"{gate}/bin/python"
    assert witness._unpinned(session, nothing) is not None  # nothing pinned confirms nothing


# --- a project module standing in for one the environment lacks ------------------------------

STDLIB_COPY = "/usr/lib/python3.11/copy.py"
PINNED_MODULES = frozenset({"app.py", "tests/test_app.py"})
NO_ENV: frozenset[str] = frozenset()


def session_with(
    tmp_path: Path, repo: Path, outside: list[str], *workers: list[str] | None
) -> witness.Session:
    """The gate run's session of AC-1 as read back: the controller reported `outside`, each
    worker its own list (None: a worker that never reported one)."""
    start = {"event": "start", "criterion": "AC-1"}
    collected = {"event": "collected", "ids": [], "files": ["tests/test_app.py"], "root": str(repo)}
    report = {"event": "outside", "imports": outside}
    records(tmp_path, "100-1.jsonl", start, collected, report)
    for number, imports in enumerate(workers, start=2):
        lines: list[object] = [{"event": "worker", "criterion": "AC-1"}]
        lines += [] if imports is None else [{"event": "outside", "imports": imports}]
        records(tmp_path, f"{100 + number}-{number}.jsonl", *lines)
    return witness.sessions(str(tmp_path))["AC-1"]


def test_a_new_module_the_standard_library_asked_for_refuses_the_pass(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    line = f"org\t{repo / 'org' / '__init__.py'}\t{STDLIB_COPY}"
    problem = witness.stood_in(
        session_with(tmp_path, repo, [line]), str(repo), PINNED_MODULES, NO_ENV
    )
    assert problem is not None
    assert f"org/__init__.py: new since /implement, and imported for {STDLIB_COPY}" in problem


def test_variant_one_asked_for_at_start_up_in_an_xdist_worker_refuses_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    line = f"msvcrt\t{repo / 'msvcrt.py'}\t"
    session = session_with(tmp_path, repo, [], [line])
    problem = witness.stood_in(session, str(repo), PINNED_MODULES, NO_ENV)
    assert (
        problem is not None
        and "msvcrt.py: new since /implement, and imported for start-up code" in problem
    )


def test_a_worker_that_never_said_what_it_imported_refuses_the_pass(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    session = session_with(tmp_path, repo, [], [], None)
    problem = witness.stood_in(session, str(repo), PINNED_MODULES, NO_ENV)
    assert problem is not None and "did not say" in problem


def test_honest_what_pytest_collected_and_the_environment_inside_the_project_are_free(
    tmp_path: Path,
) -> None:
    """Control: pytest imports the test files it collects and conftest files itself, and a
    virtualenv inside the project pinned at /implement is the environment; a module of the
    project at /implement may be imported by anyone; none of those refuses."""
    repo = tmp_path / "repo"
    pytest_module = "/usr/lib/python3/_pytest/pathlib.py"
    lines = [
        f"test_app\t{repo / 'tests' / 'test_app.py'}\t{pytest_module}",
        f"conftest\t{repo / 'conftest.py'}\t{pytest_module}",
        f"app\t{repo / 'app.py'}\t{STDLIB_COPY}",
        f"yaml\t{repo / '.venv/lib/python3.11/site-packages/yaml/__init__.py'}\t{pytest_module}",
    ]
    venv = frozenset({str(repo / ".venv")})
    assert (
        witness.stood_in(session_with(tmp_path, repo, lines), str(repo), PINNED_MODULES, venv)
        is None
    )


def test_honest_no_report_at_all_from_a_run_with_no_witnessed_session_is_no_refusal() -> None:
    assert witness.stood_in(None, "/repo", PINNED_MODULES, NO_ENV) is None


def test_variant_a_folder_named_like_a_virtualenvs_is_still_the_projects(tmp_path: Path) -> None:
    """Only the import path entries of the environments pinned at /implement are the
    environment's: a package in the project's `.x/site-packages/` or a namespace folder
    reached through a link to `.x/bin` is the project's."""
    repo = tmp_path / "repo"
    lines = [
        f"org\t{repo / '.x/site-packages/org/__init__.py'}\t{STDLIB_COPY}",
        f"nt\t{repo / '.x/bin'}\t{STDLIB_COPY}",
    ]
    venv = frozenset({str(repo / ".venv")})
    problem = witness.stood_in(session_with(tmp_path, repo, lines), str(repo), PINNED_MODULES, venv)
    assert problem is not None
    assert ".x/site-packages/org/__init__.py: new" in problem and ".x/bin: new" in problem


def test_a_link_in_the_project_to_a_package_outside_it_is_reported_as_the_projects(
    tmp_path: Path,
) -> None:
    """The witness's own report (witness_plugin._Importers): a module found through a link
    in the project is the project's by the path found, wherever the link leads; the same
    package found at its own place outside the project is not."""
    from pytest_acceptance.gate import witness_plugin

    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (elsewhere / "org").mkdir(parents=True)
    (elsewhere / "org" / "__init__.py").write_text("")
    repo.mkdir()
    (repo / "org").symlink_to(elsewhere / "org")
    through_link = str(repo / "org" / "__init__.py")
    importers = witness_plugin._Importers()
    importers.found = {"org": {through_link}, "outside": {str(elsewhere / "org" / "__init__.py")}}
    importers.asked = {"org": {STDLIB_COPY}, "outside": {STDLIB_COPY}}
    assert importers.from_the_project(str(repo)) == [f"org\t{through_link}\t{STDLIB_COPY}"]


# --- outside the gate: no witness --------------------------------------------------------------


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
