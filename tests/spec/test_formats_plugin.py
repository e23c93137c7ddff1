"""Spec formats through pytest: specs found like tests (a directory, a glob, ini
``acceptance_specs``), a format forced by option or ini key, a format added by another
plugin through the ``pytest_acceptance_formats`` hook, and the no-silent-drop rule on a
real run (a criterion written as a bold line with a failing command fails the run)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from support.judges import Judge

EXAMPLES = Path(__file__).parent / "format_specs"
EXAMPLE_COUNTS = {
    "bmad/1.3.profile-avatar.md": 3,
    "bmad/2.1.invoice-export.md": 2,
    "gherkin/features/cart.feature": 4,
    "kiro/design.md": 2,
    "kiro/requirements.md": 6,
    "kiro-sections/requirements.md": 6,
    "manifest/manifest.md": 4,
    "manifest/manifest-headings.md": 6,
    "openspec/changes/add-totp/specs/auth/spec.md": 2,
    "openspec/specs/auth/spec.md": 3,
    "prose/definition-of-done.md": 9,
    "prose/requirements.md": 8,
    "speckit/specs/001-csv-export/spec.md": 10,
    "stories/requirements.md": 6,
    "tasks/checklist.md": 3,
    "tasks/kiro-tasks.md": 6,
    "tasks/openspec-tasks.md": 4,
    "tasks/speckit-tasks.md": 8,
    "tasks/tasks.md": 4,
}


@pytest.fixture
def examples(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "specs"
    shutil.copytree(EXAMPLES, target)
    return target


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_a_directory_collects_every_spec_below_it_feature_files_too_and_skips_the_readme(
    pytester: pytest.Pytester, examples: Path
) -> None:
    result = pytester.runpytest("--acceptance", "specs", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    items = collected(result)
    per_file = {
        name: sum(i.startswith(f"specs/{name}::") for i in items) for name in EXAMPLE_COUNTS
    }
    assert per_file == EXAMPLE_COUNTS
    assert len(items) == sum(EXAMPLE_COUNTS.values())
    assert "specs/kiro/requirements.md::1.1" in items
    assert "specs/speckit/specs/001-csv-export/spec.md::US2-AC1" in items
    assert not any("README" in item for item in items)


def test_a_glob_collects_the_specs_it_matches(pytester: pytest.Pytester, examples: Path) -> None:
    result = pytester.runpytest("--acceptance", "specs/**/spec.md", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    files = {item.split("::")[0] for item in collected(result)}
    assert files == {
        "specs/speckit/specs/001-csv-export/spec.md",
        "specs/openspec/specs/auth/spec.md",
        "specs/openspec/changes/add-totp/specs/auth/spec.md",
    }


def test_a_glob_naming_files_collects_them_even_when_no_format_recognises_one(
    pytester: pytest.Pytester, examples: Path
) -> None:
    """``specs/**/spec.md`` names files: one made unrecognisable is an error, not skipped."""
    (examples / "gutted").mkdir()
    (examples / "gutted" / "spec.md").write_text("# Feature\n\nNothing to check any more.\n")
    result = pytester.runpytest("--acceptance", "specs/**/spec.md", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*specs/gutted/spec.md:1: no acceptance criteria found*"])


def test_the_header_names_the_markdown_files_a_directory_skipped(
    pytester: pytest.Pytester, examples: Path
) -> None:
    result = pytester.runpytest("--acceptance", "specs/kiro", "--acceptance", "specs", "--co")
    result.stdout.fnmatch_lines(
        ["acceptance: skipped 1 markdown file that is not a spec: specs/README.md"]
    )


def test_ini_acceptance_specs_is_what_a_bare_acceptance_collects(
    pytester: pytest.Pytester, examples: Path
) -> None:
    pytester.makeini("[pytest]\nacceptance_specs = specs/kiro/*.md specs/tasks\n")
    result = pytester.runpytest("--acceptance", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    assert len(collected(result)) == 2 + 6 + 4 + 3 + 6 + 4 + 8
    plain = pytester.runpytest("--collect-only", "-q")  # without --acceptance: inert
    assert not any(".md::" in line for line in plain.outlines)


@pytest.mark.parametrize(
    ("given", "message"),
    [("specs/bmad/nothing", "no such file or directory"), ("notes", "no markdown file below")],
)
def test_a_path_or_glob_naming_no_spec_is_a_usage_error(
    pytester: pytest.Pytester, examples: Path, given: str, message: str
) -> None:
    (pytester.path / "notes").mkdir()
    (pytester.path / "notes" / "README.md").write_text("# Notes\n\nJust notes.\n")
    result = pytester.runpytest("--acceptance", given, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_forced_format_reads_the_spec_its_way(pytester: pytest.Pytester, examples: Path) -> None:
    spec = "specs/speckit/specs/001-csv-export/spec.md"
    forced = pytester.runpytest(
        "--acceptance", spec, "--acceptance-format", "prose", "--collect-only", "-q"
    )
    assert "specs/speckit/specs/001-csv-export/spec.md::FR-001" in collected(forced)
    assert not any("US1-AC1" in item for item in collected(forced))  # prose has no stories
    pytester.makeini("[pytest]\nacceptance_format = acceptance\n")
    wrong = pytester.runpytest("--acceptance", spec, "--collect-only")
    assert wrong.ret == pytest.ExitCode.INTERRUPTED
    wrong.stdout.fnmatch_lines(["*spec.md:1: no acceptance criteria found*"])
    unknown = pytester.runpytest("--acceptance", spec, "--acceptance-format", "cucumber")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown format; use acceptance, manifest, spec-kit" in unknown.stderr.str()


PLUGIN_FORMAT = '''
    import re
    from pytest_acceptance.model import Criterion, Location, Method, Spec, SpecError

    class Checklist:
        """- [check] ID: command  -- one bash criterion per line."""
        name = "checklist"

        def detect(self, text):
            return 1.0 if text.startswith("CHECKLIST") else 0.0

        def parse(self, text, path):
            criteria = []
            for number, line in enumerate(text.splitlines(), 1):
                found = re.match(r"- \\[check\\] (\\S+): (.+)", line)
                if found:
                    criteria.append(Criterion(
                        id=found[1], title=found[2], method=Method.BASH,
                        location=Location(path, number), command=found[2]))
            if not criteria:
                raise SpecError(path, 1, "no checks")
            return Spec(path, tuple(criteria), "checklist")

    def pytest_acceptance_formats():
        return [Checklist()]
'''


def test_another_plugin_adds_a_format_through_the_hook(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(textwrap.dedent(PLUGIN_FORMAT))
    pytester.makefile(".md", checks="CHECKLIST\n\n- [check] CK-1: true\n- [check] CK-2: exit 3\n")
    result = pytester.runpytest("--acceptance", "checks.md", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*- CK-2: exit 3", "*Actual: exit code 3*"])
    listed = pytester.runpytest("--acceptance", "checks.md", "--collect-only", "-q")
    assert collected(listed) == ["checks.md::CK-1", "checks.md::CK-2"]


BOLD_FALSE = (
    "# Release\n\n**AC-4: Release notes mention the fix**\n\n"
    '```yaml\nmethod: bash\ncommand: "false"\n```\n'
)


def test_a_bold_criterion_with_a_failing_command_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=BOLD_FALSE)
    result = pytester.runpytest("--acceptance", "spec.md", "-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*AC-4: Release notes mention the fix*failed*"])


def test_all_problems_of_a_spec_are_one_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".md",
        spec=(
            "# Spec\n\n#### AC-1: no block\n\n#### AC-2: bad\n```yaml\nmethod: bsh\n```\n\n"
            '```yaml\nmethod: bash\ncommand: "true"\n```\n'
        ),
    )
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "spec.md:3: AC-1 has no verification block*",
            "spec.md:7: AC-2: unknown method*",
            "spec.md:10: a second verification block in AC-2*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_ticked_tasks_verify_command_runs_verbatim_and_its_failure_fails_the_task(
    pytester: pytest.Pytester,
) -> None:
    text = (EXAMPLES / "tasks" / "tasks.md").read_text().replace("- [ ] 1.2", "- [x] 1.2")
    (pytester.path / "tasks.md").write_text(text)
    script = pytester.path / "changelog.sh"
    script.write_text("#!/bin/sh\necho '## Features'\n")  # no "## Fixes": 1.2 fails
    script.chmod(0o755)
    result = pytester.runpytest(
        "tasks.md::1.2", "--acceptance", "tasks.md", "--acceptance-base", "HEAD"
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*1.2: Group entries by type*failed*", "*phantom completion: task 1.2 is ticked, but*"]
    )
    result.assert_outcomes(failed=1)


def test_a_kiro_spec_folder_is_judged_by_the_agent_on_xdist_workers(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """On xdist workers (-n 2; without -n agent-only specs run in one process), the
    workers find and read a folder of specs as the controller does: ids, prompts, verdict."""
    judge = Judge(tmp_path_factory.mktemp("judge"))
    judge.plan({"2.2": ["fail"]})
    pytester.makeini(f"[pytest]\nacceptance_agent_command = {judge.command}\nacceptance_wave = 2\n")
    shutil.copytree(EXAMPLES / "kiro", pytester.path / ".kiro" / "specs" / "reset")
    result = pytester.runpytest_subprocess("--acceptance", ".kiro/specs", "-n", "2")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*2 workers*"])
    result.stdout.fnmatch_lines(["### Failed (1)", "- 2.2: WHEN a link has been used once*"])
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    assert sorted(c["id"] for c in verdict["criteria"]) == sorted(
        ["1.1", "1.2", "1.3", "2.1", "2.2", "2.3", "Property-1", "Property-2"]
    )
    prompt = judge.prompt("2.2")
    assert 'with the message "This link has already been used"' in prompt
    assert "User story: As a user, I want the link to expire" in prompt
