"""Every acceptance_* ini key takes native TOML types in pytest 9's [tool.pytest] table and
strings in [tool.pytest.ini_options] or pytest.ini; a bad value is a one-line usage error
(exit 4), never an error inside every criterion."""

from __future__ import annotations

import pytest
from support.specs import bash, spec

NATIVE = "[tool.pytest]\n"  # pytest >= 9: TOML types
STRINGS = "[tool.pytest.ini_options]\n"  # every pytest: strings
pytestmark = pytest.mark.skipif(
    int(pytest.__version__.split(".")[0]) < 9, reason="[tool.pytest] is pytest 9's format"
)

TIMED = spec(bash("AC-1", "true", "quick"), bash("AC-2", "sleep 5", "slow"))


def write_config(pytester: pytest.Pytester, table: str, lines: str) -> None:
    pytester.makepyprojecttoml(table + lines)


@pytest.mark.parametrize(
    ("table", "lines"),
    [
        (
            NATIVE,
            "acceptance_timeout = 1\nacceptance_retries = 0\nacceptance_wave = 2\n"
            "acceptance_cache = false\nacceptance_progress_interval = 0\n"
            'acceptance_agent = "none"\nacceptance_model = "sonnet"\n',
        ),
        (NATIVE, "acceptance_timeout = 1.0\nacceptance_retries = 0\n"),
        (
            STRINGS,
            'acceptance_timeout = "1"\nacceptance_retries = "0"\nacceptance_wave = "2"\n'
            'acceptance_cache = "false"\nacceptance_progress_interval = "0"\n',
        ),
    ],
    ids=["native-int", "native-float", "strings"],
)
def test_ini_values_apply_in_native_and_string_form(
    pytester: pytest.Pytester, table: str, lines: str
) -> None:
    """A timeout of 1 s and no retries, read from either form, end the slow criterion."""
    write_config(pytester, table, lines)
    pytester.makefile(".md", spec=TIMED)
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(["*Actual: timed out after 1 s*"])
    assert "all 2 attempts" not in result.stdout.str()  # retries = 0 was read too
    assert result.ret == 1


def test_pytest_ini_strings_work(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nacceptance_timeout = 1\nacceptance_retries = 0\n")
    pytester.makefile(".md", spec=TIMED)
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(["*Actual: timed out after 1 s*"])


@pytest.mark.parametrize(
    ("write", "lines"),
    [
        ("ini", 'acceptance_timeout = "1 s"\nacceptance_progress_interval = 2 min\n'),
        ("ini", "acceptance_timeout = 1sec\n"),
        (NATIVE, 'acceptance_timeout = "1 s"\nacceptance_progress_interval = "0s"\n'),
        (STRINGS, 'acceptance_timeout = "1 second"\nacceptance_progress_interval = "1h"\n'),
    ],
    ids=["pytest.ini-quoted", "pytest.ini-bare", "native-string", "strings"],
)
def test_ini_durations_take_the_units_of_a_spec_timeout(
    pytester: pytest.Pytester, write: str, lines: str
) -> None:
    """A spec's `timeout: 10 minutes` and ini `acceptance_timeout = "2 min"` read the same
    units; a pytest.ini keeps quotes in the value, which are dropped."""
    if write == "ini":
        pytester.makeini("[pytest]\nacceptance_retries = 0\n" + lines)
    else:
        write_config(pytester, write, "acceptance_retries = 0\n" + lines)
    pytester.makefile(".md", spec=TIMED)
    result = pytester.runpytest("--acceptance", "spec.md")
    result.stdout.fnmatch_lines(["*Actual: timed out after 1 s*"])
    assert result.ret == 1


@pytest.mark.parametrize(
    ("table", "line", "key"),
    [
        (NATIVE, 'acceptance_timeout = "abc"', "acceptance_timeout"),
        (NATIVE, "acceptance_timeout = 0", "acceptance_timeout"),
        (NATIVE, "acceptance_timeout = true", "acceptance_timeout"),
        (NATIVE, "acceptance_timeout = nan", "acceptance_timeout"),
        (NATIVE, "acceptance_retries = -1", "acceptance_retries"),
        (NATIVE, "acceptance_retries = 1.5", "acceptance_retries"),
        (NATIVE, "acceptance_wave = 0", "acceptance_wave"),
        (NATIVE, "acceptance_progress_interval = -5", "acceptance_progress_interval"),
        (STRINGS, 'acceptance_timeout = "5 fortnights"', "acceptance_timeout"),
        (NATIVE, 'acceptance_progress_interval = "soon"', "acceptance_progress_interval"),
        (STRINGS, 'acceptance_retries = "1.5"', "acceptance_retries"),
        (STRINGS, 'acceptance_wave = "many"', "acceptance_wave"),
    ],
)
def test_a_bad_value_is_a_one_line_usage_error(
    pytester: pytest.Pytester, table: str, line: str, key: str
) -> None:
    write_config(pytester, table, line + "\n")
    pytester.makefile(".md", spec=TIMED)
    result = pytester.runpytest("--acceptance", "spec.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [text for text in result.stderr.lines if text.strip()]
    assert len(errors) == 1 and f"ini {key}" in errors[0], result.stderr.lines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
