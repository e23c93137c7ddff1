"""What the Claude Code gate pins when an /implement flow starts, read with the package itself.

    python -I -m pytest_acceptance.gate_probe --config-dir DIR SPEC

prints one JSON object: the spec's criteria as parsed (or the collection error naming
``file:line``), the project's ``acceptance_*`` settings (the gate's own runs take them from
here, never from the project's config at stop time), and the files of the interpreter and
the distributions a verification run imports (the gate hashes them itself, from outside
this interpreter, to notice a tampered environment).

The hooks are stdlib-only and cannot import the parser (markdown-it-py, PyYAML): this is
their window onto it. The gate runs it with the interpreter it pinned, under ``-I``. The
module itself imports only the standard library, and little of it, at import time: the
list of pytest's configuration files lives with the hooks (``claude.flow_state``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_acceptance.claude.flow_state import CONFIG_FILES

# What `python -m pytest --acceptance` imports in the gate's run (plugin autoload is off).
GATE_DISTRIBUTIONS = (
    "pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "pytest-xdist",
    "execnet",
    "pytest-acceptance",
    "PyYAML",
    "markdown-it-py",
    "mdurl",
)
# Settings the gate never takes from the project: the agent cache lives in the project's
# .acceptance/ folder, which the agent can write.
UNTRUSTED_SETTINGS = frozenset({"acceptance_cache"})
PRIVATE_API_CHECKED_WITH = "9.2.0"  # the pytest whose private config reader this uses


class ProbeError(Exception):
    """The probe cannot give a trustworthy answer: it prints no report (the gate blocks)."""


def criteria(spec: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The spec's criteria as plain dicts (what a change report compares), or the error."""
    from pytest_acceptance.model import SpecError
    from pytest_acceptance.spec.load import parse_spec

    try:
        parsed = parse_spec(spec)
    except SpecError as error:
        return [], str(error)
    except OSError as error:
        return [], f"{spec}: {error.strerror or error}"
    return [_criterion(criterion) for criterion in parsed.criteria], None


def _criterion(criterion: Any) -> dict[str, Any]:
    return {
        "id": criterion.id,
        "title": criterion.title,
        "method": criterion.method.value,
        "line": criterion.location.line,
        "command": criterion.command,
        "pass_condition": criterion.pass_condition,
        "description": criterion.description,
        "agent": criterion.agent,
        "checks": list(criterion.checks),
        "model": criterion.model,
        "timeout": criterion.timeout,
        "retries": criterion.retries,
        "priority": criterion.priority.value,
        "cwd": criterion.cwd,
    }


def acceptance_settings(config_dir: Path) -> dict[str, str]:
    """The ``acceptance_*`` keys of the first pytest configuration file in ``config_dir`` (the
    copies the gate pinned, in pytest's own order of precedence), as strings; ProbeError
    when pytest cannot read them."""
    load = config_reader()
    for name in CONFIG_FILES:
        path = config_dir / name
        try:
            found = load(path) if path.is_file() else None
        except Exception as error:  # pytest's UsageError for a malformed file, among others
            raise ProbeError(f"pytest cannot read the pinned {name}: {error}") from None
        if found is not None:
            return {
                key: _setting(raw)
                for key, raw in found.items()
                if key.startswith("acceptance_") and key not in UNTRUSTED_SETTINGS
            }
    return {}


def config_reader() -> Callable[[Path], dict[str, Any] | None]:
    """pytest's reader of one configuration file, exactly as pytest reads it (which file
    kinds hold pytest settings, [tool:pytest], [tool.pytest.ini_options], ...). pytest has
    no public API for it: a Config would look for the file upwards from its own rootdir
    and load plugins. A pytest without the private name is a ProbeError, never a guess."""
    try:
        from _pytest.config.findpaths import load_config_dict_from_file
    except ImportError:
        import pytest

        raise ProbeError(
            f"pytest {pytest.__version__} has no _pytest.config.findpaths."
            f"load_config_dict_from_file (a private name, checked against pytest "
            f"{PRIVATE_API_CHECKED_WITH}): the gate cannot read the project's acceptance_* "
            "settings. Install a pytest-acceptance release made for this pytest."
        ) from None
    return load_config_dict_from_file


def _setting(raw: Any) -> str:
    value = getattr(raw, "value", raw)
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def runtime_files() -> list[str]:
    """Files whose change would change what the gate's run executes before any criterion:
    the interpreter, the venv's pyvenv.cfg, every .pth/sitecustomize in the site folders,
    and the files of the distributions the run imports."""
    import site

    files = {os.path.realpath(sys.executable)}
    venv_config = Path(sys.prefix) / "pyvenv.cfg"
    if venv_config.is_file():
        files.add(str(venv_config))
    for folder in site.getsitepackages():
        for name in _listdir(folder):
            if name.endswith(".pth") or name.startswith(("sitecustomize", "usercustomize")):
                files.add(os.path.join(folder, name))
    for name in GATE_DISTRIBUTIONS:
        files.update(_distribution_files(name))
    return sorted(files)


def site_folders() -> list[str]:
    import site

    return [folder for folder in site.getsitepackages() if os.path.isdir(folder)]


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _distribution_files(name: str) -> set[str]:
    import importlib.metadata

    try:
        distribution = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return set()
    found = set()
    for entry in distribution.files or ():
        path = os.path.realpath(distribution.locate_file(entry))
        if os.path.isfile(path) and not path.endswith((".pyc", "RECORD")):
            found.add(path)
    if name == "pytest-acceptance":  # an editable install lists no module files
        package = Path(__file__).resolve().parent
        found.update(str(path) for path in package.glob("*.py"))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_acceptance.gate_probe")
    parser.add_argument("--config-dir", required=True, type=Path)
    parser.add_argument("spec", type=Path)
    arguments = parser.parse_args(argv)
    try:
        settings = acceptance_settings(arguments.config_dir)
    except ProbeError as error:  # no report: the gate never runs on settings it could not read
        sys.stderr.write(f"pytest_acceptance.gate_probe: {error}\n")
        return 2
    found, error = criteria(arguments.spec)
    report = {
        "criteria": found,
        "error": error,
        "settings": settings,
        "python": sys.executable,
        "runtime_files": runtime_files(),
        "site_folders": site_folders(),
    }
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
