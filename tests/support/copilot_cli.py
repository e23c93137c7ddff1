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


def unpacked_once() -> dict[str, str]:
    """The environment that lets every test's CLI share one unpacking of its own code.

    The native binary carries its JavaScript as an archive that it unpacks, on a start that
    finds no unpacked copy, under the home folder (a second process of the binary, about a
    second of CPU). Each test has a home of its own, so each test paid it. The copy is the
    CLI's code, not a session's state: the pinned version's, unpacked by the binary itself
    (into a temporary folder moved into place, so workers that race both get a whole one)."""
    return {"COPILOT_PKG_CACHE_HOME": str(COPILOT.cache_folder() / "unpacked")}


if __name__ == "__main__":
    sys.exit(COPILOT.main(sys.argv[1:]))
