"""Where commands run is visible and settable: the verdict and the report name the folder,
a criterion's ``cwd:`` (relative to the spec's folder) moves its command, and a rootdir no
ini file chose, away from the spec's folder, is warned about before the run and in the
verdict (the false pass below)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.specs import bash, spec

# The spec asks for exit code 2 without a file; this program exits 3. From another folder,
# `python wordcount.py` cannot open the file, and Python's own error exits 2.
WORDCOUNT = (
    "import sys\n"
    "if len(sys.argv) < 2:\n"
    "    print('usage: wordcount.py FILE', file=sys.stderr)\n"
    "    sys.exit(3)\n"
)


def wordcount_project(pytester: pytest.Pytester, **more: object) -> Path:
    """A project without an ini file: wordcount.py and spec.md at its top, an empty sub/."""
    pytester.makepyfile(wordcount=WORDCOUNT)
    usage = bash("AC-1", "python wordcount.py", "usage error", pass_condition="exit code 2", **more)
    pytester.makefile(".md", spec=spec(usage))
    return pytester.mkdir("sub")


def test_the_false_pass_from_a_subfolder_is_warned_about_naming_both_folders(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hazard itself: run from sub/, the command cannot find its file and exits 2, which
    the condition accepts. Nothing can tell this pass from a real one, so both folders are
    named before the run and in the verdict."""
    sub = wordcount_project(pytester)
    monkeypatch.chdir(sub)
    result = pytester.runpytest("--acceptance", "../spec.md", "-p", "no:randomly")
    assert result.ret == 0  # the false pass
    warning = (
        f"no ini file chose the rootdir, so bash commands run in {sub} (where pytest started), "
        f"not in the spec's folder {pytester.path}: *"
    )
    result.stdout.fnmatch_lines([f"acceptance: WARNING: {warning}"])
    result.stdout.fnmatch_lines(
        ["## Verification Results", f"Commands ran in {sub} (the rootdir).", f"WARNING: {warning}"]
    )


def test_cwd_runs_the_command_in_the_spec_folder_and_the_criterion_fails_for_real(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = wordcount_project(pytester, cwd=".")
    monkeypatch.chdir(sub)
    result = pytester.runpytest("--acceptance", "../spec.md", "-p", "no:randomly")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"Commands ran in {pytester.path} (AC-1: cwd).",
            '  Actual: exit code 3; last output line: "usage: wordcount.py FILE"',
        ]
    )
    assert "WARNING" not in result.stdout.str()  # every bash criterion says where it runs
    report = next((sub / ".acceptance" / "specs").glob("*/report.md")).read_text()
    assert f"- Commands ran in: `{pytester.path}` (AC-1)" in report


def test_an_ini_file_choosing_the_rootdir_means_no_warning(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = wordcount_project(pytester)
    pytester.makeini("[pytest]\n")
    monkeypatch.chdir(sub)
    result = pytester.runpytest("--acceptance", "../spec.md", "-p", "no:randomly")
    assert result.ret == 1  # from the ini's folder, the command finds its file: exit 3
    assert "WARNING" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"Commands ran in {pytester.path} (the rootdir)."])


def test_file_conditions_and_output_paths_are_taken_from_the_cwd(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    tools = pytester.mkdir("specs").joinpath("tools")
    tools.mkdir()
    (tools / "made.txt").write_text("x\n")
    (tools / "broken.py").write_text("raise SystemExit('broken.py:1: no')\n")
    pytester.path.joinpath("specs", "spec.md").write_text(
        spec(
            bash("AC-1", "pwd", "made", cwd="tools", pass_condition="file made.txt exists"),
            bash("AC-2", "ls made.txt", "listed", cwd="tools", pass_condition="file exists"),
            bash("AC-3", "python broken.py", "points", cwd="tools", retries=0),
        )
    )
    result = pytester.runpytest("--acceptance", "specs/spec.md", "-p", "no:randomly")
    assert result.ret == 1
    verdict = json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())
    statuses = {c["id"]: c["status"] for c in verdict["criteria"]}
    assert statuses == {"AC-1": "passed", "AC-2": "passed", "AC-3": "failed"}
    result.stdout.fnmatch_lines(
        [f"Commands ran in {tools} (AC-1, AC-2, AC-3: cwd).", "  Location: specs/tools/broken.py:1"]
    )


