"""Install pytest-acceptance's gate for GitHub Copilot CLI into a project.

    python3 <plugin>/hooks/copilot/install.py [PROJECT]

See copilot_install.py: the hooks go into PROJECT/.github/hooks/pytest-acceptance.json, a
file of the gate's own; a file there that holds any hook not ours is never overwritten.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import copilot_install

if __name__ == "__main__":
    sys.exit(copilot_install.main(sys.argv[1:]))
