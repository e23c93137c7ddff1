"""The settings the gate pins are the honest run's effective ones: a configuration file's
``addopts`` read as pytest reads it (gate/pytest_addopts.py), checked against pytest's own
parse of the same file, and every addopts the gate could not reproduce refused with one
sentence naming the file, never a traceback."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_acceptance import gate_probe
from pytest_acceptance.gate import flow_state
from pytest_acceptance.gate.pytest_addopts import (
    APPLIED,
    IGNORED,
    AddoptsError,
    effective_settings,
)

SOURCE = "the project's pytest.ini"
# Every spelling argparse (pytest's parser) takes for -o.
OVERRIDE_SPELLINGS = [
    "-o acceptance_timeout=1",
    "-oacceptance_timeout=1",
    "-qo acceptance_timeout=1",
    "-vvoacceptance_timeout=1",
    "--override-ini=acceptance_timeout=1",
    "--override-ini acceptance_timeout=1",
    "-p no:cacheprovider -o acceptance_timeout=1 --cov src",
    "-o 'acceptance_timeout=1'",
    "-o acceptance_timeout=300 -o acceptance_timeout=1",  # the last one wins
]
# Options the gate's run cannot reproduce (another mode, another sign-offs file, internal
# channels, a scenario filter): refused at /implement.
REFUSED = frozenset(
    {
        "--acceptance-verdict-fd",
        "--acceptance-spec-origin",
        "--acceptance-sign-off",
        "--acceptance-merge",
        "--acceptance-signoffs",
        "--acceptance-bdd-feature",
        "--acceptance-bdd-scenario",
        "--acceptance-bdd-example",
    }
)


@pytest.mark.parametrize("addopts", OVERRIDE_SPELLINGS)
def test_every_spelling_of_an_override_is_applied(addopts: str) -> None:
    got = effective_settings({"acceptance_timeout": "300"}, addopts, SOURCE)
    assert got == {"acceptance_timeout": "1"}


def test_an_option_wins_over_an_override_which_wins_over_the_key() -> None:
    keys = {"acceptance_unticked": "list", "acceptance_retries": "3"}
    addopts = "--acceptance-unticked fail -o acceptance_unticked=list -o acceptance_retries=0"
    got = effective_settings(keys, addopts, SOURCE)
    assert got == {"acceptance_unticked": "fail", "acceptance_retries": "0"}


def test_what_addopts_gives_after_double_dash_or_for_other_plugins_is_not_applied() -> None:
    addopts = ["-p", "no:cov", "-o", "addopts=-x", "--", "-o", "acceptance_timeout=1"]
    assert effective_settings({}, addopts, SOURCE) == {}  # a TOML list: taken as words


@pytest.mark.parametrize(
    ("addopts", "named"),
    [
        ("-o 'acceptance_timeout=1", "cannot be split into words"),
        ("-o acceptance_timeout", "pytest expects -o key=value"),
        ("-o", "-o without its value"),
        ("--override-ini -x", "--override-ini without its value"),
        ("--acceptance-merge shard", "--acceptance-merge"),
        ("--acceptance-signoffs=other.yaml", "--acceptance-signoffs"),
        ("--acceptance-votes many", "--acceptance-votes 'many': not a number"),
        ("--acceptance-unticked never", "use one of list, fail"),
        ("--acceptance-cache=yes", "takes no value"),
        ("-Io acceptance_timeout=1", "cannot be read for sure"),
    ],
)
def test_an_addopts_the_gate_cannot_reproduce_is_one_sentence_naming_the_file(
    addopts: str, named: str
) -> None:
    with pytest.raises(AddoptsError) as refused:
        effective_settings({}, addopts, SOURCE)
    assert str(refused.value).startswith(f"{SOURCE}: ")
    assert named in str(refused.value)


@given(st.lists(st.text(max_size=12), max_size=8))
def test_any_words_are_read_or_refused_never_a_traceback(words: list[str]) -> None:
    for addopts in (words, " ".join(words)):
        with contextlib.suppress(AddoptsError):
            effective_settings({}, addopts, SOURCE)


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
def test_a_quoted_value_arrives_exactly(value: str) -> None:
    addopts = shlex.join(["-o", f"acceptance_model={value}"])
    assert effective_settings({}, addopts, SOURCE) == {"acceptance_model": value}


def test_every_acceptance_option_is_applied_ignored_or_refused(pytester: pytest.Pytester) -> None:
    """A new --acceptance-x option fails here until it is classified; every applied option
    stands for an ini key the plugin declares."""
    config = pytester.parseconfig("-p", "pytest_acceptance.spec.bdd_select")
    parser = config._parser
    known = {
        name
        for option in parser._anonymous.options + [o for g in parser._groups for o in g.options]
        for name in option.names()
        if name.startswith("--acceptance")
    }
    assert known == set(APPLIED) | IGNORED | REFUSED
    assert {key for key, _ in APPLIED.values()} <= set(parser._inidict)


# pytest's own reading of the same configuration, to compare the reader with.
OPTIONS = st.sampled_from(
    [
        ["-o", "acceptance_timeout=7"],
        ["-oacceptance_retries=0"],
        ["-qo", "acceptance_model=small one"],
        ["--override-ini=acceptance_unticked=fail"],
        ["--override-ini", "acceptance_timeout=9"],
        ["--acceptance-unticked", "list"],
        ["--acceptance-unticked=fail"],
        ["--acceptance-model", "big"],
        ["--acceptance-votes", "3"],
        ["-p", "no:cacheprovider"],
        ["-x"],
        ["-o", "acceptance_votes=2"],
    ]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(OPTIONS, max_size=5))
def test_the_reader_agrees_with_pytest(pytester: pytest.Pytester, chosen: list[list[str]]) -> None:
    words = [word for option in chosen for word in option]
    pytester.makeini(
        "[pytest]\nacceptance_timeout = 300\nacceptance_unticked = list\n"
        f"addopts = {shlex.join(words)}\n"
    )
    config = pytester.parseconfig()
    got = effective_settings(
        {"acceptance_timeout": "300", "acceptance_unticked": "list"}, shlex.join(words), SOURCE
    )
    for key, value in got.items():
        assert str(_effective(config, key)) == value, (key, words)


def _effective(config: pytest.Config, key: str) -> Any:
    option = config.getoption(key, None)
    if option is not None and option != "":
        return option
    raw = config._inicfg[key].value if key in config._inicfg else config.getini(key)
    return raw


def test_the_probe_refuses_a_malformed_addopts_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tox.ini").write_text("[pytest]\naddopts = -o 'acceptance_timeout=1\n")
    with pytest.raises(gate_probe.ProbeError) as refused:
        gate_probe.acceptance_settings(config)
    assert str(refused.value).startswith("the project's tox.ini: addopts cannot be split")


def test_the_probe_pins_what_addopts_overrides_but_never_the_agent_cache(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nacceptance_timeout = "300"\n'
        'addopts = "--override-ini=acceptance_timeout=1 -o acceptance_cache=true"\n'
    )
    assert gate_probe.acceptance_settings(config) == {"acceptance_timeout": "1"}


def test_the_pin_reads_a_config_through_its_link_and_never_opens_a_fifo_or_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest follows a linked configuration file, so the pin holds its target's bytes; a
    FIFO or a device is no file to pytest, and the pin neither blocks on it nor copies it."""
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "data"))
    repo = tmp_path / "repo"
    (repo / "config").mkdir(parents=True)
    (repo / "config" / "pytest.ini").write_text("[pytest]\nacceptance_timeout = 1\n")
    (repo / "pytest.ini").symlink_to("config/pytest.ini")
    os.mkfifo(repo / "tox.ini")
    (repo / "setup.cfg").symlink_to("/dev/zero")
    (repo / "pyproject.toml").symlink_to("missing.toml")
    flow = flow_state.start("settings-pin", {}, None, repo)
    pinned = sorted(path.name for path in flow.config_folder.iterdir())
    assert pinned == ["pytest.ini"]
    assert (flow.config_folder / "pytest.ini").read_text() == "[pytest]\nacceptance_timeout = 1\n"
    assert gate_probe.acceptance_settings(flow.config_folder) == {"acceptance_timeout": "1"}
