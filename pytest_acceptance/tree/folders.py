"""Folders of a project that are not the project's own work, by role: what each role means,
and which walk passes over which. Standard library only, Python 3.8: the hooks import it.

Each walk of the project (the tree's fingerprint, the interpreter closure's search for
modules that shadow others, criterion integrity's search for test files, the purge of
bytecode before the gate's run) names the roles it passes over, here, so the sets cannot
drift apart. Where walks disagreed, the gate takes the walk that sees more: a folder the
gate must see is never passed over because another walk does not need it.

A role is a set of folder *names*, matched at any depth.
"""

from __future__ import annotations

# Version control's own bookkeeping: not files of the tree. The fingerprint asks git
# (through its own rules, tree/fingerprint.py) what a git work tree holds, never reads the
# repository's files as tree content.
VERSION_CONTROL = frozenset({".git", ".hg", ".svn"})

# What a verification run writes itself: bytecode, pytest's cache and the evidence folder.
# Never part of the state under verification (the gate compares fingerprints taken before
# and after its own run, which writes them). What could change what runs through them is
# closed elsewhere: the gate's runs read no project bytecode (a private pycache prefix,
# and BYTECODE folders purged before the run).
BYTECODE = "__pycache__"
RUN_OUTPUT = frozenset({BYTECODE, ".pytest_cache", ".acceptance"})

# Virtualenvs: installed code, not the project's modules nor its tests. The one the gate's
# run uses is pinned by content with the interpreter's closure (tree/closure.py).
VIRTUALENVS = frozenset({".venv", "venv"})
# Installed JavaScript packages; JavaScript runners also write their caches here
# (``node_modules/.vite``), so a run of ``vitest`` changes it.
JS_PACKAGES = frozenset({"node_modules"})
# Environments and logs that tox and nox build and rewrite on every run.
TEST_ENVIRONMENTS = frozenset({".tox", ".nox"})
ENVIRONMENTS = VIRTUALENVS | JS_PACKAGES | TEST_ENVIRONMENTS

# Caches of linters and type checkers: no test run reads them.
TOOL_CACHES = frozenset({".mypy_cache", ".ruff_cache"})

# Third-party code kept inside the project (``vendor/``) is the project's: pytest collects
# tests from it (``norecursedirs`` does not name it) and code imports it. It belongs to no
# role that a walk passes over; named here so that no walk starts to.
VENDORED = frozenset({"vendor"})

# --- the walks ----------------------------------------------------------------------------

# The tree's fingerprint outside git (no ignore rules to say what is disposable): it counts
# everything but what a run writes itself, git's folder, and the environments whose content
# a run rewrites or the closure pins (tox's and nox's are counted: a walk that counted them
# sees more than one that does not).
FINGERPRINT_SKIPS_OUTSIDE_GIT = RUN_OUTPUT | {".git"} | VIRTUALENVS | JS_PACKAGES

# Left out of the interpreter closure's pin: bytecode (the gate's runs read none the agent
# can write) and an editable checkout's git folder (no import reaches it).
NOT_IN_THE_CLOSURE = frozenset({BYTECODE, ".git"})

# Where modules that could shadow an installed one are searched for in the project.
NOT_PROJECT_MODULES = VERSION_CONTROL | RUN_OUTPUT | ENVIRONMENTS

# Where criterion integrity does not look for a runner's test files, and what it does not
# pin inside a folder it watches.
NOT_THE_TESTS = VERSION_CONTROL | RUN_OUTPUT | ENVIRONMENTS | TOOL_CACHES

# Where no bytecode folder is purged before the gate's run: no Python module lives there.
NO_PROJECT_BYTECODE = VERSION_CONTROL | JS_PACKAGES
