"""The pinned GitHub Copilot CLI that the Copilot contract tests drive (npm `@github/copilot`,
with its native binary; see npm_cli.py for where it is installed).
`python tests/support/copilot_cli.py install` installs it when missing.

Offline, with no GitHub account: `COPILOT_OFFLINE=true` and a model provider of one's own
(`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`, `COPILOT_MODEL`) pointing at a
stand-in of the OpenAI Chat Completions API on 127.0.0.1 (`POST /v1/chat/completions`,
streamed). Repository hooks run in prompt mode only in a trusted folder (`--trust-folder`).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: tests/ holds the support package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.npm_cli import CliInstallError, NpmCli

# The pin: hook payloads and the hooks files' shape move between releases.
COPILOT = NpmCli(name="copilot", package="@github/copilot", version="1.0.102", command="copilot")
CopilotInstallError = CliInstallError


def installed_copilot() -> Path:
    return COPILOT.installed()


if __name__ == "__main__":
    sys.exit(COPILOT.main(sys.argv[1:]))
