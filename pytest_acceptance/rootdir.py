"""Keep the rootdir where the user is, even for a spec outside the project.

pytest settles the rootdir and the ini file before it loads plugins, so at that moment
``--acceptance`` is an unknown option and its value (``../specs/x.md``) is taken for a
test path: the rootdir becomes a common ancestor (say ``/``), the project's ini file is
not read, bash criteria run in the wrong directory and the verdict is written in the
wrong place. ``pytest_load_initial_conftests`` is the first hook a plugin gets; there the
option is known, so the setup is determined again without the spec values and, where it
differs, put in place.

pytest has no public API to determine the setup again or to replace it: that part uses
pytest's private names, checked against pytest 9.2.0 (``PRIVATE_API_CHECKED_WITH``). A
pytest without them stops an ``--acceptance`` run with a usage error naming what is
missing (never a traceback, never a run with the wrong rootdir). Everything else goes
through public API: the hook's ``parser``, ``known_args_namespace``, ``getini``, the
plugin manager's ``consider_preparse``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

PRIVATE_API_CHECKED_WITH = "9.2.0"
_PRIVATE_CONFIG_ATTRIBUTES = ("_rootpath", "_inipath", "_inicfg", "_inicache")


def correct_setup(config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    known = config.known_args_namespace  # re-parsed now that --acceptance is known
    if not getattr(known, "acceptance", None) and not getattr(known, "acceptance_merge", None):
        return
    determine_setup = private_setup_api(config)
    try:
        rootpath, inipath, inicfg, *ignored = determine_setup(
            inifile=known.inifilename,
            override_ini=known.override_ini,
            args=known.file_or_dir,
            rootdir_cmd_arg=known.rootdir or None,
            invocation_dir=config.invocation_params.dir,
        )
    except (TypeError, ValueError) as error:  # another signature or result than 9.2.0's
        has = f"determine_setup as pytest {PRIVATE_API_CHECKED_WITH} has it ({error})"
        raise _unsupported(has) from None
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return
    had_ini = config.inipath is not None
    config._rootpath = rootpath
    config._inipath = inipath
    config._inicfg = inicfg
    if ignored and hasattr(config, "_ignored_config_files"):  # pytest >= 8.1
        config._ignored_config_files = ignored[0]
    config._inicache.clear()
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    if not had_ini:  # the ini's addopts were never applied: apply them now, as pytest would
        addopts = list(config.getini("addopts"))
        args[:0] = addopts
        config.pluginmanager.consider_preparse(addopts, exclude_only=False)
        config.known_args_namespace = parser.parse_known_args(
            args, namespace=config.known_args_namespace
        )
    if not any(arg.startswith("--confcutdir") for arg in args):  # derived, not chosen
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)


def private_setup_api(config: Any) -> Callable[..., tuple[Any, ...]]:
    """pytest's ``determine_setup``, once the private names this module uses are known to
    exist; a usage error naming the missing ones otherwise."""
    missing = [name for name in _PRIVATE_CONFIG_ATTRIBUTES if not hasattr(config, name)]
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        missing.insert(0, "_pytest.config.findpaths.determine_setup")
    if missing:
        raise _unsupported(", ".join(missing))
    return determine_setup


def _unsupported(what: str) -> pytest.UsageError:
    return pytest.UsageError(
        f"pytest-acceptance cannot keep the rootdir where you are: pytest "
        f"{pytest.__version__} lacks {what} (private names, checked against pytest "
        f"{PRIVATE_API_CHECKED_WITH}). Install a pytest-acceptance release made for this "
        "pytest, or a pytest it was checked with."
    )
