"""The README's first run works from a fresh clone: examples/spec.md passes, examples/
failing.md shows a failure's location, expected and actual; and nothing in the repository
reads or cites a path outside it (a user's clone has nothing beside it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of examples/, so runs never write into the checkout or race each other."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns(".acceptance", "__pycache__"))
    return copy


def run_example(directory: Path, spec: str) -> subprocess.CompletedProcess[str]:
    return run_in(directory, ["--acceptance", spec, "-v"])


def run_in(directory: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`pytest ARGS` in ``directory``, as a user's shell would run it (a clean environment)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(directory)},
    )


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)```", text, re.DOTALL)


def test_the_example_spec_passes_with_titles_in_its_progress(example: Path) -> None:
    result = run_example(example, "spec.md")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "spec.md::AC-1 Titles become lowercase words joined by dashes [bash] PASSED" in (
        result.stdout
    )
    assert "All 5 criteria pass: verified." in result.stdout


def test_the_failing_example_shows_location_expected_and_actual(example: Path) -> None:
    result = run_example(example, "failing.md")
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = result.stdout.split("## Verification Results", 1)[1]
    assert "  Location: checks/test_accents.py:7\n" in verdict
    assert "  Expected: exit code 0\n" in verdict
    assert "AssertionError: assert 'cr-me-br-l-e' == 'creme-brulee'" in verdict


def test_plain_pytest_in_the_example_runs_its_tests(example: Path) -> None:
    """The pytest script (unlike ``python -m pytest``) does not put the cwd on sys.path:
    the example's ``pythonpath`` setting does, so ``tests/`` can import ``slug``."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "pytest"), "-q", "-p", "no:cacheprovider"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(example)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No module named" not in result.stdout


def test_the_readme_first_commands_are_the_ones_tested_here() -> None:
    first, failing, *rest = readme_commands()
    assert "pip install -e ." in first and "pytest --acceptance spec.md" in first
    assert "cd examples" in first and "pytest --acceptance failing.md" in failing
    assert any(".venv/bin/pytest -n 3" in command for command in rest)


SPEC_KIT_STORY = (
    "# Feature Specification: Export\n\n### User Story 1 - Export (Priority: P1)\n\n"
    "1. **Given** a saved report, **When** it is exported, **Then** a CSV downloads\n\n"
    "## Requirements\n\n"
)
KIRO_REQUIREMENT = (
    "# Requirements Document\n\n## Requirements\n\n### Requirement 2: Expiring links\n\n"
    "**User Story:** As a user, I want reset links to expire, so that old mail is harmless.\n\n"
)


def test_the_readme_verification_blocks_in_list_items_make_bash_criteria() -> None:
    """The README's way to run a spec-kit or Kiro spec without an agent: a yaml block
    indented inside a spec-kit item or a Kiro criterion makes it a bash criterion."""
    from pytest_acceptance.model import Method
    from pytest_acceptance.spec.formats import parse_text

    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("carry a yaml verification block", 1)[1].split("````markdown\n", 1)[1]
    spec_kit, kiro = block.split("````", 1)[0].split("\n\n#### ", 1)
    criteria = parse_text(SPEC_KIT_STORY + spec_kit, Path("spec.md")).criteria
    by_id = {criterion.id: criterion for criterion in criteria}
    assert by_id["FR-001"].method is Method.BASH
    assert by_id["FR-001"].command == "python -m pytest tests/test_export.py -q"
    kiro_text = KIRO_REQUIREMENT + "#### " + kiro
    (reset,) = parse_text(kiro_text, Path(".kiro/specs/x/requirements.md")).criteria
    assert (reset.id, reset.method) == ("2.1", Method.BASH)
    assert reset.command == "python -m pytest tests/test_reset.py -q -k used_once"


def test_the_readme_spec_of_your_own_goes_green_with_its_manual_criterion_signed_off(
    tmp_path: Path,
) -> None:
    """The README's greeting spec and its manual AC-3, in a project of its own: the manual
    criterion waits for a person (exit 10), listed at the line and with the check the README
    shows, until the README's sign-off command records one; then the verdict passes."""
    import shlex

    text = (REPO / "README.md").read_text(encoding="utf-8")
    spec_text = text.split("could read:\n\n````markdown\n", 1)[1].split("````", 1)[0]
    manual = text.split("a third criterion for a person,\n\n````markdown\n", 1)[1]
    shown = manual.split("```console\n", 1)[1].split("```", 1)[0]
    (tmp_path / "spec.md").write_text(spec_text + "\n" + manual.split("````", 1)[0])
    (tmp_path / "greet.py").write_text("import sys\nprint(f'Hello, {sys.argv[1]}!')\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_greet.py").write_text("def test_it():\n    assert True\n")
    (sign_off,) = [c for c in readme_commands() if "--acceptance-sign-off" in c]
    words = shlex.split(sign_off)
    assert words[0] == "pytest"

    waiting = run_in(tmp_path, ["--acceptance", "spec.md"])
    assert waiting.returncode == 10, waiting.stdout + waiting.stderr
    assert shown.split("\n\n")[0] in waiting.stdout  # the README's block, as the run prints it
    signed = run_in(tmp_path, words[1:])
    assert signed.returncode == 0, signed.stdout + signed.stderr
    green = run_in(tmp_path, ["--acceptance", "spec.md"])
    assert green.returncode == 0, green.stdout + green.stderr
    assert "- AC-3: The greeting reads well ✓ (signed off by Ada Lovelace on " in green.stdout


def test_no_file_reads_or_cites_a_path_outside_the_repository() -> None:
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.fail("the repository must be a git checkout to list its files")
    outside = re.compile(r"\.\./shared/|/work/(shared|wt|main)/")
    offenders = [
        f"{name}:{number}"
        for name in listed
        if (REPO / name).is_file() and name != "tests/plugin/test_examples.py"
        for number, line in enumerate(
            (REPO / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1
        )
        if outside.search(line)
    ]
    assert offenders == []


def test_the_tests_never_download_the_claude_cli_mid_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the pinned SDK (`pip install -e '.[test]'`, the README's set-up) the CLI
    fixtures fail with that next step; nothing is fetched during a test run."""
    from support.claude_cli import ClaudeInstallError, bundled_binary, installed_claude, shadow_sdk

    monkeypatch.syspath_prepend(str(shadow_sdk(tmp_path / "shadow")))  # no bundled CLI
    with pytest.raises(ClaudeInstallError, match=r"pip install -e '\.\[test\]'"):
        installed_claude()
    assert bundled_binary() is None
