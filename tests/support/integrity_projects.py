"""Shared test helpers."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from pytest_acceptance.integrity import Finding, snapshot, weakened


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


FAILING_TEST = "def test_fails():\n    assert compute() == 3\n"


def project(root: Path, extra: dict[str, str] | None = None) -> Path:
    """A project whose criterion runs ``pytest tests/``: tests, a conftest, a helper, a
    pyproject without pytest settings and a setup.cfg with only flake8 settings."""
    files = {
        "tests/test_x.py": FAILING_TEST,
        "tests/conftest.py": CONFTEST,
        "tests/helpers.py": "def make():\n    return 3\n",
        "tests/__init__.py": "",
        "pyproject.toml": '[project]\nname = "app"\ndependencies = ["requests"]\n',
        "setup.cfg": "[flake8]\nmax-line-length = 100\n",
        "src/app.py": "def compute():\n    return 2\n",
        **(extra or {}),
    }
    for relative, text in files.items():
        write(root, relative, text)
    return root


def after_edits(root: Path, commands: list[str], edits: dict[str, str | None]) -> list[Finding]:
    """Every finding after the edits (None deletes the file); the pin goes through JSON as
    the hooks store it, and the untouched tree reports nothing."""
    pin = json.loads(json.dumps(snapshot(str(root), commands)))
    assert weakened(str(root), pin) == []
    for relative, text in edits.items():
        if text is None:
            (root / relative).unlink()
        else:
            write(root, relative, text)
    return weakened(str(root), pin)


CONFTEST = "import pytest\n\n@pytest.fixture\ndef data():\n    return [1, 2]\n"
