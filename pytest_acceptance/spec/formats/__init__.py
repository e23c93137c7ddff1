"""Spec formats: which one a markdown text is written in, and its parser.

A format is any object with a ``name``, a ``detect(text) -> float`` (0 when the text is not
in this format, up to 1 when its structure is unmistakable; cheap: regular expressions on
the raw text, no markdown parsing) and a ``parse(text, path) -> Spec`` that raises only
``SpecError``. The built-in ones are below; another plugin adds one by implementing the
``pytest_acceptance_formats`` hook. The format with the highest score parses the text
(ties: the first listed, so a plugin's formats win over the built-in ones); ``forced``
names one to use whatever the text looks like.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pytest_acceptance.model import Spec, SpecError

# A directory or glob collects a file only when a format recognises it at least this well:
# a README that merely says MUST somewhere is not a spec.
RECOGNISED = 0.5


@runtime_checkable
class SpecFormat(Protocol):
    name: str

    def detect(self, text: str) -> float: ...

    def parse(self, text: str, path: Path) -> Spec: ...


class _Builtin:
    """A built-in format, its module imported on first use: a run that finds its specs in
    the parse cache imports none of them (their code is in the cache key already)."""

    def __init__(self, name: str, module: str, attribute: str = "FORMAT") -> None:
        self.name = name
        self._where = (f"pytest_acceptance.spec.formats.{module}", attribute)

    @functools.cached_property
    def _format(self) -> SpecFormat:
        module, attribute = self._where
        return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]

    def detect(self, text: str) -> float:
        return self._format.detect(text)

    def parse(self, text: str, path: Path) -> Spec:
        return self._format.parse(text, path)


_BUILTIN = (
    _Builtin("acceptance", "reference"),
    _Builtin("manifest", "manifest"),
    _Builtin("spec-kit", "speckit"),
    _Builtin("kiro", "kiro", "REQUIREMENTS"),
    _Builtin("kiro-design", "kiro", "DESIGN"),
    _Builtin("stories", "stories"),
    _Builtin("openspec", "openspec"),
    _Builtin("bmad", "bmad"),
    _Builtin("tasks", "tasks"),
    _Builtin("gherkin", "gherkin"),
    _Builtin("prose", "prose"),
    _Builtin("gauge", "gauge"),
)


def builtin_formats() -> list[SpecFormat]:
    """The formats this package reads, in the order that breaks ties."""
    return list(_BUILTIN)


@dataclass(frozen=True)
class FormatChoice:
    """The formats of a run and the one forced by --acceptance-format, if any."""

    formats: tuple[SpecFormat, ...]
    forced: str | None = None

    @functools.cached_property
    def key(self) -> bytes:
        """Identifies the choice for the parse cache: names, their code and the forcing."""
        digest = hashlib.sha256(f"forced={self.forced}".encode())
        for spec_format in self.formats:
            digest.update(f"|{spec_format.name}|{_code_stamp(spec_format)}".encode())
        return digest.digest()


def _code_stamp(spec_format: object) -> str:
    if isinstance(spec_format, _Builtin):
        return ""  # its source is part of the parser's identity (spec_cache)
    try:
        source = inspect.getsourcefile(type(spec_format))
        return f"{source}:{Path(source).stat().st_mtime_ns}" if source else ""
    except (TypeError, OSError):
        return ""


_active = FormatChoice(())


def activate(choice: FormatChoice) -> None:
    """Set the formats of this run (from the hook, in pytest_configure). Stage modules
    that load specs without a config (the recorder, the evidence writer) read it."""
    global _active
    _active = choice


def active() -> FormatChoice:
    return _active if _active.formats else _builtin_choice()


@functools.cache
def _builtin_choice() -> FormatChoice:
    return FormatChoice(tuple(builtin_formats()))


def find(formats: Sequence[SpecFormat], name: str) -> SpecFormat | None:
    return next((f for f in formats if f.name.casefold() == name.casefold()), None)


def detect(text: str, formats: Sequence[SpecFormat]) -> tuple[SpecFormat | None, float]:
    """The format that recognises ``text`` best and its score (None, 0 when none does)."""
    best: SpecFormat | None = None
    best_score = 0.0
    for place, spec_format in enumerate(formats):
        if best_score >= _BUILTIN_MAX and all(isinstance(f, _Builtin) for f in formats[place:]):
            break  # none of the rest can score higher: their modules need not even load
        try:
            score = float(spec_format.detect(text))
        except Exception:  # a plugin's broken detector must not hide the other formats
            continue
        if score > best_score:
            best, best_score = spec_format, score
    return best, best_score


# The highest score a built-in format gives (a later format wins only with a higher one).
_BUILTIN_MAX = 1.0


def parse_text(
    text: str, path: Path, formats: Sequence[SpecFormat] | None = None, forced: str | None = None
) -> Spec:
    """``text`` parsed by the forced format, else by the one that recognises it best, else
    by the reference format (whose error says what a criterion looks like)."""
    formats = list(formats) if formats is not None else builtin_formats()
    if forced:
        chosen = find(formats, forced)
        if chosen is None:
            names = ", ".join(f.name for f in formats)
            raise SpecError(path, 1, f"unknown spec format {forced!r}: use one of {names}")
    else:
        chosen, _ = detect(text, formats)
    if chosen is None:
        from pytest_acceptance.spec.formats import reference

        chosen = reference.FORMAT
    try:
        spec = chosen.parse(text, path)
    except SpecError:
        raise
    except Exception as exc:  # a plugin's parser: its fault is still a spec error, not a crash
        raise SpecError(
            path, 1, f"the {chosen.name} format could not parse the spec: {exc!r}"
        ) from exc
    if not isinstance(spec, Spec):
        raise SpecError(path, 1, f"format {chosen.name} returned {type(spec).__name__}, no Spec")
    return spec
