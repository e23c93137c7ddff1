"""pytest entry point (``pytest11``): the ``--acceptance`` option and the wiring of stages.

read the specs (spec/) → collect (collect.py) → run (run/ for bash, agent/ for subagent
criteria; manual never runs) → record (verdict/recorder.py, controller only) → decide
(verdict/decision.py) → evidence/ and store.py write what was decided. The stage modules
are imported only with ``--acceptance``; docs/architecture.md maps them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.options import (
    SKIPPED_FILES,
    SPEC_SET,
    read_ini,
    spec_origins,
    spec_paths,
)

# Stage modules are imported when --acceptance is used, not when pytest loads the plugin:
# a plain `pytest` run in any project pays nothing for having it installed.

# Stage modules that are pytest plugins of their own (options + hookimpls).
pytest_plugins: list[str] = [
    "pytest_acceptance.agent.options",
    "pytest_acceptance.evidence.trail",
    "pytest_acceptance.evidence.ci",
]

# The built-in formats (spec/formats/__init__.py, which --help must not import; a test keeps
# the two in step).
FORMAT_NAMES = (
    "acceptance",
    "manifest",
    "spec-kit",
    "kiro",
    "kiro-design",
    "stories",
    "openspec",
    "bmad",
    "tasks",
    "gherkin",
    "prose",
    "gauge",
)

# A duration ini key takes a TOML number or a string with a unit: a union type, which
# pytest >= 9.2 accepts; before, a TOML string is refused and only numbers work.
_DURATION: Any = float | str if pytest.version_tuple >= (9, 2) else "float"

_METHOD_MARKERS = {
    "bash": "acceptance criterion verified by a bash command",
    "subagent": "acceptance criterion judged by an agent",
    "manual": "acceptance criterion that needs a human (never run)",
    "task": "a task of a task list, checked against the evidence it names",
}
_PRIORITY_MARKERS = {
    "must": "acceptance criterion of priority MUST",
    "should": "acceptance criterion of priority SHOULD",
    "could": "acceptance criterion of priority COULD",
    "wont": "acceptance criterion of priority WONT",
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_acceptance import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance", "acceptance criteria of a markdown spec")
    group.addoption(
        "--acceptance",
        action="append",
        nargs="?",
        const="",  # --acceptance alone: the specs of ini acceptance_specs
        default=[],
        metavar="SPEC",
        help="collect the acceptance criteria of this markdown spec, of the specs below a "
        "directory, or of the specs a glob matches (repeatable)",
    )
    group.addoption(
        "--acceptance-format",
        default=None,
        metavar="NAME",
        help="read every spec in this format instead of detecting it: "
        f"{', '.join(FORMAT_NAMES)}, or a format plugin's name",
    )
    parser.addini("acceptance_format", "the spec format to force (default: detect)", default="")
    parser.addini(
        "acceptance_reads",
        "files or folders outside the project that the criteria read, one a line (the "
        "Claude Code gate pins them at /implement and shows them to its run read-only)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "acceptance_specs",
        "specs, directories or globs that --acceptance without a value collects",
        type="args",
        default=[],
    )
    # Internal, so not in --help: the Claude Code gate reads its own run's verdict from this
    # inherited descriptor, not from the agent-writable .acceptance/.
    group.addoption("--acceptance-verdict-fd", type=int, help=argparse.SUPPRESS)
    # Internal too: the gate's run verifies a copy of the project's spec; the spec's cwd: keys
    # and sign-offs are read as those of the spec at this path.
    group.addoption("--acceptance-spec-origin", metavar="PATH", help=argparse.SUPPRESS)
    group.addoption(
        "--acceptance-sign-off",
        action="append",
        default=[],
        metavar="ID",
        help="record that you checked the manual criterion ID (or SPEC::ID) of the --acceptance "
        "spec, in the sign-offs file; nothing runs. With --acceptance-by and --acceptance-note",
    )
    group.addoption(
        "--acceptance-by",
        metavar="NAME",
        help="who signs off (default: git config user.name and user.email)",
    )
    group.addoption("--acceptance-note", metavar="TEXT", help="what the sign-off checked")
    group.addoption(
        "--acceptance-merge",
        nargs="+",
        default=[],
        metavar="DIR",
        help="make one verdict, report, JUnit and HTML from CI shards' outputs (each DIR a "
        "shard's .acceptance, or the folder holding it); refused, with the reason, for shards "
        "of different trees or spec versions, missing criteria or overlaps that disagree",
    )
    group.addoption(
        "--acceptance-signoffs",
        metavar="PATH",
        help="the sign-offs file to read and write (default: acceptance-signoffs.yaml in the "
        "rootdir)",
    )
    # Task lists (run/task.py).
    group.addoption(
        "--acceptance-base",
        default=None,
        metavar="REF",
        help="a ticked task's files must have changed since this git ref (default: the merge "
        "base with the default branch)",
    )
    parser.addini(
        "acceptance_base", "git ref a ticked task's files must have changed since", default=""
    )
    group.addoption(
        "--acceptance-unticked",
        choices=("list", "fail"),
        default=None,
        help="what an unticked task of a task list is: listed (default) or a failure",
    )
    parser.addini(
        "acceptance_unticked", "what an unticked task is: list (default) or fail", default=""
    )
    # Typed: pytest 9's native [tool.pytest] table gives TOML numbers (or, for a duration,
    # a string with a unit), [tool.pytest.ini_options] and pytest.ini give strings; options.py
    # converts both.
    parser.addini(
        "acceptance_timeout",
        'default timeout of a criterion: seconds, or a duration like "2 min"',
        type=_DURATION,
        default=300.0,
    )
    parser.addini(
        "acceptance_retries",
        "default retries of a failed automated criterion",
        type="int",
        default=1,
    )
    parser.addini(
        "acceptance_progress_interval",
        "seconds (or a duration) between 'still running' lines when output is not a terminal "
        "(0: none)",
        type=_DURATION,
        default=20.0,
    )
    parser.addini(
        "acceptance_lock_timeout",
        "seconds to wait for another run verifying the same spec to finish (0: do not wait)",
        type="float",
        default=600.0,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--acceptance-sign-off ID``: record a person's sign-off, run nothing.
    ``--acceptance-merge DIR…``: check the shards, then run their specs on their results."""
    if config.getoption("acceptance_merge", None):
        from pytest_acceptance.verdict.merge import begin_merge

        begin_merge(config)
        return None
    if not config.getoption("acceptance_sign_off", None):
        return None
    from pytest_acceptance.verdict.sign_off_command import sign_off_command

    return sign_off_command(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None, None, None]:
    """The first hook a plugin gets: the rootdir is put right, the last verdict goes (so a
    run that stops from here on leaves none that looks current), and a Ctrl-C while the
    project's conftest.py files load ends with an "interrupted" verdict, not a traceback."""
    from pytest_acceptance.rootdir import correct_setup

    correct_setup(early_config, parser, args)
    if not getattr(early_config.known_args_namespace, "acceptance", None):
        return (yield)
    from pytest_acceptance.verdict.recorder import RunStart

    start = RunStart(early_config)
    early_config.pluginmanager.register(start, "acceptance-start")
    try:
        return (yield)
    except KeyboardInterrupt:
        start.interrupted("while pytest loaded the conftest.py files")
        raise SystemExit(pytest.ExitCode.INTERRUPTED) from None


