"""Where a project's repository is, and which ``git`` may be asked about it.

Both are read from the file system and PATH only, never from a program or a configuration
the project controls: git's own answer (``rev-parse --show-toplevel``) follows the
repository's ``core.worktree`` and whichever ``git`` is first on PATH, and a PATH folder
inside the project (an activated ``.venv/bin``, ``node_modules/.bin``) is the agent's to
write. The repository is the folder git itself would find (the nearest one holding a
``.git`` entry); the work tree the gate verifies is that folder, whatever git's
configuration says.

Standard library only, Python 3.8: the hooks import it.
"""

from __future__ import annotations

import os


def top(path: str) -> str | None:
    """The nearest folder at or above `path` (made absolute, as it is written) holding a
    ``.git`` entry: git's own rule for finding a repository; None outside any."""
    folder = os.path.abspath(path)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def git_outside(project: str) -> str | None:
    """The first executable ``git`` on PATH outside `project` (links resolved); None when
    there is none. Empty and relative PATH entries mean the current folder: passed over."""
    inside = os.path.join(os.path.realpath(project), "")
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        folder = os.path.realpath(entry)
        if os.path.join(folder, "").startswith(inside):
            continue
        candidate = os.path.join(folder, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
