"""What each test of the attack catalogue (tests/hooks/attacks/) is, recorded on the test so
that the JUnit file of any run carries it and the gate benchmark (bench/gate_benchmark.py)
can count false dones and false blocks from that file alone.

Each test gets five JUnit properties (``PROPERTIES``): its class (the file), its kind
(an attack; an honest control, whose end must be let through; or a check of the closing
mechanism that is neither), the agent it drives (Claude Code, Codex or Gemini CLI through
the real CLI, or none: the gate's hooks fed directly), the isolation level of the gate's run
it ran at, and the outcome it expects. A test that cannot be classified fails, naming its file and
line, so the figures never silently leave one out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

# The JUnit property names, one per field of Classification.
CLASS, KIND, AGENT, LEVEL, LEVEL_SET_BY, EXPECTED = (
    "catalogue_class",
    "catalogue_kind",
    "catalogue_agent",
    "catalogue_level",
    "catalogue_level_set_by",
    "catalogue_expected",
)
PROPERTIES = (CLASS, KIND, AGENT, LEVEL, LEVEL_SET_BY, EXPECTED)

ATTACK, CONTROL, CHECK = "attack", "control", "check"
KINDS = (ATTACK, CONTROL, CHECK)
CLAUDE_CODE, CODEX, GEMINI, COPILOT = "claude-code", "codex", "gemini-cli", "copilot-cli"
HOOK_LEVEL = "hook-level"
AGENTS = (CLAUDE_CODE, CODEX, GEMINI, COPILOT, HOOK_LEVEL)
# pytest_acceptance/gate/isolation.py, strongest first
LEVELS = ("full", "view", "pid", "none")
BY_PARAMETER, BY_MACHINE = "parameter", "machine"
# Expected ends: the gate refuses the attack's "done"; the session ends on an escalation
# that a failing run backs (never a "done"); the attack gets through a documented open
# route (a strict xfail); the honest control is let through; the check holds.
REFUSED, ESCALATED, THROUGH, DONE, HOLDS = "refused", "escalated", "through", "done", "holds"
EXPECTED_FOR = {ATTACK: (REFUSED, ESCALATED, THROUGH), CONTROL: (DONE, ESCALATED), CHECK: (HOLDS,)}

ROUTE_OPEN = "route open: "  # how every open route's strict xfail reason begins
CONTROL_WORDS = ("honest", "control")

# Honest controls whose names do not say so.
CONTROLS = frozenset(
    {
        "test_a_trusted_installation_refuses_nothing",
        "test_the_real_verdict_shape_is_accepted",
        "test_a_new_allow_rule_is_the_users_own_and_goes_through",
        "test_a_file_odd_since_before_the_flow_is_let_be_while_unchanged",
        "test_the_open_flow_is_finished_as_usual_after_a_refused_implement",
        "test_done_runs_afresh_and_only_the_stop_right_after_it_reuses_its_run",
        "test_the_criterias_pytest_reads_checked_hash_bytecode_the_gate_compiled_once",
        "test_the_hook_refuses_an_event_it_cannot_read_during_a_flow[skills-False]",
        "test_a_criterion_that_does_not_run_pytest_is_not_witnessed",
    }
)
# Tests that pin a fact the closing mechanism stands on (what the CLI reads or obeys, what
# the guard parses, the lock's behaviour) with no attack run and no honest flow.
CHECKS = frozenset(
    {
        "test_an_untrusted_hook_is_told_to_the_model_outside_a_flow",
        "test_the_installer_check_reports_untrusted_hooks",
        "test_the_gates_names_are_among_those_no_new_module_may_take",
        "test_the_snapshot_covers_the_config_dir_the_cli_reads",
        "test_every_settings_and_plugin_file_the_cli_reads_is_protected",
        "test_the_guard_reads_a_plain_file_as_the_cli_does",
        "test_every_odd_form_is_unreadable_to_the_guard",
        "test_any_bytes_are_read_exactly_or_refused",
        "test_a_fifo_or_a_folder_is_unreadable_and_never_blocks",
        "test_a_second_run_waits_for_the_first_then_reads_what_it_left",
        "test_a_run_that_cannot_get_the_lock_in_time_says_who_holds_it",
        "test_a_lock_left_by_a_killed_holder_never_wedges_the_gate",
        "test_only_a_json_true_disables_all_hooks",
        "test_disable_all_hooks_in_an_odd_settings_file_is_obeyed_as_recorded",
        "test_the_hooks_run_isolated_from_python_environment_variables",
        "test_every_place_pytest_loads_a_deciding_hook_from_is_named",
        "test_plugins_named_however_they_are_given_are_followed_or_named",
        "test_a_criterion_run_otherwise_than_pinned_is_refused_naming_it",
    }
)
# Tests whose expected end is an escalation that stands (backed by a failing run).
ESCALATIONS = frozenset(
    {
        "test_honest_escalation_after_a_real_failing_run_may_stop",
        "test_an_escalate_written_into_the_transcript_is_not_accepted_on_an_earlier_run",
        "test_without_an_interpreter_at_implement_done_is_refused_and_escalate_is_the_way_out",
    }
)
# The fixtures a test drives a real agent CLI with (tests/conftest.py, tests/hooks/conftest.py):
# the Claude Code CLI or its scripted Messages API, the Codex, Gemini and Copilot CLIs.
AGENT_FIXTURES = {
    "claude_bin": CLAUDE_CODE,
    "messages_api": CLAUDE_CODE,
    "codex_bin": CODEX,
    "gemini_bin": GEMINI,
    "copilot_bin": COPILOT,
}


@dataclass(frozen=True)
class Classification:
    klass: str
    kind: str
    agent: str
    level: str
    level_set_by: str
    expected: str

    def properties(self) -> list[tuple[str, str]]:
        values = (self.klass, self.kind, self.agent, self.level, self.level_set_by)
        return list(zip(PROPERTIES, (*values, self.expected), strict=True))


class Unclassifiable(Exception):
    """Why a test of the catalogue cannot be classified."""


_REFUSAL = pytest.StashKey[str]()


@functools.cache
def machine_level() -> str:
    """The level the gate's run gets on this machine (probed as a hook does)."""
    from pytest_acceptance.gate import isolation

    return isolation.current().name


