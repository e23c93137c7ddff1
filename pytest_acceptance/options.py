"""Values the user gives: the specs to collect, the formats to read them in, ini numbers.

Read here, once, for every stage; a bad value is a one-line usage error before anything
runs. What stages share about the run lives in ``config.stash`` under the keys below.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

# The specs --acceptance names, as found (files, directories and globs resolved), in order.
SPEC_LIST = pytest.StashKey[list[Path]]()
# The same specs as a set, for pytest_collect_file.
SPEC_SET = pytest.StashKey[set[Path]]()
# Markdown files a directory or glob held that no format recognised (named in the header).
SKIPPED_FILES = pytest.StashKey[list[Path]]()
# Set once this run's verdict is decided (and written where it could be).
VERDICT_DECIDED = pytest.StashKey[bool]()


def spec_paths(config: pytest.Config) -> list[Path]:
    """The specs named by --acceptance (from the invocation directory) and, for
    ``--acceptance`` without a value, by ini ``acceptance_specs`` (from the rootdir):
    files, directories, globs (``discover``); deduplicated, in order."""
    cached = config.stash.get(SPEC_LIST, None)
    if cached is None:
        cached = config.stash[SPEC_LIST] = _find_specs(config)
    return list(cached)


def _find_specs(config: pytest.Config) -> list[Path]:
    from pytest_acceptance.spec import discover, formats

    options: list[str] = list(config.getoption("acceptance") or ())
    if not options:
        return []  # the plugin does nothing unless asked
    base = config.invocation_params.dir
    given = [entry for entry in options if entry]
    from_ini = _ini_specs(config) if "" in options else []
    if "" in options and not from_ini:
        raise pytest.UsageError("--acceptance without a spec needs ini acceptance_specs")
    choice = _format_choice(config)
    formats.activate(choice)
    skip = config.getini("norecursedirs") or ()
    skipped = config.stash[SKIPPED_FILES] = []
    named = []
    for entries, where, source in (
        (given, base, "--acceptance"),
        (from_ini, config.rootpath, "ini acceptance_specs:"),
    ):
        try:
            named += discover.find_specs(entries, where, choice.formats, skip, skipped)
        except discover.DiscoveryError as error:
            raise pytest.UsageError(f"{source} {error}") from None
    return list(dict.fromkeys(named))


def _ini_specs(config: pytest.Config) -> list[str]:
    wanted = "paths or globs separated by spaces, quoted where they hold one"
    return list(ini_value(config, "acceptance_specs", wanted) or ())


def _format_choice(config: pytest.Config) -> Any:
    """The formats of this run: plugins' (the hook) first, then the built-in ones."""
    from pytest_acceptance.spec.formats import FormatChoice, builtin_formats, find

    groups = config.hook.pytest_acceptance_formats()
    added = [f for g in groups for f in (g if isinstance(g, (list, tuple)) else [g]) if f]
    every = (*added, *builtin_formats())
    forced, source = config.getoption("acceptance_format") or None, "--acceptance-format"
    if not forced:
        forced = str(ini_value(config, "acceptance_format", "a format's name")) or None
        source = "ini acceptance_format ="
    if forced and find(every, forced) is None:
        names = ", ".join(f.name for f in every)
        raise pytest.UsageError(f"{source} {forced!r}: unknown format; use {names}")
    return FormatChoice(every, forced)


def read_ini(config: pytest.Config) -> tuple[float, int]:
    """(default timeout, default retries), checked before anything runs: a bad value is a
    one-line usage error (exit 4), never an error in every criterion."""
    from pytest_acceptance.spec.yamlload import MAX_TIMEOUT  # a spec's timeout: the same bound

    wanted = f"a number of seconds above 0, at most {MAX_TIMEOUT:g}"
    timeout = ini_number(config, "acceptance_timeout", float, wanted, positive=True)
    if timeout > MAX_TIMEOUT:
        raise pytest.UsageError(f"ini acceptance_timeout = {timeout:g}: give {wanted}")
    retries = ini_number(config, "acceptance_retries", int, "a whole number of at least 0")
    return timeout, retries


def lock_timeout(config: pytest.Config) -> float:
    """Seconds to wait for another run verifying the same spec (ini acceptance_lock_timeout)."""
    wanted = "a number of seconds (0: do not wait)"
    return float(ini_number(config, "acceptance_lock_timeout", float, wanted))


def ini_number(
    config: pytest.Config,
    name: str,
    kind: type[int] | type[float],
    wanted: str,
    positive: bool = False,
) -> Any:
    """An ini value as a finite ``kind`` (at least 0, or above 0 when ``positive``), from a
    TOML number or a string; otherwise a pytest.UsageError naming the key (pytest's own
    conversion errors differ between versions and config formats)."""
    value = ini_value(config, name, wanted)
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):  # int(1e309) overflows
        number = None
    if (
        isinstance(value, bool)
        or number is None
        or not math.isfinite(number)
        or number < 0
        or (positive and number == 0)
    ):
        raise pytest.UsageError(f"ini {name} = {value!r}: give {wanted}")
    return number


def ini_value(config: pytest.Config, name: str, wanted: str) -> Any:
    """``config.getini(name)``; a value pytest cannot convert to the key's type (a TOML
    number for a string, ``maybe`` for a bool, an unclosed quote) is a usage error naming
    the key (pytest's own words differ between versions and config formats)."""
    try:
        return config.getini(name)
    except (pytest.UsageError, TypeError, ValueError) as error:
        raise pytest.UsageError(f"ini {name}: {_first_line(error)}; give {wanted}") from None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
