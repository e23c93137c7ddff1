"""The places that need pytest's private names fail closed, with a clear message, on a
pytest without them (checked against pytest 9.2.0); the gate's bytecode for the criteria,
which caches pytest's rewritten plugins in pytest's own format, only gets slower.

A pytest without the names cannot be installed here: each case runs a real Python process
whose ``_pytest.config.findpaths`` has the name deleted before the code under test looks
it up (the attribute check of rootdir.py also gets an object lacking the attributes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import xdist.plugin as xdist_plugin
from _pytest.assertion import rewrite
from support.specs import bash, spec

from pytest_acceptance import gate_probe, rootdir

_WITHOUT = "import _pytest.config.findpaths as f; del f.{0}; "


def python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def pinned_config(tmp_path: Path, pyproject: str) -> tuple[Path, Path]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "pyproject.toml").write_text(pyproject)
    spec_file = tmp_path / "spec.md"
    spec_file.write_text(spec(bash("AC-1", "true")))
    return config, spec_file


PROBE = "import sys; from pytest_acceptance.gate_probe import main; sys.exit(main(sys.argv[1:]))"
SETTINGS = '[tool.pytest.ini_options]\nacceptance_timeout = "7"\n'


def test_the_probe_reads_the_pinned_settings_with_this_pytest(tmp_path: Path) -> None:
    """The reference: with pytest 9.2.0's reader the probe answers, settings included."""
    config, spec_file = pinned_config(tmp_path, SETTINGS)
    done = python(PROBE, "--config-dir", str(config), str(spec_file), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["settings"] == {"acceptance_timeout": "7"}
    assert [item["id"] for item in report["criteria"]] == ["AC-1"]


def test_a_pytest_without_the_config_reader_gives_no_report(tmp_path: Path) -> None:
    """No JSON on stdout (the gate then blocks: it never runs with settings it could not
    read), exit code 2, one line naming the missing name and the pytest it was checked with."""
    config, spec_file = pinned_config(tmp_path, SETTINGS)
    code = _WITHOUT.format("load_config_dict_from_file") + PROBE
    done = python(code, "--config-dir", str(config), str(spec_file), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert "Traceback" not in done.stderr
    assert "_pytest.config.findpaths.load_config_dict_from_file" in done.stderr
    assert f"checked against pytest {gate_probe.PRIVATE_API_CHECKED_WITH}" in done.stderr


def test_a_pinned_config_pytest_cannot_read_gives_no_report(tmp_path: Path) -> None:
    """A malformed pinned pyproject.toml: pytest's own error, named, instead of a traceback."""
    config, spec_file = pinned_config(tmp_path, "[tool.pytest.ini_options\n")
    done = python(PROBE, "--config-dir", str(config), str(spec_file), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert "Traceback" not in done.stderr
    assert "cannot read the pinned pyproject.toml" in done.stderr


RUN = "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"


# pytest 8.4's determine_setup takes no override_ini (and returns three values).
_OLD_SIGNATURE = (
    "import _pytest.config.findpaths as f; "
    "f.determine_setup = lambda *, inifile, args, rootdir_cmd_arg, invocation_dir: None; "
)


@pytest.mark.parametrize(
    ("where", "patch", "named"),
    [
        ("outside", _WITHOUT.format("determine_setup"), "_pytest.config.findpaths.determine_setup"),
        ("inside", _WITHOUT.format("determine_setup"), "_pytest.config.findpaths.determine_setup"),
        ("outside", _OLD_SIGNATURE, "determine_setup as pytest 9.2.0 has it"),
    ],
    ids=["missing-spec-outside", "missing-spec-inside", "another-signature"],
)
def test_a_pytest_without_determine_setup_stops_an_acceptance_run_with_a_usage_error(
    tmp_path: Path, where: str, patch: str, named: str
) -> None:
    """Exit code 4 and "ERROR: ..." naming what is missing and the checked pytest: no
    traceback, no criterion run, no verdict -- wherever the spec is (the check does not
    depend on whether the rootdir would have moved)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    spec_file = (tmp_path if where == "outside" else project) / "spec.md"
    spec_file.write_text(spec(bash("AC-1", "touch ran")))
    code = patch + RUN
    done = python(code, "--acceptance", str(spec_file), "-p", "no:cacheprovider", cwd=project)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "ERROR: pytest-acceptance cannot keep the rootdir" in done.stderr
    assert named in done.stderr
    assert f"checked against pytest {rootdir.PRIVATE_API_CHECKED_WITH}" in done.stderr
    assert not (project / "ran").exists() and not (project / ".acceptance").exists()


def test_a_pytest_without_determine_setup_still_runs_without_acceptance(tmp_path: Path) -> None:
    """Only an --acceptance run needs the private names: plain pytest is left alone."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    code = _WITHOUT.format("determine_setup") + RUN
    done = python(code, "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_config_without_the_private_attributes_is_a_usage_error() -> None:
    """A Config without the attributes rootdir.py replaces (a stand-in object: such a
    pytest cannot be installed here) is refused before anything is changed."""
    with pytest.raises(pytest.UsageError, match="lacks _rootpath, _inipath, _inicfg, _inicache"):
        rootdir.private_setup_api(SimpleNamespace())


def test_pytests_rewritten_plugins_are_cached_in_the_format_pytest_reads(tmp_path: Path) -> None:
    """The gate compiles an installed plugin as pytest rewrites it, with pytest's private
    helpers: a criterion's pytest finds it where it looks (the prefix path, its own name)
    and its own reader accepts it."""
    from pytest_acceptance.gate import gate_bytecode

    source = Path(xdist_plugin.__file__)
    target = tmp_path / "criteria-bytecode"
    target.mkdir()
    sources = gate_bytecode.Sources((), (str(source),))
    gate_bytecode.build_criteria(sys.executable, target, sources, {})
    cached = target / Path(*source.parts[1:-1]) / (source.name[:-3] + rewrite.PYC_TAIL)
    assert cached.is_file()
    assert rewrite._read_pyc(source, cached) is not None