def class_of(path: Path) -> str:
    """The attack class a catalogue file holds: its name without `test_`."""
    return path.stem.removeprefix("test_")


def names_of(item: pytest.Item) -> tuple[str, str]:
    """The test's function name and its name with the parameters' ids."""
    return getattr(item, "originalname", item.name), item.name


def kind_of(item: pytest.Item) -> str:
    function, full = names_of(item)
    control = function in CONTROLS or full in CONTROLS
    control = control or any(word in function for word in CONTROL_WORDS)
    check = function in CHECKS or full in CHECKS
    if control and check:
        raise Unclassifiable(f"{function} is both an honest control and a check")
    return CONTROL if control else CHECK if check else ATTACK


def agent_of(item: pytest.Item) -> str:
    fixtures = set(getattr(item, "fixturenames", ()))
    agents = {agent for fixture, agent in AGENT_FIXTURES.items() if fixture in fixtures}
    if len(agents) > 1:
        raise Unclassifiable(f"it starts both agents' CLIs ({', '.join(sorted(agents))})")
    if agents:
        return agents.pop()
    if item.get_closest_marker("e2e") is not None:
        raise Unclassifiable(
            "it is marked e2e but uses no agent CLI fixture (" + ", ".join(AGENT_FIXTURES) + ")"
        )
    return HOOK_LEVEL


def level_of(item: pytest.Item) -> tuple[str, str]:
    callspec = getattr(item, "callspec", None)
    if callspec is None or "isolation_level" not in callspec.params:
        return machine_level(), BY_MACHINE
    level = str(callspec.params["isolation_level"])
    if level not in LEVELS:
        raise Unclassifiable(f"isolation level {level!r} is none of {', '.join(LEVELS)}")
    return level, BY_PARAMETER


def expected_of(item: pytest.Item, kind: str) -> str:
    function, full = names_of(item)
    xfails = list(item.iter_markers("xfail"))
    if xfails:
        reason = str(xfails[0].kwargs.get("reason", ""))
        if len(xfails) > 1 or not reason.startswith(ROUTE_OPEN):
            raise Unclassifiable("it expects a failure that is no documented open route")
        if kind != ATTACK or not xfails[0].kwargs.get("strict", False):
            raise Unclassifiable("an open route's xfail belongs on an attack, and is strict")
        return THROUGH
    if function in ESCALATIONS or full in ESCALATIONS:
        if kind == CHECK:
            raise Unclassifiable("a check does not end a session on an escalation")
        return ESCALATED
    return {ATTACK: REFUSED, CONTROL: DONE, CHECK: HOLDS}[kind]


def classify(item: pytest.Item) -> Classification:
    """The test's classification, or Unclassifiable saying why there is none."""
    kind = kind_of(item)
    level, set_by = level_of(item)
    return Classification(
        class_of(item.path), kind, agent_of(item), level, set_by, expected_of(item, kind)
    )


def where(item: pytest.Item) -> str:
    """The test's file:line (1-based), for the message that refuses it."""
    line = item.location[1]
    return f"{item.path}:{line + 1}" if line is not None else str(item.path)


def record(items: list[pytest.Item], folder: Path) -> None:
    """Put each catalogue test's classification on it as JUnit properties; a test that
    cannot be classified is recorded as such and refused at its setup (`refuse`)."""
    for item in items:
        if folder not in item.path.parents:
            continue
        try:
            item.user_properties.extend(classify(item).properties())
        except Unclassifiable as why:
            item.user_properties.append((KIND, "unclassified"))
            item.stash[_REFUSAL] = f"{where(item)}: {item.name} cannot be classified: {why}"


def refuse(item: pytest.Item) -> None:
    """Fail a test `record` could not classify at its setup, saying where and why."""
    refusal = item.stash.get(_REFUSAL, None)
    if refusal is not None:
        pytest.fail(refusal, pytrace=False)


def keep_refused(item: pytest.Item, report: pytest.TestReport) -> None:
    """A refused test's setup stays failed: an xfail mark must not turn it into a pass."""
    refusal = item.stash.get(_REFUSAL, None)
    if refusal is not None and report.when == "setup":
        report.outcome = "failed"
        report.longrepr = refusal
        if hasattr(report, "wasxfail"):
            del report.wasxfail
