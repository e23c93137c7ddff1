"""pytest entry point (``pytest11``): the ``--acceptance`` option and the wiring of stages.

parse (parse.py) → collect (collect.py) → run (run_bash.py, agent.py; manual never runs)
→ record (record.py, controller only) → decide (verdict.py).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.options import SKIPPED_FILES, SPEC_SET, read_ini, spec_paths

# Stage modules are imported when --acceptance is used, not when pytest loads the plugin:
# a plain `pytest` run in any project pays nothing for having it installed.

# Stage modules that are pytest plugins of their own (options + hookimpls).
pytest_plugins: list[str] = [
    "pytest_acceptance.agent.verifier",
    "pytest_acceptance.evidence.trail",
    "pytest_acceptance.evidence.ci",
]

_METHOD_MARKERS = {
    "bash": "acceptance criterion verified by a bash command",
    "subagent": "acceptance criterion judged by an agent",
    "manual": "acceptance criterion that needs a human (never run)",
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
        help="read every spec in this format instead of detecting it (see the README)",
    )
    parser.addini("acceptance_format", "the spec format to force (default: detect)", default="")
    parser.addini(
        "acceptance_specs",
        "specs, directories or globs that --acceptance without a value collects",
        type="args",
        default=[],
    )
    group.addoption(
        "--acceptance-verdict-fd",
        type=int,
        metavar="FD",
        help="also write the verdict JSON to this inherited file descriptor (the Claude Code "
        "gate reads its own run's verdict there, not from the agent-writable .acceptance/)",
    )
    # Typed (pytest >= 8.4): pytest 9's native [tool.pytest] table gives TOML numbers,
    # [tool.pytest.ini_options] and pytest.ini give strings; both are converted here.
    parser.addini(
        "acceptance_timeout",
        "default timeout of a criterion, in seconds",
        type="float",
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
        "seconds between 'still running' lines when output is not a terminal (0: none)",
        type="float",
        default=20.0,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    from pytest_acceptance.rootdir import correct_setup

    correct_setup(early_config, parser, args)


def _files(count: int) -> str:
    return f"{count} markdown file{'' if count == 1 else 's'}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Name the markdown files a directory or glob held that no spec format recognised:
    a spec an agent made unrecognisable must not vanish unseen."""
    skipped = config.stash.get(SKIPPED_FILES, [])
    if not skipped:
        return []
    names = [os.path.relpath(path, config.rootpath) for path in skipped]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    what = "is not a spec" if len(names) == 1 else "are not specs"
    return [f"acceptance: skipped {_files(len(names))} that {what}: {shown}"]


def pytest_configure(config: pytest.Config) -> None:
    specs = spec_paths(config)
    config.stash[SPEC_SET] = set(specs)
    if not specs:
        return
    read_ini(config)  # a bad value is a usage error now, before anything runs
    for name, description in {**_METHOD_MARKERS, **_PRIORITY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    _collect_specs(config, specs)
    from pytest_acceptance.run.guard import RunGuard
    from pytest_acceptance.run.progress import register_progress

    register_progress(config)
    from pytest_acceptance.run.bash import BashRunner

    config.pluginmanager.register(RunGuard(config), "acceptance-guard")

    config.pluginmanager.register(BashRunner(), "acceptance-bash")
    if not hasattr(config, "workerinput"):  # the controller, or the only process
        from pytest_acceptance.verdict.recorder import Recorder

        config.pluginmanager.register(Recorder(config, specs), "acceptance-recorder")


def _collect_specs(config: pytest.Config, specs: list[Path]) -> None:
    """Make the specs what pytest collects: alone when no path was given on the command
    line, else beside the given paths (unless a given node id already names the spec)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(spec) for spec in specs]
        return
    base = config.invocation_params.dir
    named = {(base / arg.split("::")[0]).resolve() for arg in config.args}
    config.args += [str(spec) for spec in specs if spec not in named]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    specs = parent.config.stash.get(SPEC_SET, ())
    if specs and file_path.resolve() in specs:
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


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    data = getattr(report, "acceptance", None)
    if data is None or report.when != "call":
        return None
    status = data["status"]
    if status == "manual":  # counted in progress; the verdict lists them when due
        return "manual", "M", ("MANUAL", {"yellow": True})
    if status == "flaky":
        return "flaky", "R", ("FLAKY", {"yellow": True})
    if status == "passed" and data.get("extra", {}).get("unstable"):  # judges disagreed
        return "unstable", "U", ("UNSTABLE", {"yellow": True})
    if status == "error":
        return "error", "E", ("ERROR", {"red": True})
    return None
