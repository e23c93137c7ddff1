"""Requirement prose (``extract.py``): MUST/SHOULD/COULD sentences and checklist items of
numbered sections, or of sections named "Requirements" / "Acceptance Criteria" /
"Definition of Done", each a criterion (an agent's, unless it states its own check)."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_acceptance.model import Requirement, Spec, SpecError

_KEYWORD = re.compile(r"\b(?:MUST|SHALL|SHOULD|COULD|MAY)\b")
_NUMBERED = re.compile(
    r"^#{1,6}[ \t]+(?:§[ \t]*\d|\d{1,3}(?:\.\d{1,3})*\.?[) \t])|^#{1,6}.*§", re.M
)
_NAMED = re.compile(
    r"^#{1,6}[ \t].*(?:requirements|acceptance criteria|definition of done)", re.M | re.I
)
# "#### Acceptance criteria" and text under it: each item (or paragraph) is a criterion.
_LISTED = re.compile(
    r"^#{1,6}[ \t].*\b(?:acceptance[ \t]+(?:criteria|scenarios)|definition of done)\b.*\n"
    r"(?:[ \t]*\n)*[ \t]*[^\s#]",
    re.M | re.I,
)
# "- [ ] The parser accepts ...": a definition of done's checklist.
_CHECKLIST = re.compile(r"^[ \t]*[-*+][ \t]+\[[ xX]\][ \t]+\S", re.M)
# "- AC-1.1: ...", "- **REQ-2** ...", "1. [FR-3] ...": requirements written with their ids.
_ID_ITEM = re.compile(
    r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(?:\[[ xX]\][ \t]+)?[*_`\[]*"
    r"[A-Z][A-Z0-9_]*-[A-Za-z0-9_.-]*\d",
    re.M,
)


class ProseFormat:
    name = "prose"

    def detect(self, text: str) -> float:
        sections = _NUMBERED.search(text) is not None or _NAMED.search(text) is not None
        if sections and _ID_ITEM.search(text):
            return 0.6  # beats a reference spec's criterion headings without blocks
        if sections and _CHECKLIST.search(text):
            return 0.55
        if _LISTED.search(text):
            return 0.45  # a reference spec's criterion headings (0.5) still win
        if _KEYWORD.search(text) is None:
            return 0.0
        if _NUMBERED.search(text):
            return 0.5
        return 0.3 if _NAMED.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        from pytest_acceptance.spec.extract import extract_criteria
        from pytest_acceptance.spec.formats.document import Document

        document = Document(text)
        criteria = extract_criteria(document.blocks, path, document.plain)
        if not criteria:
            raise SpecError(
                path,
                1,
                "no acceptance criteria found: no sentence says MUST, SHALL, SHOULD, COULD or "
                'MAY under a numbered heading like "## 3.2 Title" or a "## Requirements" '
                'heading (or write criteria as "#### AC-1: Title" with a yaml block)',
            )
        # Each statement is a requirement of its own, verified by its criterion.
        requirements = tuple(Requirement(c.id, c.title, c.location, (c.id,)) for c in criteria)
        return Spec(path, tuple(criteria), document.title, requirements)


FORMAT = ProseFormat()
