"""The pinned Gemini CLI that the Gemini contract tests drive (npm `@google/gemini-cli`, one
bundled JavaScript file run by Node 20+; see npm_cli.py for where it is installed).
`python tests/support/gemini_cli.py install` installs it when missing.

Offline: `GEMINI_API_KEY` with `security.auth.selectedType = "gemini-api-key"` in the
settings, and `GOOGLE_GEMINI_BASE_URL` pointing at a stand-in of the Gemini API on
127.0.0.1 (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: tests/ holds the support package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.npm_cli import CliInstallError, NpmCli

# The pin: hook payloads and the settings' shape move between releases.
GEMINI = NpmCli(name="gemini", package="@google/gemini-cli", version="0.61.0", command="gemini")
GeminiInstallError = CliInstallError


def installed_gemini() -> Path:
    return GEMINI.installed()


if __name__ == "__main__":
    sys.exit(GEMINI.main(sys.argv[1:]))