def _files(count: int) -> str:
    return f"{count} markdown file{'' if count == 1 else 's'}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Warn when commands may run in another folder than the spec means (rootdir.py), and
    name the markdown files a directory or glob held that no spec format recognised: a spec
    an agent made unrecognisable must not vanish unseen."""
    lines = []
    if config.stash.get(SPEC_SET, None):
        from pytest_acceptance.verdict.rootdir_warning import rootdir_warning

        lines.append(_state_line(config))
        if warning := rootdir_warning(config):
            lines.append(f"acceptance: WARNING: {warning}")
    skipped = config.stash.get(SKIPPED_FILES, [])
    if not skipped:
        return lines
    names = [os.path.relpath(path, config.rootpath) for path in skipped]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    what = "is not a spec" if len(names) == 1 else "are not specs"
    return [*lines, f"acceptance: skipped {_files(len(names))} that {what}: {shown}"]


def _state_line(config: pytest.Config) -> str:
    """``acceptance: 2 specs (spec.md, api.md), 14 criteria; retries 1, timeout 300 s; verdict
    to .acceptance/verdict.json``: what this run verifies and how, before anything runs."""
    given: set[Path] = config.stash[SPEC_SET]
    specs = sorted(given)
    timeout, retries = read_ini(config)
    recorder = config.pluginmanager.get_plugin("acceptance-recorder")
    loaded = getattr(recorder, "specs", None)
    total = sum(len(s.criteria) for s in loaded) if loaded is not None else None
    noun = "criterion" if total == 1 else "criteria"
    count = f", {total} {noun}" if total is not None else ""
    names = ", ".join(os.path.relpath(path, config.rootpath) for path in specs[:5])
    names += f" and {len(specs) - 5} more" if len(specs) > 5 else ""
    what = f"{len(specs)} spec{'' if len(specs) == 1 else 's'} ({names}){count}"
    return (
        f"acceptance: {what}; retries {retries}, timeout {timeout:g} s; verdict to "
        ".acceptance/verdict.json"
    )


def pytest_configure(config: pytest.Config) -> None:
    specs = spec_paths(config)
    config.stash[SPEC_SET] = set(specs)
    if not specs:
        return
    read_ini(config)  # a bad value is a usage error now, before anything runs
    spec_origins(config)
    from pytest_acceptance.verdict.signoff import signoffs

    signoffs(config)  # a broken sign-offs file too
    from pytest_acceptance.run import task

    task.register(config)  # and a bad acceptance_unticked
    for name, description in {**_METHOD_MARKERS, **_PRIORITY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    # allure-pytest's own marker, which it reads for labels (--strict-markers without it).
    config.addinivalue_line("markers", "allure_label: a label of the Allure report")
    _collect_specs(config, specs)
    from pytest_acceptance.run.guard import RunGuard
    from pytest_acceptance.run.progress import register_progress

    register_progress(config)
    from pytest_acceptance.run.bash import BashRunner
    from pytest_acceptance.run.pytest_tools import PytestTools

    config.pluginmanager.register(RunGuard(config), "acceptance-guard")
    config.pluginmanager.register(PytestTools(config), "acceptance-pytest-tools")

    config.pluginmanager.register(BashRunner(), "acceptance-bash")
    if not hasattr(config, "workerinput"):  # the controller, or the only process
        from pytest_acceptance.run.remote import set_up_remote_workers
        from pytest_acceptance.verdict.junit import JunitFile
        from pytest_acceptance.verdict.recorder import Recorder

        set_up_remote_workers(config)
        config.pluginmanager.register(Recorder(config, specs), "acceptance-recorder")
        config.pluginmanager.register(JunitFile(config), "acceptance-junit")
        from pytest_acceptance.evidence.report_plugins import register

        register(config)  # pytest-html's and pytest-json-report's, when they write reports


def _collect_specs(config: pytest.Config, specs: list[Path]) -> None:
    """Make the specs what pytest collects: alone when no path was given on the command
    line, else beside the given paths (unless a given node id already names the spec)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(spec) for spec in specs]
        return
    from pytest_acceptance.spec.discover import real_path

    base = config.invocation_params.dir
    named = {real_path(base / arg.split("::")[0]) for arg in config.args}
    config.args += [str(spec) for spec in specs if spec not in named]


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """``pytest spec.md`` without ``--acceptance``: pytest's "not found: spec.md (no match in
    any of [<Dir …>])" gets the fix. The hint costs nothing unless collection failed."""
    try:
        return (yield)
    except pytest.UsageError as error:
        specs = _markdown_not_found(session.config, error)
        if not specs:
            raise
        hint = (
            f"{', '.join(specs)}: a spec's criteria are collected only with --acceptance: "
            f"pytest --acceptance {' '.join(specs)}"
        )
        raise pytest.UsageError(*error.args, hint) from None


