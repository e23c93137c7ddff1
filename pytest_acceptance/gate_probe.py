"""What the Claude Code gate pins when an /implement flow starts, read with the package itself.

    python -I -m pytest_acceptance.gate_probe --config-dir DIR [--origin PATH --rootdir DIR] SPEC

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
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_acceptance.gate.gate_bytecode import GATE_MODULES
from pytest_acceptance.gate.pytest_addopts import AddoptsError, effective_settings, ini_text
from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES

# Settings the gate never takes from the project: the agent cache lives in the project's
# .acceptance/ folder, which the agent can write.
UNTRUSTED_SETTINGS = frozenset({"acceptance_cache"})
PRIVATE_API_CHECKED_WITH = "9.2.0"  # the pytest whose private config reader this uses


class ProbeError(Exception):
    """The probe cannot give a trustworthy answer: it prints no report (the gate blocks)."""


def criteria(
    spec: Path, origin: Path | None = None, rootdir: Path | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """The spec's criteria as plain dicts (what a change report compares), or the error.
    With ``origin`` (the project's spec ``spec`` is a copy of) and ``rootdir``, read as the
    gate's run reads the copy (``collect.load_spec``): as the origin, its scenarios bound
    to the project's BDD runner, so the pinned method, command and pass condition are
    those the run must report."""
    from pytest_acceptance.model import SpecError
    from pytest_acceptance.spec.bdd import bound
    from pytest_acceptance.spec.load import parse_spec, parse_spec_as

    try:
        if origin is None or rootdir is None:
            parsed = parse_spec(spec)
        else:
            parsed = bound(parse_spec_as(spec, origin), rootdir)
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
    """The ``acceptance_*`` settings an honest run takes from the first pytest configuration
    file in ``config_dir`` (the copies the gate pinned, in pytest's own order of precedence):
    its keys, with what its ``addopts`` overrides applied as pytest applies it
    (gate/pytest_addopts.py), as strings; ProbeError when pytest cannot read them or the gate
    could not reproduce them."""
    name, found = _first_config(config_dir)
    return {} if found is None else _trusted(_effective(found, name))


def pinned_config(config_dir: Path) -> dict[str, Any]:
    """Every setting of the first pytest configuration file in ``config_dir`` (pytest's own
    order of precedence); ProbeError when pytest cannot read it."""
    return _first_config(config_dir)[1] or {}


def _first_config(config_dir: Path) -> tuple[str, dict[str, Any] | None]:
    load = config_reader()
    for name in PYTEST_CONFIG_FILES:
        path = config_dir / name
        try:
            found = load(path) if path.is_file() else None
        except Exception as error:  # pytest's UsageError for a malformed file, among others
            raise ProbeError(f"pytest cannot read the pinned {name}: {error}") from None
        if found is not None:
            return name, found
    return "", None


def foreign_hooks(spec: Path, rootdir: Path, config_dir: Path) -> str | None:
    """Why the gate cannot verify this spec when the project's honest run would consult its
    own implementations of pytest-acceptance's hooks (project_hooks), which the gate's run
    does not load; None when it would consult none."""
    from pytest_acceptance.project_hooks import implementations

    addopts = _setting(pinned_config(config_dir).get("addopts", ""))
    found = implementations(spec, rootdir, addopts)
    if not found:
        return None
    return (
        "the gate cannot verify a project that changes how pytest-acceptance reads or "
        "judges its spec through its own hooks, and its honest run would load "
        + "; ".join(found[:10])
        + (f" (and {len(found) - 10} more)" if len(found) > 10 else "")
        + ": move them out of what `pytest --acceptance` of this spec loads, or end this "
        "flow with /pytest-acceptance:escalate"
    )


def honest_setup(
    spec: Path, rootdir: Path, settings: dict[str, str]
) -> tuple[str | None, list[str]]:
    """Why an honest ``pytest --acceptance SPEC`` started at the project's top would not run
    as the gate's run does, or None. pytest itself is asked, both ways, rather than its
    rules modelled here: the honest run's configuration as pytest and this plugin settle it
    (the first configuration file, whose ``addopts`` may name another rootdir or file, the
    one found beside the spec first, the plugin's correction of the rootdir), against the
    gate's run on the pinned settings. Another rootdir (where bash criteria run), or another
    value of any ``acceptance_*`` setting, a selection of criteria (``-k``, ``-m``,
    ``--deselect``) or the plugin blocked (``-p no:acceptance``), and the gate would verify
    something else. Also the files that settled it (the configuration file pytest chose,
    the argument files ``@path`` of its addopts): /implement pins them by content."""
    shown = os.path.relpath(spec, rootdir) if _inside(spec, rootdir) else str(spec)
    with tempfile.TemporaryDirectory() as folder:
        gate_ini = Path(folder) / "gate.ini"
        gate_ini.write_text(ini_text(settings), encoding="utf-8")
        try:
            honest = _parsed(rootdir, ["--acceptance", shown])
            pinned = ["--rootdir", str(rootdir), "-c", str(gate_ini)]
            gate = _parsed(rootdir, ["--acceptance", str(spec), *pinned])
        except ProbeError as error:
            return str(error), []
    differences = [f"its addopts {what}" for what in honest.selects]
    if os.path.realpath(honest.rootpath) != os.path.realpath(rootdir):
        differences.append(f"its rootdir is {honest.rootpath}, the gate's is {rootdir}")
    for name in sorted(n for n in honest.names if n not in UNTRUSTED_SETTINGS):
        if honest.values[name] != gate.values.get(name):
            differences.append(
                f"{name} is {honest.values[name]!r} there, {gate.values.get(name)!r} in the "
                "gate's run"
            )
    if not differences:
        return None, honest.files
    return (
        f"an honest `pytest --acceptance {shown}` at {rootdir} would not run as the gate's run "
        f"does: {'; '.join(differences[:5])} (its configuration file: {honest.inipath}). "
        "Keep the acceptance settings, and any --rootdir or -c, in the one configuration "
        "file at the project's top, or end this flow with /pytest-acceptance:escalate"
    ), honest.files


class _Setup:
    """What one pytest invocation settled: rootdir, configuration file, acceptance_* values,
    what its options select or block, the files that settled it."""

    def __init__(self, config: Any) -> None:
        names = [name for name in config._parser._inidict if name.startswith("acceptance_")]
        self.values = {name: config.getini(name) for name in names}
        self.names = sorted(self.values)
        self.rootpath, self.inipath = config.rootpath, config.inipath
        option = config.option
        chosen = (("-k", "keyword"), ("-m", "markexpr"), ("--deselect", "deselect"))
        self.selects = [
            f"selects criteria ({flag} {getattr(option, name)!r})"
            for flag, name in chosen
            if getattr(option, name, None)
        ]
        if config.pluginmanager.is_blocked("acceptance"):
            self.selects.append("blocks the plugin (-p no:acceptance)")
        addopts = [str(word) for word in config.getini("addopts")]
        self.files = [str(self.inipath)] if self.inipath else []
        self.files += _argument_files(addopts, Path(config.invocation_params.dir))


def _argument_files(words: list[str], folder: Path) -> list[str]:
    """The files ``@path`` words name (pytest's parser reads their lines as arguments, and
    ``@path`` words within them too), as absolute paths, each once."""
    found: list[str] = []
    pending = [word[1:] for word in words if word.startswith("@")]
    while pending and len(found) < 100:
        path = os.path.normpath(os.path.join(folder, pending.pop()))
        if path in found:
            continue
        found.append(path)
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue  # a missing one is pinned as absent
        pending += [line[1:] for line in lines if line.startswith("@")]
    return found


def _parsed(rootdir: Path, args: list[str]) -> _Setup:
    """pytest's own configuration of `args` started in `rootdir`, as the gate's run loads
    plugins (this one, none by autoload, no conftest): parsed, never run."""
    try:
        from _pytest.config import _prepareconfig
    except ImportError:
        raise ProbeError(
            f"pytest has no _pytest.config._prepareconfig (a private name, checked against "
            f"pytest {PRIVATE_API_CHECKED_WITH}): the gate cannot settle the honest run's "
            "configuration"
        ) from None
    args = [*args, "--noconftest", "-p", "no:cacheprovider", "-p", "pytest_acceptance.plugin"]
    here, autoload = os.getcwd(), os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        os.chdir(rootdir)
        config = _prepareconfig(args)
    except BaseException as error:  # a UsageError, a SystemExit of the argument parser
        raise ProbeError(f"pytest cannot read the honest run's configuration ({error})") from None
    finally:
        os.chdir(here)
        if autoload is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    try:
        return _Setup(config)
    finally:
        config._ensure_unconfigure()


def startup_sources(rootdir: Path) -> list[str]:
    """The source files of the environment whose import statements a pytest of this
    interpreter may run at start-up, whatever its criterion's shape: every module this
    process has imported (pytest, its own plugins and the standard library they use, once
    the honest run's configuration was settled above), and each plugin the environment
    declares for pytest to load (read, never imported here). A name one of them asks for is
    one no new project module may take (pins/shadowed_names.py), witnessed or not."""
    from importlib.metadata import entry_points

    found = {
        origin
        for module in list(sys.modules.values())
        for origin in [getattr(getattr(module, "__spec__", None), "origin", None)]
        if isinstance(origin, str) and origin.endswith(".py")
    }
    for entry in entry_points(group="pytest11"):
        found.update(_module_sources(entry.module.split(".")[0]))
    return sorted(path for path in found if not _inside(Path(path), rootdir))


def _module_sources(name: str) -> list[str]:
    """A top-level module's source file, or every source file of a package (found as an
    import would find it, never imported)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [
            os.path.join(here, file)
            for folder in spec.submodule_search_locations
            for here, _, files in os.walk(folder)
            for file in files
            if file.endswith(".py")
        ]
    return [spec.origin] if isinstance(spec.origin, str) and spec.origin.endswith(".py") else []


def _inside(path: Path, folder: Path) -> bool:
    return os.path.realpath(path).startswith(os.path.join(os.path.realpath(folder), ""))


def _effective(found: dict[str, Any], name: str) -> dict[str, str]:
    keys = {key: _setting(raw) for key, raw in found.items() if key.startswith("acceptance_")}
    raw = found.get("addopts")
    addopts = getattr(raw, "value", raw)
    try:
        return effective_settings(keys, addopts, f"the project's {name}")
    except AddoptsError as error:
        raise ProbeError(str(error)) from None


def _trusted(settings: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in settings.items() if key not in UNTRUSTED_SETTINGS}


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


def closure() -> dict[str, list[str]]:
    """What the gate pins of this interpreter (gate/gate_runtime.py, tree/closure.py):
    ``roots``, folders pinned file by file (site folders, the standard library, a venv's
    bin folder, editable installs' sources, the user site); ``gate_roots``, the packages the
    gate's own run imports, pinned even when they live in the project (an editable install of
    pytest-acceptance itself); ``files``, the interpreter, the venv's pyvenv.cfg, and every
    import path entry that is no folder, present or not."""
    import site
    import sysconfig

    site_folders = site.getsitepackages()
    roots = list(site_folders)
    paths = sysconfig.get_paths()
    roots += [paths["stdlib"], paths["platstdlib"]]
    # The base interpreter's own site-packages inside its stdlib folder is not on a venv's
    # path: not part of what runs (often the largest folder there).
    if sys.prefix != sys.base_prefix:  # a venv: its console scripts and python links
        roots.append(str(Path(sys.prefix) / "bin"))
    # Every entry of the import path, and every folder a .pth file names (site adds only
    # those that exist): a folder is walked; anything else (a zip, or nothing yet: the
    # standard library's python3XY.zip, a .pth's folder to come, the user site) is pinned as
    # a file, present or not, so that one appearing there is a change.
    on_path = [*(entry for entry in sys.path if os.path.isabs(entry)), *_editable_roots()]
    on_path.append(site.getusersitepackages())
    roots += [entry for entry in on_path if os.path.isdir(entry)]
    files = [os.path.realpath(sys.executable), str(Path(sys.prefix) / "pyvenv.cfg")]
    files += [entry for entry in dict.fromkeys(on_path) if not os.path.isdir(entry)]
    files += _mapped_files()
    unused = [
        os.path.join(paths[key], name)
        for key in ("stdlib", "platstdlib")
        for name in ("site-packages", "dist-packages")
        if os.path.join(paths[key], name) not in site_folders
    ]
    return {
        "roots": [root for root in dict.fromkeys(roots) if os.path.isdir(root)],
        "gate_roots": _gate_roots(),
        "files": files,
        "left_out": unused,
    }


def _mapped_files() -> list[str]:
    """The native files this interpreter has mapped (libpython, the C library, the
    extensions it loaded): code every Python of the environment runs, that no folder of
    the closure may hold. Linux only (/proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = (line.split(None, 5)[5] for line in lines if len(line.split(None, 5)) == 6)
    return sorted({path for path in paths if path.startswith("/") and os.path.isfile(path)})


def _editable_roots() -> list[str]:
    """Source folders that editable installs put on sys.path (PEP 660 direct_url.json, and
    the plain folder lines of .pth files)."""
    import importlib.metadata
    import json as json_module
    import site
    from urllib.parse import unquote, urlparse

    found = []
    for distribution in importlib.metadata.distributions():
        raw = distribution.read_text("direct_url.json")
        try:
            data = json_module.loads(raw) if raw else {}
        except ValueError:
            continue
        if isinstance(data, dict) and (data.get("dir_info") or {}).get("editable"):
            url = urlparse(str(data.get("url", "")))
            if url.scheme == "file":
                found.append(unquote(url.path))
    for folder in site.getsitepackages():
        for name in _listdir(folder):
            if name.endswith(".pth"):
                found += _pth_folders(Path(folder) / name)
    return found


def _pth_folders(pth: Path) -> list[str]:
    try:
        lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    named = [
        line.strip() for line in lines if line.strip() and not line.startswith(("#", "import"))
    ]
    return [os.path.normpath(os.path.join(pth.parent, line)) for line in named]  # as site reads it


def _gate_roots() -> list[str]:
    import importlib.util

    found = []
    for module in GATE_MODULES:
        spec = importlib.util.find_spec(module)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found += [os.path.realpath(folder) for folder in spec.submodule_search_locations]
        elif spec.origin:
            found.append(os.path.realpath(spec.origin))
    return list(dict.fromkeys(found))


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_acceptance.gate_probe")
    parser.add_argument("--config-dir", required=True, type=Path)
    parser.add_argument("--origin", type=Path, default=None)  # the spec the copy stands for
    parser.add_argument("--rootdir", type=Path, default=None)  # the project's
    parser.add_argument("spec", type=Path)
    arguments = parser.parse_args(argv)
    try:
        settings = acceptance_settings(arguments.config_dir)
    except ProbeError as error:  # no report: the gate never runs on settings it could not read
        sys.stderr.write(f"pytest_acceptance.gate_probe: {error}\n")
        return 2
    found, problem = criteria(arguments.spec, arguments.origin, arguments.rootdir)
    if arguments.rootdir is not None:
        try:
            hooks = foreign_hooks(
                arguments.origin or arguments.spec, arguments.rootdir, arguments.config_dir
            )
        except ProbeError as error:
            sys.stderr.write(f"pytest_acceptance.gate_probe: {error}\n")
            return 2
        setup, setup_files = honest_setup(
            arguments.origin or arguments.spec, arguments.rootdir, settings
        )
        problem = "; ".join(p for p in (problem, hooks, setup) if p) or None
    report = {
        "setup_files": setup_files if arguments.rootdir is not None else [],
        "startup_sources": startup_sources(arguments.rootdir) if arguments.rootdir else [],
        "criteria": found,
        "error": problem,
        "settings": settings,
        "python": sys.executable,
        "prefix": sys.prefix,
        "closure": closure(),
    }
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
