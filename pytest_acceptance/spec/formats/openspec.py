"""OpenSpec: ``openspec/specs/<capability>/spec.md`` and the spec deltas of a change.

Each ``### Requirement: Name`` is a criterion (id: the name with spaces and other unsafe
characters as ``-``: ``Session-Expiry``); its statement ("The system SHALL ...") and each
``#### Scenario: Name`` with its WHEN/THEN bullets are what the agent judges. In a change
delta, requirements under ``## ADDED Requirements`` and ``## MODIFIED Requirements`` are
criteria; ``## REMOVED Requirements`` and ``## RENAMED Requirements`` are not (they describe
what goes away). Category: the capability (the spec's folder) and the delta section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.formats.common import Builder, keyword_priority
from pytest_acceptance.spec.formats.document import Block, Document

_REQUIREMENT = re.compile(r"Requirement\s*:\s*(?P<name>.+)", re.IGNORECASE)
_SCENARIO = re.compile(r"Scenario\s*:\s*(?P<name>.+)", re.IGNORECASE)
_SKIPPED = re.compile(r"(?:REMOVED|RENAMED)\b")
_DETECT_REQUIREMENT = re.compile(r"^###[ \t]+Requirement:", re.MULTILINE)
_DETECT_SCENARIO = re.compile(r"^####[ \t]+Scenario:", re.MULTILINE)
_DETECT_DELTA = re.compile(r"^##[ \t]+(?:ADDED|MODIFIED|REMOVED|RENAMED)[ \t]+Requirements", re.M)
SHAPE = 'OpenSpec "### Requirement: Name" headings with "#### Scenario: Name" WHEN/THEN bullets'


@dataclass
class _Requirement:
    name: str
    line: int
    category: str
    statement: list[str] = field(default_factory=list)
    scenarios: list[list[str]] = field(default_factory=list)
    owned: list[Block] = field(default_factory=list)


class OpenSpecFormat:
    name = "openspec"

    def detect(self, text: str) -> float:
        if _DETECT_REQUIREMENT.search(text) and _DETECT_SCENARIO.search(text):
            return 0.9
        return 0.7 if _DETECT_DELTA.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        capability = path.parent.name if path.name == "spec.md" else document.title
        section, skipped = "", False
        current: _Requirement | None = None
        for block in document.blocks:
            if block.kind == "heading":
                requirement = _REQUIREMENT.match(block.text)
                scenario = _SCENARIO.match(block.text) if current is not None else None
                if scenario:
                    current.scenarios.append([f"Scenario: {scenario['name']}"])  # type: ignore[union-attr]
                    continue
                self._close(builder, current)
                current = None
                if block.level <= 2:
                    section, skipped = block.text, _SKIPPED.match(block.text) is not None
                elif requirement and not skipped:
                    category = " — ".join(p for p in (capability, section) if p)
                    current = _Requirement(requirement["name"].strip(), block.line, category)
            elif current is not None:
                self._content(document, current, block)
        self._close(builder, current)
        return builder.spec(SHAPE)

    @staticmethod
    def _content(document: Document, current: _Requirement, block: Block) -> None:
        if block.kind == "fence":
            current.owned.append(block)
        elif block.kind == "paragraph":
            target = current.scenarios[-1] if current.scenarios else current.statement
            target.append(document.plain(block.text))

    @staticmethod
    def _close(builder: Builder, current: _Requirement | None) -> None:
        if current is None:
            return
        statement = " ".join(current.statement) or current.name
        builder.add(
            current.name,
            current.line,
            title=current.name,
            text=statement,
            steps=["\n  ".join(scenario) for scenario in current.scenarios],
            category=current.category,
            priority=keyword_priority(statement),
            owned=current.owned,
        )


FORMAT = OpenSpecFormat()
