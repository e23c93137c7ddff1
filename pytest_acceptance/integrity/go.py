"""The inventory of a Go test file, read by patterns (comments stripped)."""

from __future__ import annotations

import re
from typing import Any

_GO_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_GO_TEST_FUNC = re.compile(r"^func\s+(Test\w*)\s*\(\s*(\w+)\s+\*testing\.T\s*\)", re.M)
_GO_NEXT_FUNC = re.compile(r"^func\s", re.M)
_GO_CONSTANT = re.compile(r"\b(?:assert|require)\.True\(\s*\w+\s*,\s*true\s*[,)]")


def go_inventory(text: str) -> dict[str, Any]:
    text = _GO_COMMENT.sub("", text)
    inventory: dict[str, Any] = {}
    for match in _GO_TEST_FUNC.finditer(text):
        following = _GO_NEXT_FUNC.search(text, match.end())
        body = text[match.end() : following.start() if following else len(text)]
        receiver = re.escape(match.group(2))
        checks = re.findall(rf"\b{receiver}\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(", body)
        helpers = re.findall(r"\b(?:assert|require)\.\w+\(", body)
        constant = len(_GO_CONSTANT.findall(body))
        skips = len(re.findall(rf"\b{receiver}\.(?:Skip|Skipf|SkipNow)\(", body))
        inventory[match.group(1)] = {
            "assertions": len(checks) + len(helpers) - constant,
            "constants": constant,
            "markers": {"skip": skips} if skips else {},
        }
    return inventory
