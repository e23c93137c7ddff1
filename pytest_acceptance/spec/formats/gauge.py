"""Gauge specifications: recognised in order to refuse them clearly.

A Gauge spec (``# Specification``, ``## Scenario`` headings, ``* Step with "parameters"``
lines) is run by Gauge's own runner, which binds its steps to code; pytest-acceptance does
not read it. Its score stays below what a directory collects (``RECOGNISED``), so only a
file named directly reaches the refusal.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_acceptance.model import Spec, SpecError

_STEP = re.compile(r'^\*[ \t]+\S.*(?:"[^"\n]*"|<[^<>\n]+>)', re.MULTILINE)
_SCENARIO = re.compile(r"^##[ \t]+\S|^-{3,}[ \t]*$", re.MULTILINE)
_TAGS = re.compile(r"^tags[ \t]*:", re.MULTILINE | re.IGNORECASE)


class GaugeFormat:
    name = "gauge"

    def detect(self, text: str) -> float:
        steps = len(_STEP.findall(text))
        return 0.45 if steps >= 2 and (_SCENARIO.search(text) or _TAGS.search(text)) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        raise SpecError(
            path,
            1,
            "this is a Gauge specification: run it with Gauge's own runner (gauge run "
            f"{path}); pytest-acceptance does not read Gauge specs",
        )


FORMAT = GaugeFormat()
