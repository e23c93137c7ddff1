"""Task lists: what an agent (or a person) claims done, each task checked against evidence.

Read as their tools write them:

- spec-kit ``tasks.md``: ``- [X] T012 [P] [US1] Create the model in src/models/user.py``:
  task ``T012``, citing user story ``US1`` (its criteria ``US1-AC1``, ...);
- Kiro and OpenSpec ``tasks.md``, smart-ralph's: ``- [x] 2.1 Title`` (Kiro's optional
  ``- [ ]* 2.3`` too), nested bullets, ``_Requirements: 1.2, 3.4_``, ``**Files**:``,
  ``**Verify**: `command```;
- a plain checklist under a "Tasks" (or "Implementation Plan", "Checklist", "TODO")
  heading: ``- [x] Write the migration`` (id: its first words).

A ticked task is a ``task`` criterion when it names evidence: its own verify command (an
inline code span of the ``**Verify**:`` line, several joined by ``&&``, or a shell block
under it), the files it names (backticked, or a path with a ``/`` and an extension; "remove
`x`" names a file that must be gone), and the requirements it cites. Whether they hold is
decided when the run checks it (``pytest_acceptance.run.task``). A ticked task that names
no evidence at all is a phantom completion: nothing shows it done, except in an OpenSpec
change, where it stands on the change's spec deltas (it cites ``specs/``). An unticked
task is listed, never run (``--acceptance-unticked fail`` fails it). Category: the phase
heading.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pytest_acceptance.model import Method, Spec, Task, one_line
from pytest_acceptance.spec.extract import id_words
from pytest_acceptance.spec.formats.common import (
    CRITERIA_HEADING,
    Builder,
    add_listed,
    code_spans,
)
from pytest_acceptance.spec.formats.document import Block, Document, children

_TASK = re.compile(r"\[(?P<tick>[ xX])\]\*?\s+(?P<rest>.*)", re.S)
_SPECKIT = re.compile(r"(?P<id>T\d{3,})\b\s*(?P<title>.*)", re.S)
_NUMBERED = re.compile(r"(?P<id>\d+(?:\.\d+)*)\.?\s+(?P<title>.+)", re.S)
_LABEL = re.compile(
    r"[*_]*(?P<label>[A-Za-z][A-Za-z ]{1,20}?)[*_]*\s*:\s*[*_]*\s*(?P<rest>.*)", re.S
)
_MARKER = re.compile(r"\[(?P<mark>P|US\d+|[A-Z]+\d*)\]\s*")  # [P], [US1], [VERIFY]
_STORY_MARK = re.compile(r"US\d+\Z")
_CITE = re.compile(r"[A-Z][A-Z0-9]*-\d[\w.]*\w|[A-Z][A-Z0-9]*-\d|US\d+|\d+(?:\.\d+)*")
_AC_CITE = re.compile(r"\(\s*AC\s*:\s*(?P<ids>[#\d,\s]+)\)", re.IGNORECASE)
_SHELL = ("", "bash", "sh", "shell", "console", "zsh")
_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|kts|rb|md|mdx|json|jsonc|yaml|yml|toml|sh|bash|"
    "zsh|ps1|css|scss|sass|less|html|htm|sql|c|h|cc|cpp|hpp|cs|csproj|sln|fs|swift|m|mm|php|ex|"
    "exs|erl|hrl|txt|cfg|conf|ini|lock|xml|vue|svelte|astro|proto|tf|tfvars|hcl|env|prisma|"
    "graphql|gql|dart|scala|sbt|clj|cljs|lua|r|jl|zig|nim|sol|nix|gradle|properties|plist|"
    "ipynb|csv|tsv|rst|adoc|j2|jinja|tmpl|tpl|hbs|ejs|erb|pug|liquid|twig|cshtml|razor|"
    "dockerfile|mk|cmake|bzl|bazel|pem|crt|svg|wasm|http|rest|feature|spec"
)
# Files people name without an extension.
_PLAIN_FILES = (
    "Dockerfile|Makefile|Procfile|Gemfile|Rakefile|Jenkinsfile|Vagrantfile|Brewfile|Justfile|"
    "Containerfile|Caddyfile|CODEOWNERS|LICENSE"
)
_PATH_SPAN = re.compile(
    rf"(?:[\w.-]+/)*(?:[\w.-]+\.(?:{_EXTENSIONS})|{_PLAIN_FILES}|[\w.-]+/)\Z"
    rf"|[\w.-]+(?:/[\w.-]+)+\Z"
)
# A bare file name without a folder counts only with an extension no word has ("Node.js" and
# "e.g." are not files; "pyproject.toml", "CHANGELOG.md" and "schema.prisma" are).
_BARE_EXTENSIONS = "|".join(
    e for e in _EXTENSIONS.split("|") if len(e) > 1 and e not in ("js", "spec", "rest", "http")
)
_BARE_NAME = re.compile(
    rf"(?<![\w/.`-])(?:[\w-]+(?:\.[\w-]+)*\.(?:{_BARE_EXTENSIONS})|{_PLAIN_FILES})(?![\w/`])"
)
_BARE_PATH = re.compile(
    rf"(?<![\w/.`-])(?:\./)?[\w.-]+(?:/[\w.-]+)*/(?:[\w.-]+\.(?:{_EXTENSIONS})|[\w.-]*/)"
    rf"(?![\w/`])"
)
_REMOVAL = re.compile(r"\b(?:remove|delete|drop|retire|get rid of)\b[^.;]*\Z", re.IGNORECASE)
_DETECT_SPECKIT = re.compile(r"^[ \t]*[-*][ \t]+\[[ xX]\][ \t]+T\d{3,}\b", re.MULTILINE)
_DETECT_NUMBERED = re.compile(r"^[ \t]*[-*][ \t]+\[[ xX]\]\*?[ \t]+\d+(?:\.\d+)*\.?[ \t]", re.M)
_DETECT_HEADING = re.compile(
    r"^#{1,3}[ \t].*\b(?:tasks?|implementation plan|checklist|to-?do)\b", re.M | re.I
)
_DETECT_CHECKBOX = re.compile(r"^[ \t]*[-*][ \t]+\[[ xX]\][ \t]+\S", re.MULTILINE)
# What a ticked task of an OpenSpec change that names no evidence of its own cites: the
# change's spec deltas, a folder next to its tasks.md (``verdict.tasks`` reads a cite that
# ends in "/" as every criterion of the run's specs under it).
CHANGE_SPECS = "specs/"
_CRITERIA = "Acceptance-Criteria"  # the requirement the list's own criteria verify
SHAPE = 'a task like "- [x] 1.2 Title", "- [X] T012 Title" or a checklist under a "Tasks" heading'


class TasksFormat:
    name = "tasks"

    def detect(self, text: str) -> float:
        if _DETECT_SPECKIT.search(text):
            return 0.95
        if _DETECT_NUMBERED.search(text):
            return 0.9
        return 0.55 if _DETECT_HEADING.search(text) and _DETECT_CHECKBOX.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        blocks = document.blocks
        criteria_level = 0  # of an "Acceptance Criteria" heading we are under; 0: none
        for index, block in enumerate(blocks):
            if block.kind == "heading":
                if criteria_level and block.level <= criteria_level:
                    criteria_level = 0
                if CRITERIA_HEADING.match(block.text):
                    criteria_level = block.level
                continue
            if block.kind != "item":
                continue
            task = _TASK.match(block.text)
            if task is not None:
                self._task(builder, blocks, index, task, _category(blocks, index))
            elif criteria_level and block.depth == 1:
                self._criterion(builder, blocks, index)
        return builder.spec(SHAPE)

    @staticmethod
    def _criterion(builder: Builder, blocks: list[Block], index: int) -> None:
        """A plain item under the list's "Acceptance Criteria": a criterion beside the tasks,
        with its author's id or ``AC-<n>``, checked as it states or by an agent."""
        count = sum(1 for c in builder.criteria if c.task is None) + 1
        number = blocks[index].number or str(count)
        builder.requirement(_CRITERIA, "Acceptance Criteria", blocks[index].line)
        add_listed(
            builder,
            blocks,
            index,
            fallback_id=f"AC-{number}",
            context="",
            category=_category(blocks, index),
            requirement=_CRITERIA,
        )

    def _task(
        self, builder: Builder, blocks: list[Block], index: int, task: re.Match[str], category: str
    ) -> None:
        document = builder.document
        block = blocks[index]
        owned = _own_blocks(blocks, index)
        first, _, more = task["rest"].partition("\n")
        head = _SPECKIT.match(first) or _NUMBERED.match(first)
        ident = head["id"] if head else id_words(document.plain(first))
        title_markdown = head["title"] if head else first
        marks = [m["mark"] for m in _MARKER.finditer(title_markdown)]
        title_markdown = _MARKER.sub("", title_markdown).strip()
        title = document.plain(title_markdown)
        paragraphs = [(more, None), *((b.text, b) for b in owned if _label(b))]
        labels = _labels(document, paragraphs, owned)
        if head is None and "verify" in labels:
            builder.error(
                block.line,
                "this task has a Verify line but no number: write it as "
                '"- [ ] 1.2 Title" so it becomes criterion 1.2',
            )
            return
        words = [title_markdown, *(b.text for b in owned if b.kind == "paragraph")]
        claim = Task(
            ticked=task["tick"] != " ",
            files=_files(words, labels, removed=False),
            removed=_files(words, labels, removed=True),
            cites=_cites(labels, marks, title_markdown),
            command=labels.get("verify", ("", None))[1],
            subtasks=_subtasks(builder, blocks, index),
        )
        if claim.ticked and not claim.evidence and in_openspec_change(builder.path):
            claim = dataclasses.replace(claim, cites=(CHANGE_SPECS,))
        self._add(builder, ident, block.line, title, category, claim, labels)

    @staticmethod
    def _add(
        builder: Builder,
        ident: str,
        line: int,
        title: str,
        category: str,
        claim: Task,
        labels: dict[str, tuple[str, str | None]],
    ) -> None:
        details = [
            f"{name.capitalize()}: {value[0]}"
            for name, value in labels.items()
            if name in ("do", "files", "done when", "verify") and value[0]
        ]
        builder.add(
            ident,
            line,
            title=title,
            text=title,
            steps=details,
            category=category,
            fields={"method": Method.TASK},
            how="task: " + _evidence_words(claim),
            extra={"task": claim},
        )


