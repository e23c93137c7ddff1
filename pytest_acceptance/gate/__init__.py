"""The gate: the library every agent's hooks call (Claude Code, Codex, Gemini CLI, Copilot
CLI). Standard library only, Python 3.8.

The agents run the hook scripts (``hooks/``) as ``python3 -E -S`` from the plugin's folder:
no site-packages, no environment variables for Python. Everything imported from here must
run there.

The gate is ``gate.py`` (its run and judgement) around ``pins/`` (what it trusts, one module
per input, listed in ``pins/table.py``); the hooks' decisions, the flow's state and the
transcript model are the rest. docs/architecture.md maps them.
"""
