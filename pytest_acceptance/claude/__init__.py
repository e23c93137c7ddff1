"""The Claude Code hooks' library. Standard library only, Python 3.8.

Claude Code runs the hook scripts (``hooks/*.py``) as ``python3 -E -S`` from its plugin
cache: no site-packages, no environment variables for Python. Everything imported from here
must run there.

The gate is ``gate.py`` (its run and judgement) around ``pins/`` (what it trusts, one module
per input, listed in ``pins/table.py``); the hooks' decisions, the flow's state and the
transcript model are the rest. docs/architecture.md maps them.
"""
