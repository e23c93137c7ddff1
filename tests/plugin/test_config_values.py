"""Every value that reaches the plugin is validated: any value of any ``acceptance_*`` ini
key, in ini text (``-o key=value``) or as a native TOML value, ends in a run or a one-line
usage error naming the key, never a traceback or INTERNALERROR; so do durations such as
``1e309``, and spec paths that are symbolic-link loops, devices or FIFOs.

The property tests run pytest in-process with pytester, one run per example, a few dozen
examples each (a run is a tenth of a second).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from support.specs import bash, spec

PASSING = spec(bash("AC-1", "true"))
HELP_INI = re.compile(r"^  (acceptance_[a-z_]+) \(", re.MULTILINE)
DURATIONS = ("acceptance_timeout", "acceptance_progress_interval", "acceptance_lock_timeout")
EXAMPLES = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@cache
def ini_keys() -> tuple[str, ...]:
    """Every ini key the plugin registers, as ``pytest --help`` lists them."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=True,
    )
    return tuple(sorted(set(HELP_INI.findall(done.stdout))))


def test_the_keys_under_test_are_all_of_them() -> None:
    assert {"acceptance_timeout", "acceptance_specs", "acceptance_lock_timeout"} <= set(ini_keys())
    assert len(ini_keys()) >= 11


def assert_run_or_usage_error(result: pytest.RunResult, key: str) -> None:
    """A run (its criterion passes, fails or errs), a one-line usage error naming the key, or
    a collection error naming the spec's line (a format forced on a spec of another)."""
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    if result.ret == pytest.ExitCode.USAGE_ERROR:
        errors = [line for line in result.stderr.lines if line.strip()]
        assert len(errors) == 1 and key in errors[0], errors
    elif result.ret == pytest.ExitCode.INTERRUPTED:
        assert key == "acceptance_format", output
        assert re.search(r"^spec\.md:\d+: ", output, re.MULTILINE), output
        assert "error during collection" in output, output
    else:
        assert result.ret in (0, 1, 10, 11), output


def run_with(pytester: pytest.Pytester, key: str, *options: str) -> pytest.RunResult:
    """``--acceptance spec.md``, or ``--acceptance`` alone for the key that names specs."""
    specs = ["--acceptance"] if key == "acceptance_specs" else ["--acceptance", "spec.md"]
    return pytester.runpytest(*specs, "-p", "no:randomly", "-p", "no:cacheprovider", *options)


def harmless(key: str, value: str) -> bool:
    """Spec globs stay inside the project: ``..`` or ``/`` could walk the whole disk."""
    return key != "acceptance_specs" or ("/" not in value and ".." not in value)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".md", spec=PASSING)
    return pytester


TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)


@EXAMPLES
@given(key=st.sampled_from(ini_keys()), value=TEXT)
@example(key="acceptance_timeout", value="1e309")
@example(key="acceptance_retries", value="1e309")
@example(key="acceptance_lock_timeout", value="-0")
@example(key="acceptance_specs", value='"')
@example(key="acceptance_wave", value="99999999999999999999999")
@example(key="acceptance_progress_interval", value="1e300")
@example(key="acceptance_format", value="KIRO")
def test_any_ini_text_is_a_run_or_a_one_line_usage_error(
    project: pytest.Pytester, key: str, value: str
) -> None:
    assume(harmless(key, value))
    assert_run_or_usage_error(run_with(project, key, "-o", f"{key}={value}"), key)


# Native TOML values, as pytest 9's [tool.pytest] table gives them.
SCALARS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),  # inf, -inf and nan included
    st.booleans(),
    TEXT,
)
TOML_VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3))


def toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):  # a basic string, in ASCII: the rest as \UXXXXXXXX escapes
        escaped = (c if " " <= c <= "~" and c not in '"\\' else f"\\U{ord(c):08x}" for c in value)
        return '"' + "".join(escaped) + '"'
    assert isinstance(value, list)
    return "[" + ", ".join(toml(item) for item in value) + "]"


@EXAMPLES
@given(key=st.sampled_from(ini_keys()), value=TOML_VALUES)
@example(key="acceptance_timeout", value=1e308 * 10)
@example(key="acceptance_retries", value=1e308 * 10)
@example(key="acceptance_wave", value=2**63 - 1)
@example(key="acceptance_cache", value=[])
def test_any_native_toml_value_is_a_run_or_a_one_line_usage_error(
    project: pytest.Pytester, key: str, value: object
) -> None:
    assume(harmless(key, str(value)))
    project.makepyprojecttoml(f"[tool.pytest]\n{key} = {toml(value)}\n")
    assert_run_or_usage_error(run_with(project, key), key)


@pytest.mark.parametrize("key", DURATIONS)
@pytest.mark.parametrize("value", ["1e309", "inf", "nan", "-1", "5 parsecs", "0x10", ""])
def test_a_duration_that_is_not_a_finite_number_of_seconds_is_refused(
    project: pytest.Pytester, key: str, value: str
) -> None:
    result = run_with(project, key, "-o", f"{key}={value}")
    assert_run_or_usage_error(result, key)
    if value != "":  # an empty value is the default
        assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("key", DURATIONS)
def test_a_huge_finite_duration_runs_or_is_refused_never_overflows(
    project: pytest.Pytester, key: str
) -> None:
    """1e308 s: the criterion timeout is bounded as a spec's is (a week), so no time API
    overflows; the other durations only ever compare with it."""
    result = run_with(project, key, "-o", f"{key}=1e308")
    assert_run_or_usage_error(result, key)
    wanted = pytest.ExitCode.USAGE_ERROR if key == "acceptance_timeout" else pytest.ExitCode.OK
    assert result.ret == wanted, result.stdout.str()


# --- spec paths that are not files ---------------------------------------------------------


def loop(directory: Path, name: str) -> str:
    (directory / name).symlink_to(name)
    return name


def fifo(directory: Path, name: str) -> str:
    os.mkfifo(directory / name)
    return name


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda d: loop(d, "loop.md"), "a symbolic link that leads nowhere (or in a loop)"),
        (lambda d: "/dev/null", "not a regular file or a directory"),
        (lambda d: fifo(d, "fifo.md"), "not a regular file or a directory"),
        (lambda d: (loop(d, "a.md"), "*.md")[1], "matches no spec a format recognises"),
    ],
    ids=["symlink loop", "device", "fifo", "glob of a loop"],
)
def test_a_spec_path_that_is_no_file_is_a_one_line_usage_error(
    pytester: pytest.Pytester, make: object, error: str
) -> None:
    name = make(pytester.path)  # type: ignore[operator]
    result = pytester.runpytest("--acceptance", name)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [f"ERROR: --acceptance {name}: {error}"]


def test_loops_and_fifos_beside_a_spec_are_skipped_and_named(pytester: pytest.Pytester) -> None:
    """A directory holding a link loop and a FIFO named like specs: the FIFO is never
    opened (the run would hang), both are named in the header, the real spec runs."""
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "spec.md").write_text(PASSING)
    loop(pytester.path / "specs", "loop.md")
    fifo(pytester.path / "specs", "fifo.md")
    result = pytester.runpytest("--acceptance", "specs")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["acceptance: skipped 2 markdown files that are not specs: *"])


def test_a_path_argument_that_is_a_loop_beside_the_spec_is_no_internal_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".md", spec=PASSING)
    loop(pytester.path, "loop.py")
    result = pytester.runpytest("--acceptance", "spec.md", "loop.py")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # pytest's own: file or directory not found