def _category(blocks: list[Block], index: int) -> str:
    """The text of the last heading above ``blocks[index]``."""
    return next((b.text for b in reversed(blocks[:index]) if b.kind == "heading"), "")


def in_openspec_change(path: Path) -> bool:
    """``openspec/changes/<change>/tasks.md`` (or an archived change's): its ``specs/``
    deltas say what the change's tasks make true."""
    above = path.parent.parent
    if above.name == "archive":
        above = above.parent
    return path.name == "tasks.md" and above.name == "changes"


def _evidence_words(claim: Task) -> str:
    if not claim.ticked:
        return "not ticked, listed"
    parts = []
    if claim.command:
        parts.append(f"`{one_line(claim.command, 40)}`")
    named = len(claim.files) + len(claim.removed)
    if named:
        parts.append(f"{named} file{'s' if named != 1 else ''} changed")
    if claim.cites == (CHANGE_SPECS,):
        parts.append(f"the change's {CHANGE_SPECS} (names nothing of its own)")
    elif claim.cites:
        parts.append("cited " + ", ".join(claim.cites[:4]) + (" …" if len(claim.cites) > 4 else ""))
    if claim.subtasks:
        parts.append("sub-tasks " + ", ".join(claim.subtasks[:4]))
    return "ticked; evidence: " + (", ".join(parts) or "none named (a phantom completion)")


