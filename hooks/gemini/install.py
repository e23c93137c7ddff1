"""Install pytest-acceptance's gate for Gemini CLI into a project.

    python3 <plugin>/hooks/gemini/install.py [PROJECT]

See gemini_install.py: the hooks go into PROJECT/.gemini/settings.json, and the project is
trusted in ~/.gemini/trustedFolders.json (Gemini ignores an untrusted folder's settings).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pytest_acceptance.gate import gemini_install

if __name__ == "__main__":
    sys.exit(gemini_install.main(sys.argv[1:]))
