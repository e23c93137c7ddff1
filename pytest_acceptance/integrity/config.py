"""Test runners' configuration files: what pytest reads of a shared file (``pyproject.toml``,
``tox.ini``, ``setup.cfg``), the plugins a conftest.py names."""

from __future__ import annotations

import ast
import re

from pytest_acceptance.tree.closure import PYTEST_CONFIG_FILES

from .python import literal, name_of

PYTEST_CONFIGS = PYTEST_CONFIG_FILES
SHARED_CONFIGS = frozenset({"pyproject.toml", "tox.ini", "setup.cfg"})
JS_CONFIG = re.compile(
    r"^(?:(?:jest|vitest|vite)\.config|vitest\.workspace|\.mocharc)(?:\.[\w-]+)*$"
)
PLUGIN_OPTION = re.compile(r"(?:^|\s)-p\s*([A-Za-z_][\w.]*)")


def pytest_part(relative: str, content: bytes) -> bytes | None:
    """What pytest reads of a configuration file shared with other tools (None: nothing),
    else the whole content."""
    name = relative.rsplit("/", 1)[-1]
    if name not in SHARED_CONFIGS:
        return content
    text = content.decode("utf-8", errors="replace")
    part = _toml_pytest_part(text) if name == "pyproject.toml" else _ini_pytest_part(text)
    return None if part is None else part.encode("utf-8", errors="replace")


def _ini_pytest_part(text: str) -> str | None:
    """The ``[pytest]``/``[tool:pytest]`` sections, split as iniconfig splits them (a line
    starting with ``[`` and ending, before a comment, with ``]`` opens a section)."""
    sections: list[str] = []
    relevant = False
    for line in text.lstrip("\ufeff").splitlines():
        header = re.split("[#;]", line.rstrip())[0].rstrip() if line.startswith("[") else ""
        if header.endswith("]"):
            relevant = "pytest" in header.lower()
        if relevant:
            sections.append(line)
    return "\n".join(sections) if sections else None


_TOML_BARE_HEADER = re.compile(
    r"^\s*\[\[?\s*([A-Za-z0-9_-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*)\s*\]\]?\s*(?:#.*)?$"
)


def _toml_pytest_part(text: str) -> str | None:
    """The tables pytest reads (``[tool.pytest]``, ``[tool.pytest.ini_options]``), with the
    root and ``[tool]`` tables (dotted keys can reach it from there) and any table whose
    header is not plain (quoted or escaped keys). Read by lines, not parsed: a multi-line
    string outside those tables could hide a header, so then the whole file counts."""
    relevant_lines: list[str] = []
    other: list[str] = []
    relevant = True  # the root table
    for line in text.split("\n"):
        if line.lstrip().startswith("["):
            match = _TOML_BARE_HEADER.match(line)
            path = re.split(r"\s*\.\s*", match.group(1)) if match else None
            relevant = path is None or path == ["tool"] or path[:2] == ["tool", "pytest"]
        (relevant_lines if relevant else other).append(line)
    if any('"""' in line or "'''" in line for line in other):
        return text
    # Nothing but blank lines, comments and a bare [tool] header: pytest reads nothing here.
    meaningful = [
        line
        for line in relevant_lines
        if line.strip()
        and not line.lstrip().startswith("#")
        and not re.match(r"^\s*\[\s*tool\s*\]\s*(?:#.*)?$", line)
    ]
    return "\n".join(relevant_lines) if meaningful else None


def pytest_plugins_of(content: bytes) -> list[str]:
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and "pytest_plugins" in map(name_of, node.targets):
            value = literal(node.value)
            values = [value] if isinstance(value, str) else value
            if isinstance(values, (list, tuple)):
                names += [name for name in values if isinstance(name, str)]
    return names