def _subtasks(builder: Builder, blocks: list[Block], index: int) -> tuple[str, ...]:
    """The ids of the tasks nested right under ``blocks[index]``, and of the numbered tasks
    that follow it in the same list under its number (Kiro's ``2.`` then ``2.1``)."""
    found = []
    for block in children(blocks, index):
        nested = _TASK.match(block.text) if block.kind == "item" else None
        if nested and block.depth == blocks[index].depth + 1:
            head = _SPECKIT.match(nested["rest"]) or _NUMBERED.match(nested["rest"])
            if head:
                found.append(head["id"])
    own = _NUMBERED.match(_TASK.match(blocks[index].text)["rest"])  # type: ignore[index]
    if own and not found:
        for block in blocks[index + 1 :]:
            if block.kind == "heading":
                break
            nested = _TASK.match(block.text) if block.kind == "item" else None
            head = _NUMBERED.match(nested["rest"]) if nested else None
            if head and block.depth == blocks[index].depth:
                if not head["id"].startswith(own["id"] + "."):
                    break
                found.append(head["id"])
    return tuple(found)


def _own_blocks(blocks: list[Block], index: int) -> list[Block]:
    """The blocks under a task up to its first sub-task (a nested checkbox item)."""
    owned = []
    for block in children(blocks, index):
        if block.kind == "item" and _TASK.match(block.text):
            break
        owned.append(block)
    return owned


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
            found.setdefault(name, (document.plain(label["rest"]).rstrip("_*").strip(), command))
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


