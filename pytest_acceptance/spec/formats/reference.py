"""The reference format (``parse.py``): ``#### AC-1: Title`` headings with yaml blocks."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_acceptance.model import Spec

_YAML_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*ya?ml\b", re.MULTILINE | re.IGNORECASE)
_METHOD = re.compile(r"^method[ \t]*:", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+[`*_]*[A-Za-z][A-Za-z0-9_]*-\S*?\d\S*?[`*_]*[ \t]*:", re.M)


class ReferenceFormat:
    name = "acceptance"

    def detect(self, text: str) -> float:
        blocks = _METHOD.search(text) is not None and _YAML_FENCE.search(text) is not None
        headings = _HEADING.search(text) is not None
        return 1.0 if blocks and headings else 0.8 if blocks else 0.5 if headings else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        from pytest_acceptance.spec.load import parse_reference

        return parse_reference(text, path)


FORMAT = ReferenceFormat()
