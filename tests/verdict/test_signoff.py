"""A person signs off a manual criterion: the record (who, when, a note, the sha256 of the
criterion's text) lives in a committed file; the verdict then counts the criterion as
passed and says "signed off by … on …" everywhere it reports (terminal, verdict.json,
report.md, HTML, JUnit, step summary); editing the criterion voids the sign-off."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.specs import bash, manual, spec

from pytest_acceptance.gate import flow_state, protect
from pytest_acceptance.model import Criterion
from pytest_acceptance.verdict import signoff

SPEC = spec(bash("AC-1", "true", "works"), manual("AC-2", "reads well", checks=["friendly"]))


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person at a terminal, not a Claude Code tool call."""
    monkeypatch.delenv("CLAUDECODE", raising=False)


def sign_off(pytester: pytest.Pytester, *args: str, spec_name: str = "spec.md") -> pytest.RunResult:
    return pytester.runpytest("--acceptance", spec_name, *args)


def verdict(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / ".acceptance" / "verdict.json").read_text())


@pytest.mark.usefixtures("person")
def test_a_signed_off_manual_criterion_passes_and_every_output_says_by_whom(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".md", spec=SPEC)
    waiting = pytester.runpytest("--acceptance", "spec.md")
    assert waiting.ret == 10
    (pytester.path / ".acceptance" / "verdict.json").unlink()
    waiting.stdout.fnmatch_lines(
        ["*then record each check by adding --acceptance-sign-off AC-2 --acceptance-by "
         "'Your Name' to this pytest command*"]
    )  # fmt: skip
    signed = sign_off(
        pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada", "--acceptance-note",
        "read it aloud",
    )  # fmt: skip
    assert signed.ret == 0
    signed.stdout.fnmatch_lines(
        ["acceptance: AC-2 of spec.md signed off by Ada on *, in acceptance-signoffs.yaml: "
         "commit it with the change"]
    )  # fmt: skip
    assert not (pytester.path / ".acceptance" / "verdict.json").exists()  # nothing ran

    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest(
        "--acceptance", "spec.md", "--junitxml", "j.xml", "--acceptance-html", "r.html"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["- AC-2: reads well ✓ (signed off by Ada on 20*)", "All 2 criteria pass: verified.*"]
    )
    (entry,) = [c for c in verdict(pytester)["criteria"] if c["id"] == "AC-2"]
    assert entry["status"] == "passed" and entry["sign_off"] == "signed off"
    assert (entry["signed_off_by"], entry["sign_off_note"]) == ("Ada", "read it aloud")
    assert entry["message"].startswith("signed off by Ada on 20")
    report = next((pytester.path / ".acceptance" / "specs").glob("*/report.md")).read_text()
    assert "## Sign-offs\n\n- AC-2: signed off by Ada on 20" in report
    assert "signed off by Ada on 20" in (pytester.path / "r.html").read_text()
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None  # xunit2: the sign-off is a testsuite property
    signed = [p.get("value", "") for p in suite.iter("property") if p.get("name") == "sign_off"]
    assert [value[:32] for value in signed] == ["spec.md::AC-2: signed off by Ada"]
    assert "#### Signed off by a person (1)" in summary.read_text()