def test_a_cwd_that_is_no_folder_is_an_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true", "x", cwd="missing")))
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == 11
    result.stdout.fnmatch_lines(
        [f"*AC-1 has cwd 'missing', but {pytester.path / 'missing'} is not a folder: cwd is "
         "relative to the spec's folder*"]
    )  # fmt: skip


def test_an_absolute_cwd_is_a_spec_error_at_its_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=spec(bash("AC-1", "true", "x", cwd="/tmp")))
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ['spec.md:*: AC-1: "cwd" must be a folder relative to the spec\'s folder*']
    )


def test_a_spec_copy_runs_its_commands_where_the_spec_it_stands_for_lives(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """The Claude Code gate verifies a pinned copy of the spec (--acceptance-spec-origin): a
    cwd: is taken from the project's spec folder, not from the copy's."""
    pytester.makeini("[pytest]\n")
    text = spec(bash("AC-1", "pwd", "here", cwd=".", pass_condition="file marker.txt exists"))
    specs = pytester.mkdir("specs")
    (specs / "spec.md").write_text(text)
    (specs / "marker.txt").write_text("only beside the project's spec\n")
    copy = tmp_path / "pinned" / "spec.md"
    copy.parent.mkdir()
    copy.write_text(text)
    origin = str(specs / "spec.md")
    result = pytester.runpytest("--acceptance", str(copy), "--acceptance-spec-origin", origin)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"Commands ran in {specs} (AC-1: cwd)."])
    assert pytester.runpytest("--acceptance", str(copy)).ret == 1  # the copy's own folder
    two = pytester.runpytest(
        "--acceptance", str(copy), "--acceptance", origin, "--acceptance-spec-origin", origin
    )
    assert two.ret == pytest.ExitCode.USAGE_ERROR
    two.stderr.fnmatch_lines(["*the run must have exactly one spec, it has 2"])


# --- never noisy in the ordinary layout, never silent in a nested project -------------------


@pytest.mark.parametrize("marker", [".git", "package.json"])
def test_the_ordinary_spec_kit_layout_runs_at_the_project_top_without_a_warning(
    pytester: pytest.Pytester, marker: str
) -> None:
    """specs/001-x/spec.md below the project's top, pytest started at the top, no ini: the
    commands run where they expect to, so nothing is said ("package.json": written after
    the fix, another project's top)."""
    (pytester.path / marker).mkdir() if marker == ".git" else pytester.makefile(
        ".json", package="{}"
    )
    pytester.makepyfile(wordcount=WORDCOUNT)
    folder = pytester.mkdir("specs") / "001-count"
    folder.mkdir()
    usage = bash("AC-1", "python wordcount.py", "usage", pass_condition="exit code 3")
    (folder / "spec.md").write_text(spec(usage))
    result = pytester.runpytest("--acceptance", "specs/001-count/spec.md", "-p", "no:randomly")
    assert result.ret == 0
    assert "WARNING" not in result.stdout.str()


@pytest.mark.parametrize(
    ("nested", "marker"), [("examples", "pyproject.toml"), ("app/specs", "package.json")]
)
def test_a_spec_of_a_nested_project_run_from_the_outer_ini_is_warned_about(
    pytester: pytest.Pytester, nested: str, marker: str
) -> None:
    """An ini file at the top chose the rootdir, but the spec lives in a project of its own
    below it (examples/pyproject.toml; after the fix: app/package.json with the spec in
    app/specs/): its commands run at the top, and the run says so, naming both."""
    pytester.makeini("[pytest]\n")
    folder = pytester.path / nested
    folder.mkdir(parents=True)
    home = folder if marker == "pyproject.toml" else folder.parent
    (home / marker).write_text("[project]\nname = 'x'\n" if marker == "pyproject.toml" else "{}")
    usage = bash("AC-1", "python wordcount.py", "usage", pass_condition="exit code 2")
    (folder / "spec.md").write_text(spec(usage))
    result = pytester.runpytest("--acceptance", f"{nested}/spec.md", "-p", "no:randomly")
    warning = (
        f"spec.md belongs to the project in {home} (its {marker}), but bash commands run in "
        f"the rootdir {pytester.path}: start pytest in {home}, or give the criteria a cwd: *"
    )
    result.stdout.fnmatch_lines([f"acceptance: WARNING: {warning}", f"WARNING: {warning}"])
