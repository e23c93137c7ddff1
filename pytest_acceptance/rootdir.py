"""Keep the rootdir where the user is, even for a spec outside the project.

pytest settles the rootdir and the ini file before it loads plugins, so at that moment
``--acceptance`` is an unknown option and its value (``../specs/x.md``) is taken for a
test path: the rootdir becomes a common ancestor (say ``/``), the project's ini file is
not read, bash criteria run in the wrong directory and the verdict is written in the
wrong place. ``pytest_load_initial_conftests`` is the first hook a plugin gets; there the
option is known, so the setup is determined again without the spec values and, where it
differs, put in place. pytest has no public API for this, hence the private attributes —
guarded, and covered by tests that fail if pytest changes them.
"""

from __future__ import annotations

import pytest
from _pytest.config.findpaths import determine_setup


def correct_setup(config: pytest.Config, args: list[str]) -> None:
    known = config.known_args_namespace  # re-parsed now that --acceptance is known
    if not getattr(known, "acceptance", None) or not hasattr(config, "_rootpath"):
        return
    rootpath, inipath, inicfg, *ignored = determine_setup(
        inifile=known.inifilename,
        override_ini=known.override_ini,
        args=known.file_or_dir,
        rootdir_cmd_arg=known.rootdir or None,
        invocation_dir=config.invocation_params.dir,
    )
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return
    had_ini = config.inipath is not None
    config._rootpath = rootpath
    config._inipath = inipath
    config._inicfg = inicfg
    if ignored and hasattr(config, "_ignored_config_files"):
        config._ignored_config_files = ignored[0]
    config._inicache.clear()
    config._parser.extra_info["rootdir"] = str(rootpath)
    config._parser.extra_info["inifile"] = str(inipath)
    if not had_ini:  # the ini's addopts were never applied: apply them now, as pytest would
        addopts = list(config.getini("addopts"))
        args[:0] = addopts
        config.pluginmanager.consider_preparse(addopts, exclude_only=False)
        config.known_args_namespace = config._parser.parse_known_args(
            args, namespace=config.known_args_namespace
        )
    if not any(arg.startswith("--confcutdir") for arg in args):  # derived, not chosen
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)
