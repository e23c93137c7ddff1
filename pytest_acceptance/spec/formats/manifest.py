"""manifest-dev manifests: ``- [INV-G1] ...`` invariants and ``- [AC-1.1] ...`` criteria.

An item whose text starts with a bracketed id is a criterion when it is a global invariant
(``INV-*``) or an acceptance criterion (``AC-*``), or when it states how it is verified;
process guidance (``PG-*``), assumptions, risks and trade-offs are not. How it is verified:

- a yaml block under it with ``verify:`` — ``method: bash`` with ``command`` runs the
  command verbatim; ``method: manual`` needs a human; anything else (``subagent``,
  ``codebase``, none) is an agent judging the ``prompt`` (``agent:``/``model:`` kept);
- a "Deterministic gate." line with a command in backticks runs that command;
- a "Judgment gate." line, or nothing stated: an agent judges the item's text.

The text before ``| Verify:`` is the title; category: the heading above (a deliverable).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Method, Spec
from pytest_acceptance.spec.formats.common import Builder, code_spans, matching_items
from pytest_acceptance.spec.formats.document import Block, Document, children

_ITEM = re.compile(r"\\?\[(?P<id>[A-Za-z][\w.-]*)\\?\]\s*(?P<rest>.*)", re.S)
_CRITERION_KIND = re.compile(r"(?:INV|AC)-", re.IGNORECASE)
_DESCRIPTION = re.compile(r"Description\s*:\s*", re.IGNORECASE)
_DETERMINISTIC = re.compile(r"Deterministic gate\b\.?\s*(?P<rest>.*)", re.IGNORECASE | re.S)
_JUDGMENT = re.compile(r"Judgment gate\b", re.IGNORECASE)
_GATE = re.compile(r"(?:Deterministic|Judgment) gate\b", re.IGNORECASE)
_VERIFY_KEY = re.compile(r"^\s*verify\s*:", re.MULTILINE)
_DETECT_ITEM = re.compile(r"^[ \t]*[-*][ \t]+\[(?:INV|AC)-[\w.-]+\]", re.MULTILINE)
_DETECT_GATE = re.compile(r"^[ \t]*verify[ \t]*:|(?:Deterministic|Judgment) gate", re.M | re.I)
SHAPE = 'a manifest item like "- [AC-1.1] Title" with a "verify:" yaml block or a gate line'


class ManifestFormat:
    name = "manifest"

    def detect(self, text: str) -> float:
        return 0.95 if _DETECT_ITEM.search(text) and _DETECT_GATE.search(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        document = Document(text)
        builder = Builder(path, document)
        for index, item, category in matching_items(document.blocks, _ITEM):
            self._item(builder, document.blocks, index, item, category)
        return builder.spec(SHAPE)

    def _item(
        self, builder: Builder, blocks: list[Block], index: int, item: re.Match[str], cat: str
    ) -> None:
        document = builder.document
        block = blocks[index]
        owned = children(blocks, index)
        text = _DESCRIPTION.sub("", document.plain(item["rest"]), count=1)
        title = _GATE.split(text.split("| Verify:")[0])[0].strip()
        fence = next((b for b in owned if b.kind == "fence" and _VERIFY_KEY.search(b.text)), None)
        prose = [item["rest"], *(b.text for b in owned if b.kind == "paragraph")]
        gate = next((g for p in prose if (g := _DETERMINISTIC.search(p))), None)
        judged = any(_JUDGMENT.search(p) for p in prose)
        if not (_CRITERION_KIND.match(item["id"]) or fence or gate or judged):
            return  # process guidance, an assumption, a risk: not verified
        fields: dict[str, Any] | None = None
        command = None
        if fence is not None:
            builder.consumed.add(fence.line)
            fields = _verify_fields(builder, fence, item["id"], text)
            if fields is None:
                return
        elif gate is not None:
            spans = code_spans(gate["rest"])
            command = " && ".join(spans) if spans else None
            if command is None:
                builder.error(
                    block.line,
                    f"{item['id']} says Deterministic gate but states no command: put the "
                    "command in backticks after it",
                )
                return
        builder.add(
            item["id"],
            block.line,
            title=title,
            text=text,
            steps=[document.plain(b.text) for b in owned if b.kind == "paragraph"],
            category=cat,
            command=command,
            fields=fields,
            owned=[],
        )


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