@pytest.mark.usefixtures("person")
def test_editing_the_criterion_voids_its_sign_off(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=SPEC)
    assert sign_off(pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada").ret == 0
    pytester.makefile(".md", spec=SPEC.replace("friendly", "warm"))
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == 10
    result.stdout.fnmatch_lines(
        ["- AC-2: reads well", "  Sign-off: by Ada on 20*, void: the criterion changed since; "
         "check it again and sign it off again"]
    )  # fmt: skip
    (entry,) = [c for c in verdict(pytester)["criteria"] if c["id"] == "AC-2"]
    assert (entry["status"], entry["sign_off"]) == ("manual", "void")
    report = next((pytester.path / ".acceptance" / "specs").glob("*/report.md")).read_text()
    assert "- AC-2: void (by Ada on 20" in report


@pytest.mark.usefixtures("person")
def test_moving_the_criterion_keeps_its_sign_off(pytester: pytest.Pytester) -> None:
    """Its line and category are where it sits, not what a person checked."""
    pytester.makefile(".md", spec=SPEC)
    assert sign_off(pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada").ret == 0
    moved = spec(manual("AC-2", "reads well", checks=["friendly"]), bash("AC-1", "true", "works"))
    pytester.makefile(".md", spec="Intro.\n\n" + moved.replace("Category: Core", "Category: UX"))
    assert pytester.runpytest("--acceptance", "spec.md").ret == 0


@pytest.mark.usefixtures("person")
def test_a_sign_off_binds_to_its_spec(pytester: pytest.Pytester) -> None:
    """The same criterion, word for word, in another spec is another person's check."""
    pytester.makefile(".md", spec=SPEC, other=SPEC)
    assert sign_off(pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada").ret == 0
    assert pytester.runpytest("--acceptance", "spec.md").ret == 0
    assert pytester.runpytest("--acceptance", "other.md").ret == 10
    both = pytester.runpytest(
        "--acceptance", "spec.md", "--acceptance", "other.md", "--acceptance-sign-off", "AC-2",
        "--acceptance-by", "Ada",
    )  # fmt: skip
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(
        ["*--acceptance-sign-off AC-2: name one of spec.md::AC-2, other.md::AC-2"]
    )
    named = sign_off(
        pytester, "--acceptance", "other.md", "--acceptance-sign-off", "other.md::AC-2",
        "--acceptance-by", "Bo",
    )  # fmt: skip
    assert named.ret == 0, named.stderr.str()
    assert pytester.runpytest("--acceptance", "other.md").ret == 0


@pytest.mark.usefixtures("person")
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--acceptance-sign-off", "AC-1", "--acceptance-by", "A"], "*AC-1 is a bash criterion;*"),
        (["--acceptance-sign-off", "AC-9", "--acceptance-by", "A"], "*AC-9: no such criterion*"),
    ],
)
def test_only_a_manual_criterion_of_the_spec_is_signed_off(
    pytester: pytest.Pytester, args: list[str], said: str
) -> None:
    pytester.makefile(".md", spec=SPEC)
    result = sign_off(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([said])
    assert not (pytester.path / signoff.SIGNOFF_FILE).exists()


def test_an_agent_cannot_sign_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a Claude Code session (CLAUDECODE=1 in its tools' environment) it is refused."""
    monkeypatch.setenv("CLAUDECODE", "1")
    pytester.makefile(".md", spec=SPEC)
    result = sign_off(pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Claude")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*records a person's check: run it yourself in a terminal*"])
    assert not (pytester.path / signoff.SIGNOFF_FILE).exists()


@pytest.mark.usefixtures("person")
def test_who_defaults_to_git_and_is_required(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=SPEC)
    nobody = sign_off(pytester, "--acceptance-sign-off", "AC-2")
    assert nobody.ret == pytest.ExitCode.USAGE_ERROR
    nobody.stderr.fnmatch_lines(["*needs who signs off: --acceptance-by 'Your Name'*"])
    pytester.run("git", "init", "-q")
    pytester.run("git", "config", "user.name", "Grace Hopper")
    pytester.run("git", "config", "user.email", "grace@example.org")
    assert sign_off(pytester, "--acceptance-sign-off", "AC-2").ret == 0
    assert (
        "by: Grace Hopper <grace@example.org>" in (pytester.path / signoff.SIGNOFF_FILE).read_text()
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("signoffs: [\n", "*acceptance-signoffs.yaml:*: malformed YAML*"),
        ("signoff: []\n", '*acceptance-signoffs.yaml:1: write one key, "signoffs:"*'),
        (
            "signoffs:\n- criterion: AC-2\n  spec: spec.md\n  sha256: abc\n  by: A\n  at: x\n",
            '*acceptance-signoffs.yaml:2: "sha256" must be 64 lower-case hex digits',
        ),
        (
            "signoffs:\n- criterion: AC-2\n  who: A\n",
            "*acceptance-signoffs.yaml:2: unknown key 'who'*",
        ),
    ],
)
def test_a_broken_sign_offs_file_is_a_usage_error_at_its_line(
    pytester: pytest.Pytester, content: str, said: str
) -> None:
    pytester.makefile(".md", spec=SPEC)
    (pytester.path / signoff.SIGNOFF_FILE).write_text(content)
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: sign-offs {said}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.usefixtures("person")
def test_another_sign_offs_file_can_be_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".md", spec=SPEC)
    named = ("--acceptance-signoffs", "team/signoffs.yaml")
    pytester.mkdir("team")
    assert (
        sign_off(pytester, *named, "--acceptance-sign-off", "AC-2", "--acceptance-by", "A").ret == 0
    )
    assert (pytester.path / "team" / "signoffs.yaml").is_file()
    assert pytester.runpytest("--acceptance", "spec.md").ret == 10  # the default file: none
    assert pytester.runpytest("--acceptance", "spec.md", *named).ret == 0


def test_every_criterion_field_is_sorted_into_what_a_sign_off_binds_or_not() -> None:
    """A new Criterion field must be decided: does editing it void a person's check?"""
    fields = {field.name for field in dataclasses.fields(Criterion)}
    assert set(signoff.DEFINING_FIELDS) | set(signoff.NOT_DEFINING_FIELDS) == fields
    assert not set(signoff.DEFINING_FIELDS) & set(signoff.NOT_DEFINING_FIELDS)


def test_the_plugin_and_the_hooks_name_the_same_file_and_an_agent_may_not_write_it(
    tmp_path: Path,
) -> None:
    assert flow_state.SIGNOFF_FILE == signoff.SIGNOFF_FILE
    protected = protect.protected_set(None, tmp_path / "plugin", None, None, tmp_path)
    why = protected.why(tmp_path / "project" / signoff.SIGNOFF_FILE)
    assert why is not None and "sign-offs" in why
    command = f"echo x >> {tmp_path / 'project' / signoff.SIGNOFF_FILE}"
    assert protect.bash_violations(command, tmp_path, protected)


@pytest.mark.usefixtures("person")
def test_the_delta_line_says_signed_off_and_sign_off_void(pytester: pytest.Pytester) -> None:
    """Since the previous report: a sign-off made is "signed off", never "new"; one voided
    by an edit is "sign-off void", never "no change"."""
    pytester.makefile(".md", spec=SPEC)
    assert pytester.runpytest("--acceptance", "spec.md").ret == 10  # the baseline: manual
    assert sign_off(pytester, "--acceptance-sign-off", "AC-2", "--acceptance-by", "Ada").ret == 0
    signed = pytester.runpytest("--acceptance", "spec.md")
    assert signed.ret == 0
    signed.stdout.fnmatch_lines(["  since the previous report: signed off 1 (AC-2)"])
    pytester.makefile(".md", spec=SPEC.replace("friendly", "warm"))
    voided = pytester.runpytest("--acceptance", "spec.md")
    assert voided.ret == 10
    voided.stdout.fnmatch_lines(["  since the previous report: sign-off void 1 (AC-2)"])