def _markdown_not_found(config: pytest.Config, error: pytest.UsageError) -> list[str]:
    """The markdown files of the command line, when pytest found nothing to collect in a
    path of a run without --acceptance."""
    said = " ".join(str(arg) for arg in error.args)
    if config.getoption("acceptance", None) or "not found: " not in said:
        return []
    base = config.invocation_params.dir
    files = dict.fromkeys(arg.split("::")[0] for arg in config.args)
    return [f for f in files if f.lower().endswith(".md") and (base / f).is_file()]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    specs = parent.config.stash.get(SPEC_SET, ())
    if specs and Path(os.path.realpath(file_path)) in specs:
        from pytest_acceptance.collect import SpecFile

        return SpecFile.from_parent(parent, path=file_path, nodeid=_spec_nodeid(file_path, parent))
    return None


def _spec_nodeid(path: Path, parent: pytest.Collector) -> str | None:
    """pytest names a file outside the rootdir relative to itself (node id ``::AC-1``);
    name it relative to the rootdir instead (``../specs/x.md::AC-1``)."""
    rootdir = parent.config.rootpath
    if path.is_relative_to(rootdir):
        return None  # pytest's own node id
    return Path(os.path.relpath(path, rootdir)).as_posix()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    result = getattr(item, "result", None) if call.when == "call" else None
    if result is not None and getattr(item, "criterion", None) is not None:
        # A plain dict survives xdist's report serialisation to the controller.
        report.acceptance = result.to_dict()  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, object, object]:
    """On the xdist controller, a report read back from a worker shares its repeated strings
    with the earlier ones. Every string arrives as a new object, and the terminal keeps
    every report to the end: three reports a criterion, each with the same keyword names,
    property names and result keys, cost several KB a criterion on a large spec."""
    report = yield
    if isinstance(report, pytest.TestReport) and config.stash.get(SPEC_SET, None):
        share_strings(report)
    return report


