"""The example specs of tests/spec/format_specs/: parsed, and the line a text is on."""

from __future__ import annotations

from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.load import parse_spec

EXAMPLES = Path(__file__).parent.parent / "spec" / "format_specs"


def parsed(relative: str) -> Spec:
    return parse_spec(EXAMPLES / relative)


def line_of(relative: str, text: str) -> int:
    """The 1-based line of the example ``relative`` that first holds ``text``."""
    lines = (EXAMPLES / relative).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)
