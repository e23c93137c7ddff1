"""How many xdist workers a run without ``-n`` starts: only as many as can be busy.

xdist starts its workers before anything is collected, so the selection is worked out
here from the parsed specs: the node ids on the command line, ``--deselect``, ``-k`` and
``-m`` read as pytest reads them on the criteria's own names and markers. A conftest hook
that changes the selection or the markers is not seen: the count may then be off, which
costs speed, never correctness (any number of workers runs the same items).

- Only agent criteria selected: no worker. This process runs them, a wave at a time
  (agent checks wait on the model, not on a CPU).
- Bash criteria too: ``min(wave, automated criteria selected, CPUs available)`` workers,
  none when that is 1 or less (one criterion, or only manual ones).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.model import Criterion, Method, SpecError


def default_workers(config: pytest.Config, wave: int) -> int | None:
    """The worker count for a run with agent criteria and no ``-n``; None: leave it be."""
    selected = selected_criteria(config)
    automated = [c for c in selected if c.automated]
    if not any(c.method is Method.SUBAGENT for c in automated):
        return None
    if all(c.method is Method.SUBAGENT for c in automated):
        return 0
    count = min(wave, len(automated), available_cpus())
    return count if count > 1 else 0


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def selected_criteria(config: pytest.Config) -> list[Criterion]:
    """The criteria this run will select, as far as the command line tells."""
    from pytest_acceptance.collect import spec_of_run  # cached: collection reuses the parse
    from pytest_acceptance.options import spec_paths

    rootdir = config.rootpath
    named = _named_ids(config)
    deselect = [str(prefix) for prefix in config.getoption("deselect", None) or ()]
    keyword = _matcher(config.getoption("keyword", "") or "")
    markexpr = _matcher(config.getoption("markexpr", "") or "")
    found = []
    for path in spec_paths(config):
        try:
            spec = spec_of_run(config, path)
        except (SpecError, OSError):
            continue  # collection reports it
        wanted = named.get(path.resolve())  # None: the whole spec
        prefix = _nodeid_prefix(path, rootdir)
        for criterion in spec.criteria:
            nodeid = f"{prefix}::{criterion.id}"
            if wanted is not None and criterion.id not in wanted:
                continue
            if any(nodeid.startswith(d) for d in deselect):
                continue
            if not keyword(_keywords(criterion, path, rootdir), substring=True):
                continue
            if not markexpr(_markers(criterion), substring=False):
                continue
            found.append(criterion)
    return found


def _named_ids(config: pytest.Config) -> dict[Path, set[str] | None]:
    """Paths named on the command line: the criterion ids given (None: the whole file)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return {}
    base = config.invocation_params.dir
    named: dict[Path, set[str] | None] = {}
    for arg in config.args:
        path, _, rest = str(arg).partition("::")
        try:
            key = (base / path).resolve()
        except (OSError, RuntimeError):  # a loop of links: pytest reports the path itself
            continue
        if not rest:
            named[key] = None
            continue
        ids = named.setdefault(key, set())
        if ids is not None:
            ids.add(rest.split("::")[0])
    return named


def _nodeid_prefix(path: Path, rootdir: Path) -> str:
    return Path(os.path.relpath(path.resolve(), rootdir.resolve())).as_posix()


def _keywords(criterion: Criterion, path: Path, rootdir: Path) -> set[str]:
    """What ``-k`` matches for a criterion item: its name, its parents' names (the spec
    file, its directories below the rootdir's parent), its markers, title and category."""
    names = {criterion.id, path.name, *_markers(criterion)}
    names.update(part for part in (criterion.title, criterion.category) if part)
    relative = Path(os.path.relpath(path.resolve(), rootdir.resolve().parent))
    names.update(relative.parts[:-1])
    return names


def _markers(criterion: Criterion) -> set[str]:
    markers = {criterion.method.value, criterion.priority.value.lower()}
    if criterion.category:
        slug = "_".join(re.findall(r"[a-z0-9]+", criterion.category.lower())) or "uncategorized"
        markers.update({slug, f"category_{slug}"})
    return markers


def _matcher(expression: str) -> Callable[..., bool]:
    """A predicate for a ``-k``/``-m`` expression; always true when there is none, or when
    pytest's expression language is not where this version of pytest keeps it (the count
    is then the whole spec's, as if nothing were deselected)."""
    if not expression.strip():
        return lambda names, substring: True
    try:
        from _pytest.mark.expression import Expression  # pytest's own reading of -k/-m

        compiled = Expression.compile(expression)
    except Exception:  # not there, or a syntax error pytest reports itself
        return lambda names, substring: True

    def matches(names: Iterable[str], substring: bool) -> bool:
        lowered = [name.lower() for name in names]

        def match(word: str, /, **kwargs: Any) -> bool:
            if kwargs:
                return False  # our markers carry no arguments
            if substring:
                return any(word.lower() in name for name in lowered)
            return word in names

        try:
            return bool(compiled.evaluate(match))
        except Exception:
            return True

    return matches
