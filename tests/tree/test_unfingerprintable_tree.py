"""A tree the fingerprint cannot read (a corrupt .git/index) never crashes a plain run: the
verdict is decided by the criteria and records the fingerprint as unavailable, with why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

SPEC = """# Spec

#### AC-1: passes
```yaml
method: bash
command: "true"
```
"""


def test_a_corrupt_git_index_leaves_the_fingerprint_unavailable_not_a_crash(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "spec.md").write_text(SPEC)
    (root / ".git" / "index").write_bytes(b"DIRC garbage that is no index")
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str()
    data = json.loads((Path(root) / ".acceptance" / "verdict.json").read_text())
    assert data["status"] == "pass"
    assert data["fingerprint"].startswith("unavailable: ")
    assert data["fingerprint_after"].startswith("unavailable: ")
