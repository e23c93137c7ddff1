"""Install pytest-acceptance's gate for the OpenAI Codex CLI into a project, trusted.

    python3 <plugin>/hooks/codex/install.py [PROJECT]          install and trust
    python3 <plugin>/hooks/codex/install.py --check [PROJECT]  is every hook trusted?

See codex_install.py; uses the `codex` on PATH (or $ACCEPTANCE_CODEX) and $CODEX_HOME.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import codex_install

if __name__ == "__main__":
    sys.exit(codex_install.main(sys.argv[1:]))
