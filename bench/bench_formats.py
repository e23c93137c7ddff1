"""Spec formats at scale, measured side by side in one run: collecting 5,000 criteria of a
spec-kit spec found through ``--acceptance DIR`` (discovery among 200 other markdown
files, format detection, the parse cache) vs pytest collecting 5,000 parametrized Python
tests (target ratio <= 1.25, as for the reference format in bench_core.py).

Usage: python bench/bench_formats.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _compare import PYTEST, compare

PARAMETRIZED = """
import pytest

@pytest.mark.parametrize("n", range(1, {count} + 1))
def test_requirement(n):
    assert n
"""


def speckit(count: int) -> str:
    items = "".join(
        f"- **FR-{n:04d}**: System MUST handle case {n} as the analysts expect.\n"
        for n in range(1, count + 1)
    )
    return (
        "# Feature Specification: Bench\n\n## Requirements *(mandatory)*\n\n"
        f"### Functional Requirements\n\n{items}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        feature = root / "specs" / "001-bench"
        feature.mkdir(parents=True)
        (feature / "spec.md").write_text(speckit(5000))
        for n in range(200):  # notes, plans and readmes beside the spec
            (root / "specs" / f"note-{n}.md").write_text(f"# Note {n}\n\nPlain prose.\n")
        (root / "test_big.py").write_text(PARAMETRIZED.format(count=5000))
        ratio = compare(
            "collect 5,000 spec-kit criteria from a directory",
            [*PYTEST, "--collect-only", "test_big.py"],
            [*PYTEST, "--collect-only", "--acceptance", "specs"],
            root,
            target=1.25,
            rounds=rounds,
        )
    sys.exit(0 if ratio <= 1.25 else 1)


if __name__ == "__main__":
    main()
