"""manifest-dev manifests: invariants and acceptance criteria, as items or as headings.

- ``- [INV-G1] ...`` and ``- [AC-1.1] ...`` items (and the newer ``### INV-G1 — Title`` /
  ``#### AC-1.1 — Title`` headings, with their text below) are criteria when they are a
  global invariant (``INV-*``) or an acceptance criterion (``AC-*``), or when they state how
  they are verified; process guidance (``PG-*``), assumptions, risks and trade-offs are not.
- How it is verified: a yaml block with ``verify:`` — ``method: bash`` with ``command``
  runs the command verbatim; ``method: manual`` needs a human; anything else (``subagent``,
  ``codebase``, none) is an agent judging the ``prompt`` (``agent:``/``model:`` kept). Else
  the prose decides (``stated_check``): "Done when `cmd` exits 0. Deterministic gate." runs
  the command, "Judgment gate." or no stated command is an agent judging the text.
- A deliverable (``### Deliverable 1: Title``) is a requirement of the spec, verified by the
  criteria under it; each invariant is a requirement of its own.

The text before ``| Verify:`` is the title; category: the heading above (a deliverable).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Method, Spec
from pytest_acceptance.spec.formats.common import Builder, matching_items
from pytest_acceptance.spec.formats.document import Block, Document, children

_ITEM = re.compile(r"\\?\[(?P<id>[A-Za-z][\w.-]*)\\?\]\s*(?P<rest>.*)", re.S)
_HEADING = re.compile(
    r"(?P<id>(?:INV|AC|PG|ASM|R|T|RISK)-[\w.-]*\d[\w.-]*?)\s*(?:[:\u2014\u2013]|\s-)\s*(?P<rest>.*)",
    re.IGNORECASE,
)
_CRITERION_KIND = re.compile(r"(?:INV|AC)-", re.IGNORECASE)
_DELIVERABLE = re.compile(
    r"Deliverable\s+(?P<n>[\w.-]+)\s*[:.\u2014\u2013-]?\s*(?P<title>.*)", re.I
)
_DESCRIPTION = re.compile(r"Description\s*:\s*", re.IGNORECASE)
_GATE = re.compile(r"(?:Deterministic|Judgment) gate\b", re.IGNORECASE)
_VERIFY_KEY = re.compile(r"^\s*verify\s*:", re.MULTILINE)
_DETECT_ITEM = re.compile(r"^[ \t]*[-*][ \t]+\[(?:INV|AC)-[\w.-]+\]", re.MULTILINE)
_DETECT_HEADING = re.compile(r"^#{2,5}[ \t]+(?:INV|AC)-[\w.-]+[ \t]+[\u2014\u2013-][ \t]", re.M)
_DETECT_GATE = re.compile(r"^[ \t]*verify[ \t]*:|(?:Deterministic|Judgment) gate", re.M | re.I)
SHAPE = (
    'a manifest item like "- [AC-1.1] Title" or heading like "#### AC-1.1 — Title" with a '
    '"verify:" yaml block or a gate line'
)


class ManifestFormat:
    name = "manifest"

    def detect(self, text: str) -> float:
        shaped = _DETECT_ITEM.search(text) or _DETECT_HEADING.search(text)
        return 0.95 if shaped and _DETECT_GATE.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        blocks = document.blocks
        deliverables = _deliverables(builder, blocks)
        for index, item, category in matching_items(blocks, _ITEM):
            owned = children(blocks, index)
            deliverable = deliverables.get(index)
            self._criterion(builder, blocks[index], item, category, owned, deliverable)
        for index, block in enumerate(blocks):
            heading = _HEADING.match(block.text) if block.kind == "heading" else None
            if heading is not None:
                owned = children(blocks, index)
                category = _heading_above(blocks, index)
                self._criterion(builder, block, heading, category, owned, deliverables.get(index))
        builder.criteria.sort(key=lambda criterion: criterion.location.line)
        return builder.spec(SHAPE)

    def _criterion(
        self,
        builder: Builder,
        block: Block,
        found: re.Match[str],
        category: str,
        owned: list[Block],
        deliverable: str | None,
    ) -> None:
        document = builder.document
        ident = found["id"]
        text = _DESCRIPTION.sub("", document.plain(found["rest"]), count=1)
        title = _GATE.split(text.split("| Verify:")[0])[0].strip()
        fence = next((b for b in owned if b.kind == "fence" and _VERIFY_KEY.search(b.text)), None)
        prose = [found["rest"], *(b.text for b in owned if b.kind == "paragraph")]
        gated = any(_GATE.search(p) for p in prose)
        if not (_CRITERION_KIND.match(ident) or fence or gated):
            return  # process guidance, an assumption, a risk: not verified
        fields: dict[str, Any] | None = None
        if fence is not None:
            builder.consumed.add(fence.line)
            fields = _verify_fields(builder, fence, ident, text)
            if fields is None:
                return
        steps = [document.plain(b.text) for b in owned if b.kind == "paragraph"]
        is_invariant = ident.upper().startswith("INV-")
        requirement = deliverable
        if is_invariant or requirement is None:
            requirement = builder.requirement(ident, title or ident, block.line)
        builder.add(
            ident,
            block.line,
            title=title or (steps[0] if steps else ident),
            text=text or " ".join(steps),
            steps=steps if text else steps[1:],
            category=category,
            fields=fields,
            prose=prose,
            owned=[],
            requirement=requirement,
        )


def _deliverables(builder: Builder, blocks: list[Block]) -> dict[int, str]:
    """Block index -> the requirement of the deliverable it sits under."""
    found: dict[int, str] = {}
    current: tuple[str, int] | None = None
    for index, block in enumerate(blocks):
        if block.kind == "heading":
            deliverable = _DELIVERABLE.match(block.text)
            if deliverable:
                ident = builder.requirement(
                    f"Deliverable-{deliverable['n']}",
                    deliverable["title"].strip() or block.text,
                    block.line,
                )
                current = (ident, block.level)
                continue
            if current is not None and block.level <= current[1]:
                current = None
        if current is not None:
            found[index] = current[0]
    return found


def _heading_above(blocks: list[Block], index: int) -> str:
    level = blocks[index].level
    above = (b for b in reversed(blocks[:index]) if b.kind == "heading" and b.level < level)
    return next((b.text for b in above), "")


def _verify_fields(builder: Builder, fence: Block, ident: str, text: str) -> dict[str, Any] | None:
    """Criterion fields of a ``verify:`` block (None after reporting a problem)."""
    from pytest_acceptance.spec.yamlload import YamlProblem, load_block

    try:
        data = load_block(fence.text)
    except YamlProblem as exc:
        builder.error(fence.line + 1 + exc.line, f"malformed YAML in {ident}: {exc.problem}")
        return None
    verify = data.get("verify") if isinstance(data, dict) else None
    if not isinstance(verify, dict):
        builder.error(fence.line, f"{ident}: verify: must be a mapping (method, command, prompt)")
        return None
    method = str(verify.get("method") or "subagent").strip().lower()
    command, prompt = verify.get("command"), verify.get("prompt")
    if method == "bash":
        if not isinstance(command, str) or not command.strip():
            builder.error(fence.line, f'{ident}: method bash needs a "command" string')
            return None
        return {"method": Method.BASH, "command": command}
    listed = verify.get("checks")
    listed = listed if isinstance(listed, list) else [listed] if listed else []
    checks = tuple(str(v) for v in (prompt, *listed) if v) or (text,)
    if method == "manual":
        return {"method": Method.MANUAL, "checks": checks}
    agent, model = verify.get("agent"), verify.get("model")
    return {
        "method": Method.SUBAGENT,
        "checks": checks,
        "agent": str(agent) if agent else None,
        "model": str(model) if model else None,
    }


FORMAT = ManifestFormat()