def _files(
    words: list[str], labels: dict[str, tuple[str, str | None]], removed: bool
) -> tuple[str, ...]:
    """The files a task names (``removed``: those it says it removes), in order."""
    found: dict[str, None] = {}
    listed = labels.get("files", ("", None))[0]
    candidates = [(p.strip().strip("`"), "") for p in re.split(r"[,\s]+", listed) if p.strip()]
    for text in words:
        for span in re.finditer(r"`([^`\n]+)`", text):
            for path in _braces(span[1].strip()):
                candidates.append((path, text[: span.start()]))
        unquoted = re.sub(r"`[^`\n]*`", " ", text)
        for bare in (*_BARE_PATH.finditer(unquoted), *_BARE_NAME.finditer(unquoted)):
            candidates.append((bare[0], unquoted[: bare.start()]))
    for path, before in candidates:
        if not _PATH_SPAN.match(path) or "://" in path or path.startswith("-"):
            continue
        if (_REMOVAL.search(before) is not None) == removed:
            found.setdefault(path.removeprefix("./"), None)
    return tuple(found)


_BRACES = re.compile(r"\{([\w.-]+(?:,[\w.-]+)+)\}")


def _braces(path: str) -> list[str]:
    """``a.{up,down}.sql`` as the shell expands it: ``a.up.sql``, ``a.down.sql`` (one
    brace group; a path without one is itself)."""
    found = _BRACES.search(path)
    if found is None:
        return [path]
    return [path[: found.start()] + part + path[found.end() :] for part in found[1].split(",")]


def _cites(
    labels: dict[str, tuple[str, str | None]], marks: list[str], title: str
) -> tuple[str, ...]:
    """The requirements a task cites: ``_Requirements: 1.2, FR-3_``, spec-kit's ``[US1]``,
    BMAD's ``(AC: 1, 3)``."""
    found: dict[str, None] = {}
    for name in ("requirements", "requirement", "req", "refs", "satisfies"):
        for ident in _CITE.findall(labels.get(name, ("", None))[0]):
            found.setdefault(ident, None)
    for mark in marks:
        if _STORY_MARK.match(mark):
            found.setdefault(mark, None)
    for listed in _AC_CITE.finditer(title):
        for number in re.findall(r"\d+", listed["ids"]):
            found.setdefault(f"AC{number}", None)
    return tuple(found)


FORMAT = TasksFormat()
