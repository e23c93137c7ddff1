"""OpenSpec: ``openspec/specs/<capability>/spec.md`` and the spec deltas of a change.

Each ``#### Scenario: Name`` of a ``### Requirement: Name`` is a criterion named by both
headings, as an OpenSpec author names it: id ``Archive-Process--Archive-already-exists``
(the names with spaces and other unsafe characters as ``-``, the two joined by ``--``),
title "Archive Process / Archive already exists". Its WHEN/THEN bullets are what the agent
judges, the requirement's statement ("The system SHALL ...") is context, and a check the
scenario states itself ("... `cmd` exits 0") is run (``stated_check``). A requirement
without scenarios is one criterion named after it. Each requirement is a requirement of the
spec, with its scenarios as criteria.

In a change delta, requirements under ``## ADDED Requirements`` and ``## MODIFIED
Requirements`` are read; ``## REMOVED Requirements`` and ``## RENAMED Requirements`` are
not (they describe what goes away), nor is a scenario tagged ``(REMOVED)``; a
``(MODIFIED)`` tag is not part of the name. Category: the capability (the spec's folder)
and the delta section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.formats.common import Builder, keyword_priority, safe_id
from pytest_acceptance.spec.formats.document import Block, Document

_REQUIREMENT = re.compile(r"Requirement\s*:\s*(?P<name>.+)", re.IGNORECASE)
_SCENARIO = re.compile(
    r"Scenario\s*:\s*(?P<name>.+?)\s*(?:\((?P<tag>MODIFIED|REMOVED|ADDED)\))?\Z", re.I
)
_SKIPPED = re.compile(r"(?:REMOVED|RENAMED)\b")
_DETECT_REQUIREMENT = re.compile(r"^###[ \t]+Requirement:", re.MULTILINE)
_DETECT_SCENARIO = re.compile(r"^####[ \t]+Scenario:", re.MULTILINE)
_DETECT_DELTA = re.compile(r"^##[ \t]+(?:ADDED|MODIFIED|REMOVED|RENAMED)[ \t]+Requirements", re.M)
SHAPE = 'OpenSpec "### Requirement: Name" headings with "#### Scenario: Name" WHEN/THEN bullets'


@dataclass
class _Scenario:
    name: str
    line: int
    removed: bool
    steps: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    owned: list[Block] = field(default_factory=list)


@dataclass
class _Requirement:
    name: str
    line: int
    category: str
    statement: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    scenarios: list[_Scenario] = field(default_factory=list)
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
                scenario = _SCENARIO.match(block.text) if current is not None else None
                if current is not None and scenario and block.level > 3:
                    removed = (scenario["tag"] or "").upper() == "REMOVED"
                    current.scenarios.append(_Scenario(scenario["name"], block.line, removed))
                    continue
                self._close(builder, current)
                current = None
                requirement = _REQUIREMENT.match(block.text)
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
        scenario = current.scenarios[-1] if current.scenarios else None
        if block.kind == "fence":
            (scenario or current).owned.append(block)
        elif block.kind == "paragraph":
            text = document.plain(block.text)
            if scenario is not None:
                indent = "  " * max(block.depth - 1, 0)
                scenario.steps.append(indent + text)
                scenario.raw.append(block.text)
            else:
                current.statement.append(text)
                current.raw.append(block.text)

    @staticmethod
    def _close(builder: Builder, current: _Requirement | None) -> None:
        if current is None:
            return
        statement = " ".join(current.statement) or current.name
        requirement = builder.requirement(current.name, current.name, current.line)
        priority = keyword_priority(statement)
        scenarios = [s for s in current.scenarios if not s.removed]
        if not current.scenarios:
            builder.add(
                current.name,
                current.line,
                title=current.name,
                text=statement,
                category=current.category,
                priority=priority,
                owned=current.owned,
                prose=current.raw,
                requirement=requirement,
            )
        for scenario in scenarios:
            builder.add(
                f"{safe_id(current.name)}--{safe_id(scenario.name)}",
                scenario.line,
                title=f"{current.name} / {scenario.name}",
                text=f"Scenario: {scenario.name}",
                steps=scenario.steps,
                context=f"Requirement {current.name}: {statement}",
                category=current.category,
                priority=priority,
                owned=scenario.owned,
                prose=scenario.raw,
                requirement=requirement,
            )


FORMAT = OpenSpecFormat()
