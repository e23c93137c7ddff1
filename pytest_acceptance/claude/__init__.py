"""The Claude Code hooks' library. Standard library only, Python 3.8.

Claude Code runs the hook scripts (``hooks/*.py``) as ``python3 -E -S`` from its plugin
cache: no site-packages, no environment variables for Python. Everything imported from here
must run there.
"""
