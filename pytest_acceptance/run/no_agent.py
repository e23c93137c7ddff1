"""What to say when a criterion needs an agent and none is configured: one line per
criterion, and the way out once per run. Shared by the agent plugin and the bash runner
(a pass condition outside the vocabulary is an agent's to judge)."""

from __future__ import annotations

from pytest_acceptance.model import Criterion, one_line
from pytest_acceptance.run.conditions import VOCABULARY

VOCABULARY_SHORT = ", ".join(f'"{phrase}"' for phrase in VOCABULARY[:3]) + ", ..."

HOW_TO_CONFIGURE = (
    "`pip install 'pytest-acceptance[claude]'` and give it a key or a login (the README's "
    "Agents section), or name a Claude Code CLI (`--acceptance-claude PATH`), or a command "
    "that reads the prompt on stdin and prints the verdict JSON "
    "(`--acceptance-agent-command CMD`)."
)


def no_agent_message(criterion: Criterion, evidence: str | None) -> str:
    """One line per criterion; the way out (``no_agent_advice``) is printed once per run."""
    if evidence is None:
        return f"no agent configured to judge {criterion.id}"
    condition = criterion.pass_condition or ""
    return (
        f"no agent configured to judge the pass condition {one_line(condition, 120)!r} of "
        f"{criterion.id}"
    )


def no_agent_advice(why: str) -> str:
    """What to do when criteria need an agent and none is configured: the same text for every
    such criterion of a run, so the verdict prints it once, before the list, in three lines."""
    return (
        f"an agent must judge them, and none is configured: {why}.\n"
        f"Configure one: {HOW_TO_CONFIGURE}\n"
        "Or let a command decide: give each criterion a yaml verification block with "
        "`method: bash`, a `command:` and a `pass_condition:` from the vocabulary "
        f"({VOCABULARY_SHORT}; see the spec format's pass conditions)."
    )
