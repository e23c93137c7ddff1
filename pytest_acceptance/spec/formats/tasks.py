"""Task lists that carry their own checks (smart-ralph ``tasks.md``).

Each ``- [ ] 1.2 Title`` task (``[x]`` too: done work must stay verified) is criterion
``1.2``. Its nested ``**Verify**:`` line decides how: a stated command (an inline code span,
or a fenced block under it) becomes a bash criterion that runs it verbatim — several spans
run in order, joined by ``&&`` — and passes on exit code 0; a Verify without a command,
or no Verify, makes an agent criterion judged against the title, ``**Done when**`` and
the Verify text. ``**Do**``/``**Files**`` are context. A checkbox task with a Verify line
but no number is an error (it would otherwise be dropped). Category: the phase heading.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_acceptance.model import Spec
from pytest_acceptance.spec.formats.common import Builder, code_spans, matching_items
from pytest_acceptance.spec.formats.document import Block, Document, children

_TASK = re.compile(r"\[[ xX]\]\s+(?P<rest>.*)", re.S)
_NUMBERED = re.compile(r"(?P<id>\d+(?:\.\d+)+)\.?\s+(?P<title>.+)", re.S)
_LABEL = re.compile(
    r"[*_]*(?P<label>[A-Za-z][A-Za-z ]{1,20}?)[*_]*\s*:\s*[*_]*\s*(?P<rest>.*)", re.S
)
_SHELL = ("", "bash", "sh", "shell", "console", "zsh")
_DETECT_TASK = re.compile(r"^[ \t]*[-*][ \t]+\[[ xX]\][ \t]+\d+(?:\.\d+)+\.?[ \t]", re.MULTILINE)
_DETECT_VERIFY = re.compile(r"\*\*Verify\*\*[ \t]*:|\*\*Verify:\*\*")
SHAPE = 'a task like "- [ ] 1.2 Title" with a nested "**Verify**: `command`" line'


class TasksFormat:
    name = "tasks"

    def detect(self, text: str) -> float:
        return 0.9 if _DETECT_TASK.search(text) and _DETECT_VERIFY.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        for index, task, category in matching_items(document.blocks, _TASK):
            self._task(builder, document.blocks, index, task["rest"], category)
        return builder.spec(SHAPE)

    def _task(
        self, builder: Builder, blocks: list[Block], index: int, rest: str, category: str
    ) -> None:
        document = builder.document
        block = blocks[index]
        owned = children(blocks, index)
        # "- [ ] 1.2 Title" may carry "**Verify**: ..." lines in its own paragraph
        first, _, more = rest.partition("\n")
        paragraphs = [(more, None), *((b.text, b) for b in owned if _label(b))]
        labels = _labels(document, paragraphs, owned)
        numbered = _NUMBERED.match(document.plain(first))
        if numbered is None:
            if "verify" in labels:
                builder.error(
                    block.line,
                    "this task has a Verify line but no number: write it as "
                    '"- [ ] 1.2 Title" so it becomes criterion 1.2',
                )
            return
        verify_text, command = labels.get("verify", ("", None))
        title = numbered["title"]
        done_when = labels.get("done when", ("", None))[0]
        steps = [f"Done when: {done_when}" if done_when else "", verify_text]
        context = "\n".join(
            f"{name.capitalize()}: {value[0]}"
            for name, value in labels.items()
            if name in ("do", "files") and value[0]
        )
        builder.add(
            numbered["id"],
            block.line,
            title=title,
            text=title,
            steps=steps if command is None else [],
            context=context if command is None else f"{done_when}\n{context}".strip(),
            category=category,
            command=command,
            owned=owned,
        )


def _label(block: Block) -> bool:
    return block.kind == "paragraph" and _LABEL.match(block.text) is not None


def _labels(
    document: Document, paragraphs: list[tuple[str, Block | None]], owned: list[Block]
) -> dict[str, tuple[str, str | None]]:
    """``label -> (plain text, command)`` of the ``**Label**: text`` lines under a task."""
    found: dict[str, tuple[str, str | None]] = {}
    for text, block in paragraphs:
        for line in text.splitlines():
            label = _LABEL.match(line.strip())
            if label is None:
                continue
            name = label["label"].strip().lower()
            command = None
            if name == "verify":
                spans = code_spans(label["rest"])
                command = " && ".join(spans) if spans else _fenced(owned, block)
            found.setdefault(name, (document.plain(label["rest"]), command))
    return found


def _fenced(owned: list[Block], label: Block | None) -> str | None:
    """The first shell block after the Verify line, before the next item at its depth."""
    after = owned[owned.index(label) + 1 :] if label in owned else owned
    for block in after:
        if label is not None and block.kind == "item" and block.depth <= label.depth:
            return None
        if block.kind == "fence" and block.info in _SHELL and block.text.strip():
            return block.text.strip()
    return None


FORMAT = TasksFormat()
