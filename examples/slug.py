"""Turn a title into a URL slug: ``slug("Hello, World!")`` is ``"hello-world"``.

The example project of pytest-acceptance: spec.md says what it must do, failing.md asks
for something it does not do yet.
"""

from __future__ import annotations

import re
import sys

MAX_LENGTH = 60


def slug(title: str, max_length: int = MAX_LENGTH) -> str:
    """Lowercase ASCII words joined by dashes, cut at a word boundary."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    kept: list[str] = []
    for word in words:
        if len("-".join([*kept, word])) > max_length:
            break
        kept.append(word)
    return "-".join(kept) or "untitled"


if __name__ == "__main__":
    print(slug(" ".join(sys.argv[1:])))
