"""GitHub spec-kit ``spec.md``: requirement items and the acceptance scenarios of stories.

- ``- **FR-001**: System MUST ...`` and ``- **SC-001**: ...`` (any ``**ID**:`` item) are
  criteria with the author's id; priority from the item's keyword (MUST when it has none);
  category: the heading above ("Functional Requirements", "Measurable Outcomes"). Where a
  template repeats the ids in each user story, a repeated id is scoped: ``US2-FR-001``.
- Each numbered scenario (``1. **Given** ..., **When** ..., **Then** ...``) under
  ``### User Story N - Title (Priority: Pk)`` is a criterion ``USN-ACk`` (spec-kit's
  ``US1/AC2``: ``/`` cannot be in a file name); P1 -> MUST, P2 -> SHOULD, P3+ -> COULD; the
  ``**Independent Test**`` line is context for the agent. Under the story's
  ``**Acceptance Scenarios**:`` label every item is a scenario (numbered by its place when
  unnumbered).
- The older template: numbered scenarios under ``### Acceptance Scenarios`` (after
  ``### Primary User Story``, its context) are ``AS-1``, ``AS-2``, ... of the requirement
  ``Primary-User-Story``.

Requirements (the matrix): each user story ``USN``, verified by its scenarios, and each
``**ID**:`` item, verified by itself.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pytest_acceptance.model import Priority, Spec
from pytest_acceptance.spec.formats.common import Builder, keyword_priority, nested_text
from pytest_acceptance.spec.formats.document import Block, Document, children

_ITEM_ID = re.compile(
    r"[*_]*(?P<id>[A-Z][A-Z0-9]*-\d[\w.-]*)[*_]*\s*[:\u2014\u2013-]\s*(?P<rest>.*)"
)
_STORY = re.compile(
    r"User Story\s+(?P<n>\d+)\s*(?:[-\u2014\u2013:]\s*(?P<title>.*?))?\s*"
    r"(?:\((?:Priority:\s*)?P(?P<p>\d+)\s*\))?\s*\Z",
    re.IGNORECASE,
)
_GIVEN = re.compile(r"\b(?:given|when|then)\b", re.IGNORECASE)
# The older template: "### Primary User Story" and its "### Acceptance Scenarios", no numbers.
_PRIMARY = re.compile(r"\W*Primary User Story\b", re.IGNORECASE)
_SCENARIOS = re.compile(r"\W*Acceptance Scenarios\b", re.IGNORECASE)
_SCENARIOS_LABEL = re.compile(r"[*_]{1,3}\s*Acceptance Scenarios\b", re.IGNORECASE)
PRIMARY_STORY = "Primary-User-Story"
_INDEPENDENT = re.compile(r"[*_]*Independent Test[*_]*\s*:?[*_]*\s*:?\s*", re.IGNORECASE)
_DETECT_ID = re.compile(r"^[ \t]*[-*][ \t]+\*\*([A-Z][A-Z0-9]*-\d[\w.-]*)\*\*", re.MULTILINE)
_DETECT_ITEM = re.compile(r"^\s*[-*]\s+\*\*(?:FR|SC|NFR)-\d+\*\*", re.MULTILINE)
_DETECT_STORY = re.compile(r"^#{2,4}\s+User Story\s+\d+.*\(Priority:\s*P\d", re.MULTILINE)
_DETECT_SCENARIOS = re.compile(
    r"^#{2,4}[ \t]+[^\w\n]*Acceptance Scenarios[ \t]*$(?:(?!^#).*\n){0,40}?"
    r"[ \t]*(?:\d+\.|[-*])[ \t]+[*_]*Given\b",
    re.MULTILINE | re.IGNORECASE,
)
SHAPE = (
    'a spec-kit item like "- **FR-001**: System MUST ..." or a numbered "**Given** ..., '
    '**When** ..., **Then** ..." scenario under "### User Story 1 - Title (Priority: P1)"'
)


@dataclass
class _Story:
    number: str
    heading: str
    level: int
    priority: Priority
    context: str = ""
    scenarios: bool = False  # under its "Acceptance Scenarios": every item is one
    count: int = 0  # scenarios so far: the number of an unnumbered one

    @property
    def requirement(self) -> str:
        return f"US{self.number}" if self.number else PRIMARY_STORY

    def scenario_id(self, number: str) -> str:
        return f"US{self.number}-AC{number}" if self.number else f"AS-{number}"


def _priority(level: str | None) -> Priority:
    if level is None:
        return Priority.MUST
    return {1: Priority.MUST, 2: Priority.SHOULD}.get(int(level), Priority.COULD)


class SpecKitFormat:
    name = "spec-kit"

    def detect(self, text: str) -> float:
        found = _DETECT_ITEM.search(text) or _DETECT_STORY.search(text)
        return 0.9 if found or _DETECT_SCENARIOS.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        blocks = document.blocks
        # Some spec-kit templates list "**FR-001**" under each story: scoped there, an id
        # used in several stories becomes "US2-FR-001" instead of a duplicate.
        counts = Counter(_DETECT_ID.findall(text))
        repeated = {ident for ident, count in counts.items() if count > 1}
        story: _Story | None = None
        primary = ""  # the older template's "Primary User Story" text: its scenarios' context
        category = ""
        for index, block in enumerate(blocks):
            if block.kind == "heading":
                story = self._heading(builder, block, story, primary)
                category = block.text
                if _PRIMARY.match(block.text):
                    primary = " ".join(
                        document.plain(b.text)
                        for b in children(blocks, index)
                        if b.kind == "paragraph" and not b.item
                    )
            elif block.kind == "paragraph" and story is not None and not block.item:
                if _INDEPENDENT.match(block.text):
                    story.context = "Independent test: " + document.plain(
                        block.text[_INDEPENDENT.match(block.text).end() :]  # type: ignore[union-attr]
                    )
                elif _SCENARIOS_LABEL.match(block.text):
                    story.scenarios = True
                elif story.scenarios and block.depth == 0 and _GIVEN.search(block.text):
                    self._paragraph_scenario(builder, block, story)
            elif block.kind == "item" and block.text:
                self._item(builder, blocks, index, story, category, repeated)
        return builder.spec(SHAPE)

    @staticmethod
    def _heading(
        builder: Builder, block: Block, story: _Story | None, primary: str
    ) -> _Story | None:
        """The story a heading opens (or keeps open): ``User Story N``, or the older
        template's ``Acceptance Scenarios`` of its primary story."""
        found = _STORY.match(block.text)
        if found:
            priority = _priority(found["p"])
            title = found["title"] or block.text
            builder.requirement(f"US{found['n']}", title, block.line)
            return _Story(found["n"], block.text, block.level, priority)
        scenarios = _SCENARIOS.match(block.text) is not None
        if story is not None and (block.level > story.level or scenarios):
            # "### Acceptance scenarios" right under "### User Story 1": still the story's
            story.scenarios = story.scenarios or scenarios
            return story
        if scenarios:
            builder.requirement(PRIMARY_STORY, "Primary User Story", block.line)
            context = f"Primary user story: {primary}" if primary else ""
            return _Story("", block.text, block.level, Priority.MUST, context, scenarios=True)
        return None

    def _item(
        self,
        builder: Builder,
        blocks: list[Block],
        index: int,
        story: _Story | None,
        category: str,
        repeated: set[str],
    ) -> None:
        block = blocks[index]
        document = builder.document
        text = document.plain(block.text)
        owned = children(blocks, index)
        paragraphs = [b for b in owned if b.kind == "paragraph"]
        details = nested_text(document, paragraphs)
        prose = [block.text, *(b.text for b in paragraphs)]  # markdown: a check's backticks
        found = _ITEM_ID.match(text)
        if found:
            rest = found["rest"]
            scoped = story is not None and found["id"] in repeated
            ident = builder.add(
                f"US{story.number}-{found['id']}" if scoped else found["id"],  # type: ignore[union-attr]
                block.line,
                title=rest,
                text=rest,
                steps=details,
                category=category,
                priority=keyword_priority(rest),
                owned=owned,
                prose=prose,
            )
            if ident is not None:
                builder.requirement(ident, document.plain(rest), block.line, [ident])
        elif story is not None and block.depth == 1 and self._scenario(block, story, text):
            story.count += 1
            builder.add(
                story.scenario_id(block.number or str(story.count)),
                block.line,
                title=text,
                text=text,
                steps=details,
                context=story.context,
                category=story.heading,
                priority=story.priority,
                owned=owned,
                prose=prose,
                requirement=story.requirement,
            )

    @staticmethod
    def _paragraph_scenario(builder: Builder, block: Block, story: _Story) -> None:
        """A scenario written as a paragraph of its own ("**Given** ..., **when** ...")."""
        story.count += 1
        text = builder.document.plain(block.text)
        builder.add(
            story.scenario_id(str(story.count)),
            block.line,
            title=text,
            text=text,
            context=story.context,
            category=story.heading,
            priority=story.priority,
            prose=[block.text],
            requirement=story.requirement,
        )

    @staticmethod
    def _scenario(block: Block, story: _Story, text: str) -> bool:
        """A numbered Given/When/Then item of a story; under its "Acceptance Scenarios",
        any item (what looks like a scenario is never dropped)."""
        return story.scenarios or bool(block.number and _GIVEN.search(text))


FORMAT = SpecKitFormat()
