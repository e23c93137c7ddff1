"""Build markdown specs for tests: the seed-000 shape, one criterion at a time."""

from __future__ import annotations

import textwrap


def criterion(ident: str, title: str = "", *, level: int = 4, **verification: object) -> str:
    """A ``#### AC-N: Title`` block with a description and a yaml verification block."""
    lines = [f"{k}: {_yaml(v)}" for k, v in verification.items()]
    return (
        f"{'#' * level} {ident}: {title or ident.lower()}\n"
        f"**Description:** what {ident} asks for.\n\n"
        "**Verification:**\n```yaml\n" + "\n".join(lines) + "\n```\n\n"
    )


def bash(ident: str, command: str, title: str = "", **more: object) -> str:
    return criterion(ident, title, method="bash", command=command, **more)


def manual(ident: str, title: str = "", **more: object) -> str:
    return criterion(ident, title, method="manual", **more)


def spec(*blocks: str, title: str = "Spec", category: str = "Core") -> str:
    return f"# {title}\n\n## Acceptance Criteria\n\n### Category: {category}\n\n" + "".join(blocks)


def _yaml(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (list, tuple)):
        return "\n" + textwrap.indent("\n".join(f"- {_yaml(v)}" for v in value), "  ")
    return str(value)