def share_strings(report: pytest.TestReport) -> None:
    """Interned keys, names and the result's status and message; contents stay equal."""
    intern = sys.intern
    report.keywords = {intern(name): value for name, value in report.keywords.items()}
    report.user_properties = [
        (
            intern(name),
            intern(value) if name in _SHARED_PROPERTIES and isinstance(value, str) else value,
        )
        for name, value in report.user_properties
    ]
    path, line, domain = report.location
    report.location = (intern(path), line, domain)
    data = getattr(report, "acceptance", None)
    if isinstance(data, dict):
        shared = {intern(key): value for key, value in data.items()}
        for key in ("status", "message"):
            if isinstance(shared.get(key), str):
                shared[key] = intern(shared[key])
        if isinstance(shared.get("extra"), dict):
            shared["extra"] = {intern(key): value for key, value in shared["extra"].items()}
        report.acceptance = shared  # type: ignore[attr-defined]


# Properties whose values repeat across criteria (collect.py sets them).
_SHARED_PROPERTIES = frozenset({"method", "priority"})


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "acceptance", None)
    # pytest-rerunfailures sets an outcome pytest's types do not know.
    rerun = str(report.outcome) == "rerun"
    if data is None or report.when != "call" or rerun:
        return None  # a run pytest-rerunfailures repeats is its to show
    status = data["status"]
    if status == "manual":  # counted in progress; the verdict lists them when due
        return "manual", "M", ("MANUAL", {"yellow": True})
    if status == "flaky":
        return "flaky", "R", ("FLAKY", {"yellow": True})
    if status == "passed" and data.get("extra", {}).get("unstable"):  # judges disagreed
        return "unstable", "U", ("UNSTABLE", {"yellow": True})
    if status == "error":
        return "error", "E", ("ERROR", {"red": True})
    if status == "unticked":  # a task not claimed done: listed, not run
        return "unticked", "u", ("UNTICKED", {"yellow": True})
    if status == "passed" and data.get("extra", {}).get("awaits"):
        # a task whose cited criteria had not all reported: the verdict decides it
        return "awaiting", "a", ("AWAITS CITED CRITERIA", {"yellow": True})
    return None
