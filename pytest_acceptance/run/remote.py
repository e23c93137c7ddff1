"""xdist workers in other folders or on other machines (``--tx socket=…``, ``ssh=…``,
``popen//chdir=…`` with ``--rsyncdir``): the worker's run is set up like the controller's.

xdist copies each ``--rsyncdir`` root into the worker's folder under the root's name, and
rewrites the command line's paths below a root to match (``make_reltoroot``). Two things
it leaves out, and a run of a spec then goes wrong on the worker:

- a path given relatively (``--acceptance spec.md``) is refused with a ValueError, which
  pytest shows as an INTERNALERROR: it is made absolute first, as the user meant it (and
  a glob, which names no path, is placed in the copy);
- the rootdir and the ini file stay the ones pytest finds from the worker's folder (the
  folder above the copy), so commands run in the wrong folder, the project's ini keys are
  not read and node ids differ from the controller's: the worker gets the controller's
  rootdir and ini file, inside the copy.

The rest of the run needs nothing from the worker's disk: results, evidence included,
come back in the test reports, and the controller writes everything (evidence/trail.py).

A worker whose machine is gone ends the run with an error verdict, not an INTERNALERROR
(``UnreachableWorkers``).

``make_reltoroot`` is xdist's module function, looked up when a worker is set up; the
wrapper is installed on the controller for the run and removed at its end. An xdist
without it (checked against 3.8.0) is left as it is.
"""

from __future__ import annotations

import gc
import itertools
import os
import warnings
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

import pytest

Rewrite = Callable[[Sequence[Path], list[str]], list[str]]


def set_up_remote_workers(config: pytest.Config) -> None:
    """Wrap xdist's argument rewriting for this run (the controller only)."""
    try:
        from xdist import workermanage
    except ImportError:  # -p no:xdist, or no xdist: no workers
        return
    original: Rewrite | None = getattr(workermanage, "make_reltoroot", None)
    if original is None:
        return

    def make_reltoroot(roots: Sequence[Path], args: list[str]) -> list[str]:
        return worker_args(roots, args, original, config)

    workermanage.make_reltoroot = make_reltoroot
    config.add_cleanup(lambda: setattr(workermanage, "make_reltoroot", original))
    config.pluginmanager.register(UnreachableWorkers(), "acceptance-remote-workers")


class UnreachableWorkers:
    """xdist replaces a worker that died by starting another on the same gateway; when the
    machine is gone (a socket server killed, a host down) that start raises in the middle
    of xdist's loop, which pytest shows as an INTERNALERROR. The run stops there instead:
    the criterion the worker ran is already an error, and those that never ran are
    ``not_run`` with this reason, so the verdict is an error, never a pass."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        from execnet import HostNotFound

        try:
            return (yield)
        except (OSError, HostNotFound) as error:
            session.shouldfail = (
                f"an xdist worker's machine could not be reached again ({error}); "
                "--max-worker-restart=0 stops xdist from trying"
            )
            # execnet leaves the socket of the refused connection open in the frames of
            # the traceback: closed here, quietly, not as a ResourceWarning at exit.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)
                error.__traceback__ = None
                gc.collect()
        return True


def worker_args(
    roots: Sequence[Path], args: list[str], rewrite: Rewrite, config: pytest.Config
) -> list[str]:
    """The worker's command line: xdist's, from absolute paths, with the controller's
    rootdir and ini file as they lie in the copy. A path outside every root is a usage
    error naming the fix, not an INTERNALERROR."""
    absolute = [_absolute(arg) for arg in _split_spec_options(args)]
    try:
        rewritten = rewrite(roots, absolute)
    except ValueError as error:
        raise pytest.UsageError(
            f"{error}: an xdist worker in another folder (--tx socket=…, ssh=…, "
            "popen//chdir=…) sees only the folders --rsyncdir (or ini rsyncdirs) names; "
            "add the project folder: --rsyncdir ."
        ) from None
    return _globs_in_copy(rewritten, roots, config) + _setup_in_copy(roots, config)


def _split_spec_options(args: list[str]) -> list[str]:
    """``--acceptance=spec.md`` as two arguments, so that its path is rewritten too."""
    split = []
    for arg in args:
        name, equals, value = arg.partition("=")
        split += [name, value] if equals and name == "--acceptance" and value else [arg]
    return split


def _globs_in_copy(args: list[str], roots: Sequence[Path], config: pytest.Config) -> list[str]:
    """``--acceptance 'specs/*.md'``: a glob names no existing path, so xdist leaves it
    as it is, relative to a folder the worker is not in; it gets the copy's folder."""
    here = _in_copy(roots, config.invocation_params.dir)
    if here is None:
        return args
    placed = list(args)
    for number, (arg, value) in enumerate(itertools.pairwise(args), start=1):
        glob = any(mark in value for mark in "*?[")
        if arg == "--acceptance" and glob and not value.startswith("-"):
            placed[number] = value if os.path.isabs(value) else f"{here}/{value}"
    return placed


def _absolute(arg: str) -> str:
    """A relative path (or node id) that exists, made absolute as the user meant it."""
    path, separator, rest = arg.partition("::")
    if not path or os.path.isabs(path) or path.startswith("-"):
        return arg
    try:
        if not os.path.exists(path):
            return arg
    except (OSError, ValueError):
        return arg
    return os.path.abspath(path) + separator + rest


def _setup_in_copy(roots: Sequence[Path], config: pytest.Config) -> list[str]:
    """``--rootdir`` and ``--config-file`` for the copies of the controller's, when they lie
    below a root (relative: the worker resolves them from its own folder, where the copies
    are)."""
    extra = []
    rootdir = _in_copy(roots, config.rootpath)
    if rootdir is not None:
        extra.append(f"--rootdir={rootdir}")
    inipath = _in_copy(roots, config.inipath) if config.inipath else None
    if inipath is not None:
        extra.append(f"--config-file={inipath}")
    return extra


def _in_copy(roots: Sequence[Path], path: Path) -> str | None:
    resolved = path.resolve()
    for root in roots:
        if resolved == root:
            return root.name
        if resolved.is_relative_to(root):
            return f"{root.name}/{resolved.relative_to(root).as_posix()}"
    return None
