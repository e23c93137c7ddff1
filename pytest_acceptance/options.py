"""Values the user gives: the specs to collect, the formats to read them in, ini numbers.

Read here, once, for every stage; a bad value is a one-line usage error before anything
runs. What stages share about the run lives in ``config.stash`` under the keys below.
"""

from __future__ import annotations

import math
import os
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
# A merge of CI shards (--acceptance-merge): the fingerprint of the tree the shards ran on,
# which the merged verdict records instead of the merging checkout's.
SHARDS_TREE = pytest.StashKey[str]()


def spec_paths(config: pytest.Config) -> list[Path]:
    """The specs named by --acceptance (from the invocation directory) and, for
    ``--acceptance`` without a value, by ini ``acceptance_specs`` (from the rootdir):
    files, directories, globs (``discover``); deduplicated, in order."""
    cached = config.stash.get(SPEC_LIST, None)
    if cached is None:
        cached = config.stash[SPEC_LIST] = _find_specs(config)
    return list(cached)


def _find_specs(config: pytest.Config) -> list[Path]:
    options: list[str] = list(config.getoption("acceptance") or ())
    if not options:
        return []  # the plugin does nothing unless asked
    from pytest_acceptance.spec import discover, formats

    base = config.invocation_params.dir
    given = [entry for entry in options if entry]
    from_ini = _ini_specs(config) if "" in options else []
    if "" in options and not from_ini:
        # `pytest --acceptance -v spec.md`: argparse gave -v the place of the spec.
        given += _markdown_arguments(config) or _no_spec_given()
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


def spec_origins(config: pytest.Config) -> tuple[tuple[Path, Path], ...]:
    """``((copy, origin),)`` when ``--acceptance-spec-origin`` says the one spec of the run
    is a copy of the project's spec at ``origin`` (the Claude Code gate verifies the spec
    pinned at /implement): its ``cwd:`` keys and sign-offs are read as the origin's."""
    given = config.getoption("acceptance_spec_origin", None)
    if not given:
        return ()
    specs = spec_paths(config)
    if len(specs) != 1:
        raise pytest.UsageError(
            f"--acceptance-spec-origin {given}: the run must have exactly one spec, "
            f"it has {len(specs)}"
        )
    origin = Path(os.path.abspath(config.invocation_params.dir / given))
    return ((specs[0].resolve(), origin),)


def origin_of(config: pytest.Config, spec: Path) -> Path | None:
    """The project's spec that ``spec`` is a copy of (``spec_origins``), or None: a copy is
    read as its origin (``collect.load_spec``)."""
    for copy, origin in spec_origins(config):
        if spec == copy or spec.resolve() == copy:
            return origin
    return None


def _markdown_arguments(config: pytest.Config) -> list[str]:
    """The markdown files the command line's paths and node ids name (not ini
    ``testpaths``)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return []
    base = config.invocation_params.dir
    files = [arg.split("::")[0] for arg in config.args]
    found = [f for f in files if f.lower().endswith(".md") and (base / f).is_file()]
    return list(dict.fromkeys(found))


def _no_spec_given() -> list[str]:
    raise pytest.UsageError(
        "--acceptance names no spec: put the spec right after it (pytest --acceptance "
        "spec.md -v), or list the specs in ini acceptance_specs"
    )


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

    timeout = ini_duration(config, "acceptance_timeout", positive=True)
    if timeout > MAX_TIMEOUT:
        raise pytest.UsageError(
            f"ini acceptance_timeout = {timeout:g}: give at most {MAX_TIMEOUT:g} seconds"
        )
    retries = ini_number(config, "acceptance_retries", int, "a whole number of at least 0")
    return timeout, retries


def ini_duration(config: pytest.Config, name: str, positive: bool = False) -> float:
    """An ini duration in seconds: a number, or a string with a unit as a spec's ``timeout:``
    takes (``90s``, ``5m``, ``2 min``, ``1h``); surrounding quotes, which a pytest.ini keeps
    as part of the value, are dropped."""
    from pytest_acceptance.spec.yamlload import DURATION_EXAMPLES, parse_duration

    above = "above 0" if positive else "(0 or more)"
    wanted = f"a number of seconds {above}, or a duration like {DURATION_EXAMPLES}"
    value = ini_value(config, name, wanted)
    if isinstance(value, str):
        seconds = parse_duration(_unquoted(value))
        if seconds is None:
            raise pytest.UsageError(f"ini {name} = {value!r}: give {wanted}")
        value = seconds
    return float(_checked(name, value, float, wanted, positive))


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
    return _checked(name, ini_value(config, name, wanted), kind, wanted, positive)


def _checked(
    name: str, value: Any, kind: type[int] | type[float], wanted: str, positive: bool
) -> Any:
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


def _unquoted(text: str) -> str:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        return stripped[1:-1]
    return stripped


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
