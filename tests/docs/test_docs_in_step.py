"""The docs stay in step with the code: every ``--acceptance*`` option and ``acceptance_*``
ini key that ``pytest --help`` lists is documented in docs/reference.md, and the reference
names none that does not exist; the README stays short; every relative link in the README
and docs/ leads to a file (and heading) that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference.md"
README_MAX_WORDS = 2600
LINKED_DOCS = sorted(
    [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *REPO.glob("docs/*.md")]
)

# In `pytest --help`, an option line starts with two spaces and the option; an ini line
# with two spaces, the key and its type in parentheses. Wrapped help text is indented more.
HELP_OPTION = re.compile(r"^  (--acceptance(?:-[a-z]+)*)\b", re.MULTILINE)
HELP_INI = re.compile(r"^  (acceptance_[a-z_]+) \(", re.MULTILINE)
# A name in prose: not part of a longer word (pytest-acceptance-wave-*, pytest_acceptance_run).
DOC_OPTION = re.compile(r"(?<![\w-])--acceptance(?:-[a-z]+)*")
DOC_INI = re.compile(r"(?<![\w.-])acceptance_[a-z_]+")
FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@cache
def pytest_help() -> str:
    """`pytest --help` with this package's plugin loaded, outside any project's ini file."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# Internal options, hidden from --help (argparse.SUPPRESS): the Claude Code gate passes them
# to its own run. The reference names them once, as internal.
HIDDEN_OPTIONS = {"--acceptance-verdict-fd": "3", "--acceptance-spec-origin": "spec.md"}


def declared() -> tuple[set[str], set[str]]:
    text = pytest_help()
    options, ini_keys = set(HELP_OPTION.findall(text)), set(HELP_INI.findall(text))
    assert "--acceptance" in options and "acceptance_timeout" in ini_keys, text
    return options | set(HIDDEN_OPTIONS), ini_keys


@pytest.mark.parametrize("option", sorted(HIDDEN_OPTIONS))
def test_internal_options_exist_but_are_hidden_from_help(option: str, tmp_path: Path) -> None:
    assert option not in set(HELP_OPTION.findall(pytest_help()))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", option, HIDDEN_OPTIONS[option], "--co", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert "unrecognized arguments" not in result.stderr, result.stderr
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout + result.stderr


def test_the_help_of_acceptance_format_lists_the_built_in_formats() -> None:
    from pytest_acceptance.plugin import FORMAT_NAMES
    from pytest_acceptance.spec.formats import builtin_formats

    assert tuple(f.name for f in builtin_formats()) == FORMAT_NAMES
    help_text = " ".join(pytest_help().split())
    assert f"{', '.join(FORMAT_NAMES)}, or a format plugin's name" in help_text


def without_fences(text: str) -> str:
    return FENCE.sub("", text)


def test_every_option_and_ini_key_is_in_the_reference() -> None:
    options, ini_keys = declared()
    reference = REFERENCE.read_text(encoding="utf-8")
    documented = set(DOC_OPTION.findall(reference)) | set(DOC_INI.findall(reference))
    missing = sorted((options | ini_keys) - documented)
    assert missing == [], f"declared but not documented in docs/reference.md: {missing}"


def junit_properties() -> set[str]:
    """The testsuite properties JUnit files get, named like ini keys (verdict/junit.py)."""
    source = (REPO / "pytest_acceptance" / "verdict" / "junit.py").read_text(encoding="utf-8")
    return set(re.findall(r'"(acceptance_[a-z_]+)"', source))


def test_the_reference_names_only_options_and_ini_keys_that_exist() -> None:
    options, ini_keys = declared()
    reference = REFERENCE.read_text(encoding="utf-8")
    unknown_options = sorted(set(DOC_OPTION.findall(reference)) - options)
    unknown_keys = sorted(set(DOC_INI.findall(reference)) - ini_keys - junit_properties())
    assert unknown_options == [], f"docs/reference.md names unknown options: {unknown_options}"
    assert unknown_keys == [], f"docs/reference.md names unknown ini keys: {unknown_keys}"


def test_the_readme_is_short() -> None:
    words = len((REPO / "README.md").read_text(encoding="utf-8").split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words (at most {README_MAX_WORDS})"


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: inline markup dropped, lower case, punctuation
    removed, spaces as dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[`*_]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in without_fences(path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


def relative_links(path: Path) -> list[str]:
    text = without_fences(path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # https:, mailto:
    ]


@pytest.mark.parametrize("document", LINKED_DOCS, ids=lambda path: path.name)
def test_every_relative_link_leads_somewhere(document: Path) -> None:
    broken = []
    for target in relative_links(document):
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if REPO not in linked.parents and linked != REPO:
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert broken == [], f"{document.relative_to(REPO)}: " + "; ".join(broken)


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    """The checks above can fail: a missing file and a missing heading are both seen."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#nowhere) [c](#title) [d](https://x.org)\n")
    assert relative_links(page) == ["missing.md", "#nowhere", "#title"]
    assert anchors(page) == {"title"}
    assert github_slug("The `.acceptance/` folder") == "the-acceptance-folder"
    assert github_slug("What needs Claude Code's sandbox") == "what-needs-claude-codes-sandbox"
