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

# Stage modules are imported when --acceptance is used, not when pytest loads the plugin:
# a plain `pytest` run in any project pays nothing for having it installed.

# Stage modules that are pytest plugins of their own (options + hookimpls).
pytest_plugins: list[str] = [
    "pytest_acceptance.agent",
    "pytest_acceptance.evidence",
    "pytest_acceptance.ci_outputs",
]

_METHOD_MARKERS = {
    "bash": "acceptance criterion verified by a bash command",
    "subagent": "acceptance criterion judged by an agent",
    "manual": "acceptance criterion that needs a human (never run)",
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_acceptance import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance", "acceptance criteria of a markdown spec")
    group.addoption(
        "--acceptance",
        action="append",
        default=[],
        metavar="SPEC",
        help="collect the acceptance criteria of this markdown spec (repeatable)",
    )
    parser.addini("acceptance_timeout", "default timeout of a criterion, in seconds", default="300")
    parser.addini(
        "acceptance_retries", "default retries of a failed automated criterion", default="1"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    from pytest_acceptance.rootdir import correct_setup

    correct_setup(early_config, args)


def spec_paths(config: pytest.Config) -> list[Path]:
    """The --acceptance specs, resolved against the invocation directory, deduplicated."""
    base = config.invocation_params.dir
    paths: dict[Path, None] = {}
    for given in config.getoption("acceptance") or ():
        path = (base / given).resolve()
        if not path.is_file():
            raise pytest.UsageError(
                f"--acceptance {given}: {'not a file' if path.exists() else 'no such file'}"
            )
        paths[path] = None
    return list(paths)


def pytest_configure(config: pytest.Config) -> None:
    specs = spec_paths(config)
    config._acceptance_specs = set(specs)  # type: ignore[attr-defined]
    if not specs:
        return
    for name, description in _METHOD_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    _collect_specs(config, specs)
    from pytest_acceptance.run_bash import BashRunner

    config.pluginmanager.register(BashRunner(), "acceptance-bash")
    if not hasattr(config, "workerinput"):  # the controller, or the only process
        from pytest_acceptance.record import Recorder

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
    specs = getattr(parent.config, "_acceptance_specs", ())
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
    if status == "manual":  # silent in progress output; the verdict lists them when due
        return "manual", "", ""
    if status == "flaky":
        return "flaky", "R", ("FLAKY", {"yellow": True})
    if status == "error":
        return "error", "E", ("ERROR", {"red": True})
    return None
